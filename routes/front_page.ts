/**
 * The front page at `/`: what this server is, where its documents and pages are, and whether its
 * stores answer. HTML for browsers, JSON for `Accept: application/json`. It holds no secret and no
 * tenant data, so anyone may read it; the health it shows is the same as `/readyz`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { html, raw } from "hono/html";
import type { Deps } from "../composition.ts";
import { familyApp } from "./family.ts";
import { API_VERSION } from "./version.ts";
import { styleHashSource } from "./inline_style.ts";
import { pageSecurity } from "./middleware/page_security.ts";

/** One place the page points to. */
interface FrontLink {
  rel: string;
  title: string;
  href: string;
  about: string;
}

/** Whether each store answered, as `/readyz` reports it. */
export type StoreHealth = Record<"kv" | "duckdb", boolean>;

const STYLE =
  `:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fafbfc;--card:#fff;--line:#d8dee4;--link:#0b5cad;--muted:#57606a}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--card:#161b22;--line:#30363d;--link:#79c0ff;--muted:#9da7b3}}
*{box-sizing:border-box}body{font:16px/1.55 system-ui,sans-serif;margin:0;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:880px;margin:0 auto;padding:16px 20px}
header h1{font-size:clamp(1.25rem,5vw,1.6rem);margin:24px 0 4px}header p{margin:0;color:var(--muted)}
h2{font-size:1.15rem;margin:28px 0 8px}
ul.links{list-style:none;padding:0;margin:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:12px}
ul.links li{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px}
ul.links a{color:var(--link);font-weight:600;text-decoration:none}ul.links a:hover,ul.links a:focus{text-decoration:underline}
ul.links p{margin:4px 0 0;color:var(--muted);font-size:.92rem}
dl.health{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dt{font-weight:600}.ok{color:#1a7f37}.down{color:#cf222e}
@media (prefers-color-scheme:dark){.ok{color:#3fb950}.down{color:#ff7b72}}
code{font:14px ui-monospace,monospace;overflow-wrap:anywhere}footer{color:var(--muted);font-size:.9rem}`;

const route = createRoute({
  method: "get",
  path: "/",
  tags: ["system"],
  summary: "Front page: what this server is, its documents and pages, and the health of its stores",
  description: "HTML for browsers; JSON when the request's `Accept` prefers `application/json`. No secret and " +
    "no tenant data appear on it.",
  responses: {
    200: {
      description: "The front page",
      content: {
        "text/html": { schema: z.string() },
        "application/json": {
          schema: z.object({
            name: z.string(),
            version: z.string(),
            status: z.enum(["ok", "unavailable"]),
            checks: z.object({ kv: z.boolean(), duckdb: z.boolean() }),
            links: z.array(z.object({ rel: z.string(), title: z.string(), href: z.string(), about: z.string() })),
          }),
          example: {
            name: "Article recommendation, real-time search, analytics and agent-payment API",
            version: API_VERSION,
            status: "ok",
            checks: { kv: true, duckdb: true },
            links: [{
              rel: "api-reference",
              title: "API reference",
              href: "http://127.0.0.1:8000/docs",
              about: "Every route, with a console",
            }],
          },
        },
      },
    },
  },
});

/** The places the page links, built from the configured addresses. */
export function frontLinks(
  config: Pick<Deps["config"], "baseUrl" | "agentAuthUrl"> & { demoSiteUrl?: string | null },
): FrontLink[] {
  const base = config.baseUrl.replace(/\/+$/, "");
  const store = config.agentAuthUrl.replace(/\/+$/, "");
  const links: FrontLink[] = [
    {
      rel: "api-reference",
      title: "API reference",
      href: `${base}/docs`,
      about: "Every route with its fields, errors and examples",
    },
    {
      rel: "openapi",
      title: "OpenAPI document",
      href: `${base}/openapi.json`,
      about: "The machine-readable contract (OpenAPI 3.1)",
    },
    {
      rel: "dashboard",
      title: "Publisher dashboard",
      href: `${base}/dashboard`,
      about: "Ask AI analytics; sign in with an API key",
    },
    {
      rel: "services",
      title: "Agent storefront",
      href: `${store}/services`,
      about: "Plans and prices for AI agents",
    },
    { rel: "llms-txt", title: "llms.txt", href: `${store}/llms.txt`, about: "What an agent needs to start, in text" },
    {
      rel: "mcp-server-card",
      title: "MCP server card",
      href: `${base}/.well-known/mcp.json`,
      about: "The MCP server at /mcp and its tools",
    },
  ];
  if (config.demoSiteUrl) {
    links.splice(3, 0, {
      rel: "widget-demo",
      title: "Ask AI widget demo",
      href: config.demoSiteUrl,
      about: "A publisher page with the widget embedded",
    });
  }
  return links;
}

