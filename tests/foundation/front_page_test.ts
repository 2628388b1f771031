import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";
import { prefersJson } from "../../routes/front_page.ts";

Deno.test("GET / in a browser is an HTML front page with a main landmark, every link and the stores' health", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/html/);
  const page = await res.text();
  assert.match(page, /<main>/);
  assert.match(page, /<html lang="en">/);
  for (const path of ["/docs", "/openapi.json", "/dashboard", "/services", "/llms.txt", "/.well-known/mcp.json"]) {
    assert.ok(page.includes(`${w.deps.config.baseUrl}${path}`) || page.includes(path), `links ${path}`);
  }
  assert.match(page, /Deno KV<\/dt>\s*<dd class="ok">\s*answers/);
  assert.match(page, /DuckDB<\/dt>\s*<dd class="ok">\s*answers/);
});

Deno.test("GET / allows exactly its own inline style by hash and no script", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/");
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|script-src/);
  const page = await res.text();
  const style = page.match(/<style>([\s\S]*?)<\/style>/)![1];
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(style));
  const hash = btoa(String.fromCharCode(...new Uint8Array(digest)));
  assert.ok(csp.includes(`'sha256-${hash}'`), "the CSP names the style's hash");
  assert.doesNotMatch(page, /<script/);
});

Deno.test("GET / with Accept: application/json answers the same links and health as JSON", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/", { headers: { accept: "application/json" } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("vary"), "Accept");
  const body = await res.json();
  assert.equal(body.status, "ok");
  assert.deepEqual(body.checks, { kv: true, duckdb: true });
  assert.ok(
    body.links.some((l: { rel: string; href: string }) => l.rel === "api-reference" && l.href.endsWith("/docs")),
  );
});

Deno.test("GET / says a store does not answer, and holds no secret", async () => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey();
  w.deps.duckdb.close();
  const res = await w.app.request("/", { headers: { accept: "application/json" } });
  const body = await res.json();
  assert.equal(body.status, "unavailable");
  assert.equal(body.checks.duckdb, false);
  const page = await (await w.app.request("/")).text();
  assert.match(page, /DuckDB<\/dt>\s*<dd class="down">\s*does not answer/);
  assert.ok(!page.includes(key), "no API key on the page");
  assert.doesNotMatch(page, /ak_[A-Za-z0-9]/);
});

Deno.test("prefersJson() follows the order of the Accept header", () => {
  assert.equal(prefersJson(undefined), false);
  assert.equal(prefersJson("*/*"), false);
  assert.equal(prefersJson("application/json"), true);
  assert.equal(prefersJson("application/problem+json"), true);
  assert.equal(prefersJson("text/html,application/json"), false);
  assert.equal(prefersJson("application/json, text/html"), true);
});
