/**
 * A self-contained API reference page: no CDN, works offline. It reads `/openapi.json` and
 * renders every operation with its parameters, body schema and responses.
 */
export const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafbfc}
header{background:#1b1f24;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{max-width:980px;margin:0 auto;padding:16px 24px}
nav a{display:inline-block;margin:2px 8px 2px 0;color:#0b5cad}
section.op{background:#fff;border:1px solid #d8dee4;border-radius:6px;margin:12px 0;padding:12px 16px}
.m{display:inline-block;min-width:56px;text-align:center;font-weight:700;border-radius:4px;padding:1px 6px;color:#fff}
.get{background:#1f7a3f}.post{background:#0b5cad}.put{background:#8a5a00}.delete{background:#b42318}
code,pre{font:13px ui-monospace,monospace}pre{background:#f3f5f7;padding:8px;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid #e5e8eb;padding:4px 6px;text-align:left;vertical-align:top}
</style></head><body>
<header><h1 id="title">API reference</h1><div id="version"></div></header>
<main><nav id="nav"></nav><div id="ops">Loading /openapi.json ...</div></main>
<script>
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;","\\"":"&quot;"}[c]));
const deref = (doc, s) => { let n = 0; while (s && s.$ref && n++ < 20) s = s.$ref.split("/").slice(1).reduce((o, k) => o?.[k], doc); return s; };
fetch("/openapi.json").then((r) => r.json()).then((doc) => {
  document.getElementById("title").textContent = doc.info?.title ?? "API reference";
  document.getElementById("version").textContent = "version " + (doc.info?.version ?? "");
  const tags = new Map();
  for (const [path, item] of Object.entries(doc.paths ?? {})) for (const [method, op] of Object.entries(item)) {
    const tag = op.tags?.[0] ?? "other"; if (!tags.has(tag)) tags.set(tag, []); tags.get(tag).push({ path, method, op });
  }
  document.getElementById("nav").innerHTML = [...tags.keys()].map((t) => '<a href="#tag-' + esc(t) + '">' + esc(t) + "</a>").join("");
  document.getElementById("ops").innerHTML = [...tags.entries()].map(([tag, ops]) => '<h2 id="tag-' + esc(tag) + '">' + esc(tag) + "</h2>" +
    ops.map(({ path, method, op }) => {
      const params = (op.parameters ?? []).map((p) => "<tr><td><code>" + esc(p.name) + "</code></td><td>" + esc(p.in) + "</td><td>" + (p.required ? "yes" : "no") + "</td><td>" + esc(p.description ?? deref(doc, p.schema)?.type ?? "") + "</td></tr>").join("");
      const body = op.requestBody?.content ? Object.entries(op.requestBody.content).map(([t, c]) => "<p>Body <code>" + esc(t) + "</code></p><pre>" + esc(JSON.stringify(deref(doc, c.schema), null, 2)) + "</pre>").join("") : "";
      const resps = Object.entries(op.responses ?? {}).map(([s, r]) => "<tr><td>" + esc(s) + "</td><td>" + esc(r.description) + "</td></tr>").join("");
      return '<section class="op"><span class="m ' + esc(method) + '">' + esc(method.toUpperCase()) + "</span> <code>" + esc(path) + "</code>" +
        "<p>" + esc(op.summary ?? "") + "</p>" + (op.description ? "<p>" + esc(op.description) + "</p>" : "") +
        (params ? "<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>About</th></tr>" + params + "</table>" : "") + body +
        (resps ? "<table><tr><th>Status</th><th>Meaning</th></tr>" + resps + "</table>" : "") + "</section>";
    }).join("")).join("");
}).catch((e) => { document.getElementById("ops").textContent = "Could not load /openapi.json: " + e; });
</script></body></html>`;
