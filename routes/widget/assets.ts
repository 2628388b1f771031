/**
 * The Ask AI widget's scripts (built from widget/src by `deno task widget:build`, committed as
 * widget/dist): `GET /widget/v1/loader.js`, the one URL publishers paste, with a short cache life,
 * and `GET /widget/v1/assets/widget.<hash>.js`, immutable. Both are in memory with a gzip copy and
 * imported as text, so `deno compile` embeds them. No rate limit: they are constant bytes from
 * memory, cheaper to send than a limiter's KV write, and a CDN may cache them.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createHash } from "node:crypto";
import type { Context } from "hono";
import type { Deps } from "../../composition.ts";
import { notFound } from "../../core/errors.ts";
import { acceptsGzip, AssetStore, IMMUTABLE, type LoadedAsset, matchesEtag } from "../analytics/dashboard/assets.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import loaderJs from "../../widget/dist/loader.js" with { type: "text" };
import widgetJs from "../../widget/dist/widget.js" with { type: "text" };

const JS = "text/javascript; charset=UTF-8";
/** The loader's URL never changes, so browsers keep it briefly and then revalidate (ETag). */
export const LOADER_CACHE = "public, max-age=300, stale-while-revalidate=3600";
/** Where the loader finds the widget script and its integrity (their placeholders in widget/src/loader.ts). */
const WIDGET_PATH_PLACEHOLDER = "__ASK_AI_WIDGET_PATH__";
const WIDGET_INTEGRITY_PLACEHOLDER = "__ASK_AI_WIDGET_INTEGRITY__";

/** The Subresource Integrity value (`sha384-...`) of `bytes`, as a browser checks a script's body. */
function subresourceIntegrity(bytes: Uint8Array): string {
  return `sha384-${createHash("sha384").update(bytes).digest("base64")}`;
}

/**
 * The widget script, then the loader pointing at the widget script's hashed URL with the integrity
 * of the very bytes served there (gzip is only their transfer encoding: browsers check the body).
 */
export function widgetAssets(): { loader: LoadedAsset; widget: LoadedAsset; widgetPath: string } {
  const widget = new AssetStore({ w: { text: widgetJs, type: JS } }).get("w")!;
  const widgetPath = `/widget/v1/assets/widget.${widget.hash}.js`;
  const integrity = subresourceIntegrity(widget.bytes);
  for (const slot of [WIDGET_PATH_PLACEHOLDER, WIDGET_INTEGRITY_PLACEHOLDER]) {
    if (!loaderJs.includes(slot)) throw new Error(`widget/dist/loader.js has no ${slot} slot`);
  }
  const text = loaderJs.replace(WIDGET_PATH_PLACEHOLDER, widgetPath).replace(WIDGET_INTEGRITY_PLACEHOLDER, integrity);
  const loader = new AssetStore({ l: { text, type: JS } }).get("l")!;
  return { loader, widget, widgetPath };
}

const loaderRoute = createRoute({
  method: "get",
  path: "/loader.js",
  tags: ["widget"],
  summary: "Ask AI widget embed script",
  description: 'Paste `<script src="{BASE_URL}/widget/v1/loader.js" data-widget-id="wd_..." async></script>` ' +
    "into a page (docs/widget.md). Cached 5 minutes, then revalidated with its ETag; gzip when accepted.",
  responses: {
    200: { description: "The loader", content: { "text/javascript": { schema: z.string() } } },
    304: { description: "Not modified (If-None-Match)" },
  },
});

const assetRoute = createRoute({
  method: "get",
  path: "/assets/{name}",
  tags: ["widget"],
  summary: "Ask AI widget script by content hash",
  description: "`widget.<hash>.js`, named by the loader. Immutable: cached for a year.",
  request: { params: z.object({ name: z.string().openapi({ example: "widget.0123456789abcdef.js" }) }) },
  responses: {
    200: { description: "The widget script", content: { "text/javascript": { schema: z.string() } } },
    304: { description: "Not modified (If-None-Match)" },
    404: { description: "Not one of the current build's files" },
  },
});

function send(c: Context<AppEnv>, asset: LoadedAsset, cacheControl: string): Response {
  const common = {
    etag: asset.etag,
    "cache-control": cacheControl,
    vary: "Accept-Encoding",
    "x-content-type-options": "nosniff",
    // Loaded by publisher pages on other origins: the widget script in CORS mode, so that the
    // browser may check its integrity (constant public bytes, never credentials).
    "cross-origin-resource-policy": "cross-origin",
    "access-control-allow-origin": "*",
  };
  if (matchesEtag(c.req.header("if-none-match"), asset.etag)) return c.body(null, 304, common);
  const gzip = acceptsGzip(c.req.header("accept-encoding"));
  return c.body(gzip ? asset.gzip : asset.bytes, 200, {
    ...common,
    ...(gzip ? { "content-encoding": "gzip" } : {}),
    "content-type": asset.type,
  });
}

/** Mounted at `/widget/v1` before the widget API routes. */
export function createWidgetAssetRoutes(deps: Pick<Deps, "log">) {
  const app = familyApp("message", deps.log);
  let built: ReturnType<typeof widgetAssets> | undefined;
  const assets = () => built ??= widgetAssets();
  app.openapi(loaderRoute, (c) => send(c, assets().loader, LOADER_CACHE) as never);
  app.openapi(assetRoute, (c) => {
    const { widget, widgetPath } = assets();
    if (`/widget/v1/assets/${c.req.param("name")}` !== widgetPath) throw notFound("Not found");
    return send(c, widget, IMMUTABLE) as never;
  });
  return app;
}
