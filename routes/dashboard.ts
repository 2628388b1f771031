import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import type { Deps } from "../composition.ts";
import { notFound } from "../core/errors.ts";
import { acceptsGzip, AssetSource, AssetStore, IMMUTABLE, matchesEtag, REVALIDATE } from "./dashboard/assets.ts";
import { dashboardPage } from "./dashboard/page.ts";
import type { AppEnv } from "./env.ts";
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

const require = createRequire(import.meta.url);
/** Assets by URL name: our script and style, and uPlot from the installed npm package (no CDN). */
const ASSETS: Record<string, AssetSource> = {
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
const ASSET_PREFIX = "/dashboard/assets/";

/** The body in the best encoding the client takes, with the headers that go with it. */
function encoded(
  c: Context<AppEnv>,
  bytes: Uint8Array<ArrayBuffer>,
  gzip: Uint8Array<ArrayBuffer>,
): { body: Uint8Array<ArrayBuffer>; headers: Record<string, string> } {
  if (acceptsGzip(c.req.header("accept-encoding"))) {
    return { body: gzip, headers: { "content-encoding": "gzip", vary: "Accept-Encoding" } };
  }
  return { body: bytes, headers: { vary: "Accept-Encoding" } };
}

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

/**
 * Mounted at `/dashboard`: the page and its static assets (read once, kept in memory with a hash
 * and a gzip copy). The page links the assets by hashed URL, cached for a year (`immutable`), so
 * a signed-in tab's first load fetches only the page and the API.
 */
export function createDashboardRoutes(deps: Pick<Deps, "log">) {
  const app = familyApp("message", deps.log);
  const assets = new AssetStore(ASSETS);
  let page: Promise<{ bytes: Uint8Array<ArrayBuffer>; gzip: Uint8Array<ArrayBuffer> }> | undefined;
  const renderPage = async () => {
    const html = String(await dashboardPage(await assets.urls(ASSET_PREFIX)));
    const bytes = new TextEncoder().encode(html);
    const gz = gzipSync(bytes);
    return {
      bytes,
      gzip: new Uint8Array(gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength) as ArrayBuffer),
    };
  };
  app.openapi(pageRoute, async (c) => {
    page ??= renderPage();
    page.catch(() => (page = undefined));
    const { bytes, gzip } = await page;
    const { body, headers } = encoded(c, bytes, gzip);
    return c.body(body, 200, {
      ...SECURITY_HEADERS,
      ...headers,
      "content-type": "text/html; charset=UTF-8",
      "cache-control": "no-store",
    });
  });
  app.get("/assets/:name", async (c) => {
    const asset = await assets.get(c.req.param("name"));
    if (!asset) throw notFound("Not found");
    // The hashed URL never changes content; any other URL revalidates.
    const cacheControl = c.req.query("v") === asset.hash ? IMMUTABLE : REVALIDATE;
    const common = { ...SECURITY_HEADERS, etag: asset.etag, "cache-control": cacheControl, vary: "Accept-Encoding" };
    if (matchesEtag(c.req.header("if-none-match"), asset.etag)) return c.body(null, 304, common);
    const { body, headers } = encoded(c, asset.bytes, asset.gzip);
    return c.body(body, 200, { ...common, ...headers, "content-type": asset.type });
  });
  return app;
}
