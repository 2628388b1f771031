import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import type { Deps } from "../../composition.ts";
import { notFound } from "../../core/errors.ts";
import {
  acceptsGzip,
  AssetSource,
  AssetStore,
  gzipped,
  IMMUTABLE,
  matchesEtag,
  REVALIDATE,
} from "./dashboard/assets.ts";
import dashboardCss from "./dashboard/dashboard.css" with { type: "text" };
import dashboardJs from "./dashboard/dashboard.js" with { type: "text" };
import { dashboardPage } from "./dashboard/page.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { pageSecurity } from "../middleware/page_security.ts";

/**
 * The page's rules for the browser: only our own scripts, styles and API (no inline script, no
 * third party), no framing, no referrer, so data shown in it cannot run and the key in the tab's
 * sessionStorage leaves only in the Authorization header of our API calls.
 */
// The page's security headers (hono/secure-headers), on the page and its assets.
const SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    connectSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  nosniff: true,
  referrerPolicy: "no-referrer",
  frameOptions: "DENY",
});

/**
 * Assets by URL name: our script and style, and uPlot from the installed npm package (no CDN).
 * Imported as text, so they are part of the module graph: `deno compile` embeds them and the
 * service reads no file for them at run time.
 */
const ASSETS: Record<string, AssetSource> = {
  "dashboard.js": { text: dashboardJs, type: "text/javascript; charset=UTF-8" },
  "dashboard.css": { text: dashboardCss, type: "text/css; charset=UTF-8" },
  "uplot.min.js": { text: uplotJs, type: "text/javascript; charset=UTF-8" },
  "uplot.min.css": { text: uplotCss, type: "text/css; charset=UTF-8" },
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
  let page: { bytes: Uint8Array<ArrayBuffer>; gzip: Uint8Array<ArrayBuffer> } | undefined;
  const renderPage = async () => {
    const bytes = new TextEncoder().encode(String(await dashboardPage(assets.urls(ASSET_PREFIX))));
    return { bytes, gzip: gzipped(bytes) };
  };
  app.use("/", SECURITY);
  app.use("/assets/*", SECURITY);
  app.openapi(pageRoute, async (c) => {
    page ??= await renderPage();
    const { body, headers } = encoded(c, page.bytes, page.gzip);
    return c.body(body, 200, {
      ...headers,
      "content-type": "text/html; charset=UTF-8",
      "cache-control": "no-store",
    });
  });
  app.get("/assets/:name", (c) => {
    const asset = assets.get(c.req.param("name"));
    if (!asset) throw notFound("Not found");
    // The hashed URL never changes content; any other URL revalidates.
    const cacheControl = c.req.query("v") === asset.hash ? IMMUTABLE : REVALIDATE;
    const common = { etag: asset.etag, "cache-control": cacheControl, vary: "Accept-Encoding" };
    if (matchesEtag(c.req.header("if-none-match"), asset.etag)) return c.body(null, 304, common);
    const { body, headers } = encoded(c, asset.bytes, asset.gzip);
    return c.body(body, 200, { ...common, ...headers, "content-type": asset.type });
  });
  return app;
}
