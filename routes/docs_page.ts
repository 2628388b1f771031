/**
 * The API reference page at `/docs`: rendered on the server from the OpenAPI document with
 * `hono/html` (every value escaped by the template), no script and no CDN, so it works offline.
 */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

type Json = Record<string, unknown>;
type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Json }[];
  requestBody?: { content?: Record<string, { schema?: Json }> };
  responses?: Record<string, { description?: string }>;
}

/** The parts of an OpenAPI 3.1 document the page shows. */
export interface OpenApiDocument {
  info?: { title?: string; version?: string };
  /** Path items as the generator writes them; read here as {@link Operation}s. */
  paths?: object;
}

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

const STYLE = raw(`body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafbfc}
header{background:#1b1f24;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}header a{color:#9ecbff}
main{max-width:980px;margin:0 auto;padding:16px 24px}
nav a{display:inline-block;margin:2px 8px 2px 0;color:#0b5cad}
section.op{background:#fff;border:1px solid #d8dee4;border-radius:6px;margin:12px 0;padding:12px 16px}
.m{display:inline-block;min-width:56px;text-align:center;font-weight:700;border-radius:4px;padding:1px 6px;color:#fff}
.get{background:#1f7a3f}.post{background:#0b5cad}.put{background:#8a5a00}.delete{background:#b42318}
code,pre{font:13px ui-monospace,monospace}pre{background:#f3f5f7;padding:8px;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid #e5e8eb;padding:4px 6px;text-align:left;vertical-align:top}`);

/** Follows local `$ref`s (`#/components/...`), at most 20 hops. */
function deref(doc: OpenApiDocument, schema: Json | undefined): Json | undefined {
  let s = schema;
  for (let n = 0; s && typeof s.$ref === "string" && n < 20; n++) {
    s = s.$ref.split("/").slice(1).reduce<unknown>((o, k) => (o as Json | undefined)?.[k], doc) as Json | undefined;
  }
  return s;
}

function operationSection(doc: OpenApiDocument, path: string, method: string, op: Operation): Html {
  const params = op.parameters ?? [];
  const bodies = Object.entries(op.requestBody?.content ?? {});
  const responses = Object.entries(op.responses ?? {});
  return html`<section class="op"><span class="m ${method}">${method.toUpperCase()}</span> <code>${path}</code>
<p>${op.summary ?? ""}</p>${op.description ? html`<p>${op.description}</p>` : ""}
${
    params.length
      ? html`<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>About</th></tr>${
        params.map((p) =>
          html`
            <tr>
              <td><code>${p.name}</code></td>
              <td>${p.in}</td>
              <td>${p.required ? "yes" : "no"}</td>
              <td>${p.description ?? deref(doc, p.schema)?.type ?? ""}</td>
            </tr>
          `
        )
      }</table>`
      : ""
  }
${
    bodies.map(([type, c]) =>
      html`
        <p>Body <code>${type}</code></p>
        <pre>${JSON.stringify(deref(doc, c.schema) ?? {}, null, 2)}</pre>
      `
    )
  }
${
    responses.length
      ? html`<table><tr><th>Status</th><th>Meaning</th></tr>${
        responses.map(([status, r]) =>
          html`
            <tr>
              <td>${status}</td>
              <td>${r.description ?? ""}</td>
            </tr>
          `
        )
      }</table>`
      : ""
  }</section>`;
}

/**
 * The whole page for `doc`, operations grouped by their first tag.
 *
 * @example
 * ```ts
 * app.get("/docs", async (c) => c.html(await renderDocsPage(app.getOpenAPI31Document(config))));
 * ```
 */
export function renderDocsPage(doc: OpenApiDocument): Html {
  const byTag = new Map<string, { path: string; method: string; op: Operation }[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {}) as [string, Record<string, Operation>][]) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const tag = op.tags?.[0] ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ path, method, op });
    }
  }
  const title = doc.info?.title ?? "API reference";
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width,initial-scale=1">
        <title>${title}</title>
        <style>${STYLE}</style>
      </head>
      <body>
        <header>
          <h1>${title}</h1>
          <div>version ${doc.info?.version ?? ""} · <a href="/openapi.json">/openapi.json</a></div>
        </header>
        <main><nav>${[...byTag.keys()].map((tag) => html`<a href="#tag-${tag}">${tag}</a>`)}</nav>
    ${[...byTag.entries()].map(([tag, ops]) =>
      html`<h2 id="tag-${tag}">${tag}</h2>${ops.map(({ path, method, op }) => operationSection(doc, path, method, op))}`
    )}</main>
      </body>
    </html>
  `;
}
