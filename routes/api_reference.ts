/**
 * The API reference at `/docs`: Swagger UI from the installed `swagger-ui-dist` package (no CDN,
 * works offline) over this server's `/openapi.json`, with "Try it out" against this server. The
 * page runs under a CSP that allows scripts and styles from this origin only: no inline script.
 */
import { html } from "hono/html";
import type { Context } from "hono";
import type { Deps } from "../composition.ts";
import { notFound } from "../core/errors.ts";
import {
  acceptsGzip,
  type AssetSource,
  AssetStore,
  IMMUTABLE,
  matchesEtag,
  REVALIDATE,
} from "./analytics/dashboard/assets.ts";
import type { AppEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { pageSecurity } from "./middleware/page_security.ts";

// The page's security headers (hono/secure-headers), on the page and its assets.
const SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    connectSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    fontSrc: ["'self'"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  nosniff: true,
  referrerPolicy: "no-referrer",
  frameOptions: "DENY",
});
const ASSET_PREFIX = "/docs/assets/";
const JS = "text/javascript; charset=UTF-8";
const CSS = "text/css; charset=UTF-8";

/**
 * The page's files, imported as text on first use (Swagger UI is 1.5 MB: a process that never
 * serves `/docs` never parses it). String-literal imports, so `deno compile` embeds them.
 */
async function loadSources(): Promise<Record<string, AssetSource>> {
  const [bundle, css, init, ours] = await Promise.all([
    import("swagger-ui-dist/swagger-ui-bundle.js", { with: { type: "text" } }),
    import("swagger-ui-dist/swagger-ui.css", { with: { type: "text" } }),
    import("./api_reference/init.js", { with: { type: "text" } }),
    import("./api_reference/docs.css", { with: { type: "text" } }),
  ]);
  return {
    "swagger-ui-bundle.js": { text: bundle.default, type: JS },
    "swagger-ui.css": { text: css.default, type: CSS },
    "init.js": { text: init.default, type: JS },
    "docs.css": { text: ours.default, type: CSS },
  };
}

function page(title: string, urls: Record<string, string>) {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width,initial-scale=1">
        <title>${title}: API reference</title>
        <link rel="icon" href="data:,">
        <link rel="preload" href="/openapi-3.0.json" as="fetch" crossorigin="anonymous">
        <link rel="stylesheet" href="${urls["swagger-ui.css"]}">
        <link rel="stylesheet" href="${urls["docs.css"]}">
        <script src="${urls["swagger-ui-bundle.js"]}" defer></script>
        <script src="${urls["init.js"]}" defer></script>
      </head>
      <body>
        <header class="site-header">
          <h1>API reference</h1>
          <p>${title}. Raw document:
            <a href="/openapi.json">/openapi.json</a>. Back to the <a href="/">front page</a>.</p>
        </header>
        <!-- Swagger UI draws its own <main> (the operations) inside this box. -->
        <div id="swagger-ui">
          <p role="status">Loading the API reference…</p>
        </div>
      </body>
    </html>
  `;
}

/** The body in the best encoding the client takes. */
function encoded(
  c: Context<AppEnv>,
  bytes: Uint8Array<ArrayBuffer>,
  gzip: Uint8Array<ArrayBuffer>,
): { body: Uint8Array<ArrayBuffer>; headers: Record<string, string> } {
  return acceptsGzip(c.req.header("accept-encoding"))
    ? { body: gzip, headers: { "content-encoding": "gzip", vary: "Accept-Encoding" } }
    : { body: bytes, headers: { vary: "Accept-Encoding" } };
}

/** `/docs` and `/docs/assets/{name}`, mounted at the root. */
export function createApiReferenceRoutes(deps: Pick<Deps, "log">, { title }: { title: string }) {
  const app = familyApp("message", deps.log);
  let store: Promise<AssetStore> | undefined;
  const assets = () => (store ??= loadSources().then((s) => new AssetStore(s)));
  let rendered: Promise<string> | undefined;

  app.use("/docs", SECURITY);
  app.use("/docs/assets/*", SECURITY);
  app.get("/docs", async (c) => {
    const a = await assets();
    rendered ??= Promise.resolve(page(title, a.urls(ASSET_PREFIX))).then(String);
    return c.html(await rendered, 200, { "cache-control": "no-cache" });
  });
  app.get("/docs/assets/:name", async (c) => {
    const asset = (await assets()).get(c.req.param("name"));
    if (!asset) throw notFound("Not found");
    const cacheControl = c.req.query("v") === asset.hash ? IMMUTABLE : REVALIDATE;
    const common = { etag: asset.etag, "cache-control": cacheControl, vary: "Accept-Encoding" };
    if (matchesEtag(c.req.header("if-none-match"), asset.etag)) return c.body(null, 304, common);
    const { body, headers } = encoded(c, asset.bytes, asset.gzip);
    return c.body(body, 200, { ...common, ...headers, "content-type": asset.type });
  });
  return app;
}