/** Whether the request prefers JSON over HTML (an `Accept` naming JSON before or without HTML). */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const json = accept.search(/application\/(?:[\w.+-]+\+)?json/);
  if (json < 0) return false;
  const htmlAt = accept.indexOf("text/html");
  return htmlAt < 0 || json < htmlAt;
}

function renderPage(title: string, links: FrontLink[], health: StoreHealth) {
  const row = (name: string, ok: boolean) =>
    html`
      <dt>${name}</dt>
      <dd class="${ok ? "ok" : "down"}">${ok ? "answers" : "does not answer"}</dd>
    `;
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width,initial-scale=1">
        <title>${title}</title>
        <link rel="icon" href="data:,">
        <style>${raw(STYLE)}</style>
      </head>
      <body>
        <header>
          <h1>${title}</h1>
          <p>Recommends publishers' articles to AI agents, answers questions from them in real time, sells both to agents
    through a payment proxy and a storefront, and reports the Ask AI widget's analytics.</p>
        </header>
        <main>
          <section aria-labelledby="where">
            <h2 id="where">Where to go</h2>
            <ul class="links">${links.map((l) =>
              html`<li><a href="${l.href}" rel="${l.rel}">${l.title}</a><p>${l.about}</p></li>`
            )}</ul>
          </section>
          <section aria-labelledby="health">
            <h2 id="health">Health</h2>
            <dl class="health">${row("Deno KV", health.kv)}${row("DuckDB", health.duckdb)}</dl>
          </section>
        </main>
        <footer>
          <p>API version <code>${API_VERSION}</code>. Machine-readable: send <code>Accept: application/json</code>.</p>
        </footer>
      </body>
    </html>
  `;
}

/**
 * `GET /` (mounted at the root). Store health is read at most once a second, so a crawler or a
 * monitor hammering the page costs no more than one probe of each store per second.
 */
export function createFrontPageRoutes(
  deps: Pick<Deps, "log" | "clock"> & { config: Parameters<typeof frontLinks>[0] },
  { probe, title }: { probe: () => Promise<StoreHealth>; title: string },
) {
  const app = familyApp("message", deps.log);
  const links = frontLinks(deps.config);
  // The page's own inline style is allowed by its hash: no other inline style, no script. (The
  // JSON answer of the same URL gets these headers too: they ask nothing of a JSON reader.)
  app.use(
    "/",
    pageSecurity({
      csp: {
        defaultSrc: ["'none'"],
        styleSrc: [styleHashSource(STYLE)],
        imgSrc: ["'self'", "data:"],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
      },
      nosniff: true,
      referrerPolicy: "no-referrer",
    }),
  );
  let cached: { at: number; health: Promise<StoreHealth> } | null = null;
  const health = () => {
    const now = deps.clock.now().getTime();
    if (!cached || now - cached.at >= 1000) cached = { at: now, health: probe() };
    return cached.health;
  };
  app.openapi(route, async (c) => {
    const checks = await health();
    const ok = checks.kv && checks.duckdb;
    c.header("Vary", "Accept");
    c.header("Cache-Control", "no-cache");
    if (prefersJson(c.req.header("accept"))) {
      return c.json({
        name: title,
        version: API_VERSION,
        status: ok ? "ok" as const : "unavailable" as const,
        checks,
        links,
      }, 200);
    }
    return c.html(renderPage(title, links, checks), 200) as never;
  });
  return app;
}
