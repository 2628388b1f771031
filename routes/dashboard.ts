import { createRoute, z } from "@hono/zod-openapi";
import { createRequire } from "node:module";
import type { Deps } from "../composition.ts";
import { notFound } from "../core/errors.ts";
import { dashboardPage } from "./dashboard/page.ts";
import { familyApp } from "./family.ts";

/**
 * The page's rules for the browser: only our own scripts, styles and API (no inline script, no
 * third party), no framing, no referrer, so data shown in it cannot run and the key in the tab's
 * sessionStorage leaves only in the Authorization header of our API calls.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");
const SECURITY_HEADERS = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

type Asset = { file: () => string; type: string };
const require = createRequire(import.meta.url);
/** Assets by URL name: our script and style, and uPlot from the installed npm package (no CDN). */
const ASSETS: Record<string, Asset> = {
  "dashboard.js": {
    file: () => new URL("./dashboard/dashboard.js", import.meta.url).pathname,
    type: "text/javascript; charset=UTF-8",
  },
  "dashboard.css": {
    file: () => new URL("./dashboard/dashboard.css", import.meta.url).pathname,
    type: "text/css; charset=UTF-8",
  },
  "uplot.min.js": {
    file: () => require.resolve("uplot/dist/uPlot.iife.min.js"),
    type: "text/javascript; charset=UTF-8",
  },
  "uplot.min.css": { file: () => require.resolve("uplot/dist/uPlot.min.css"), type: "text/css; charset=UTF-8" },
};

const pageRoute = createRoute({
  method: "get",
  path: "/",
  tags: ["analytics"],
  summary: "Publisher analytics dashboard (HTML)",
  description: "Sign in with an API key (kept in the tab's sessionStorage, never in a URL). The view is in the " +
    "query string: start_date, end_date, timezone, compare, widget_id, placement_id, deployment_type. Charts use " +
    "uPlot served from this service (no CDN).",
  request: {
    query: z.object({
      start_date: z.string().optional(),
      end_date: z.string().optional(),
      timezone: z.string().optional(),
      compare: z.string().optional(),
      widget_id: z.string().optional(),
      placement_id: z.string().optional(),
      deployment_type: z.string().optional(),
    }),
  },
  responses: { 200: { description: "The page", content: { "text/html": { schema: z.string() } } } },
});

/** Mounted at `/dashboard`: the page and its static assets (read once, kept in memory). */
export function createDashboardRoutes(deps: Pick<Deps, "log">) {
  const app = familyApp("message", deps.log);
  const loaded = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();
  app.openapi(pageRoute, async (c) => {
    const body = String(await dashboardPage());
    return c.html(body, 200, { ...SECURITY_HEADERS, "cache-control": "no-store" });
  });
  app.get("/assets/:name", async (c) => {
    const name = c.req.param("name");
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!asset) throw notFound("Not found");
    let bytes = loaded.get(name);
    if (!bytes) {
      bytes = Deno.readFile(asset.file());
      loaded.set(name, bytes);
    }
    return c.body(await bytes, 200, {
      ...SECURITY_HEADERS,
      "content-type": asset.type,
      "cache-control": "public, max-age=3600",
    });
  });
  return app;
}
