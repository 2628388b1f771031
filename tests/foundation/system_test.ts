import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";
import { kvThrough } from "../_kv_proxy.ts";
import { sharedStoreProbe } from "../../routes/system.ts";

Deno.test("GET /healthz answers ok with an X-Request-Id", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/healthz");
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: "ok" });
  assert.match(res.headers.get("x-request-id")!, /^[0-9a-f-]{36}$/);
});

Deno.test("GET /readyz checks KV and DuckDB", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/readyz");
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: "ok", checks: { kv: true, duckdb: true } });
});

Deno.test("GET /readyz answers 503 when a store is closed", async () => {
  await using w = await createTestWorld();
  w.deps.duckdb.close();
  const res = await w.app.request("/readyz");
  assert.equal(res.status, 503);
  assert.equal((await res.json()).checks.duckdb, false);
});

Deno.test("GET /readyz: concurrent probes share one KV read and one DuckDB connection", async () => {
  // /readyz is unthrottled (a balancer must never be refused): 5,000 probes at once from one client
  // opened 5,000 DuckDB connections (+200 MB) and held an analytics query up for most of a second.
  let kvReads = 0;
  await using w = await createTestWorld({
    wrapKv: (kv) => kvThrough(kv, { get: (key, real) => (key[0] === "meta" && kvReads++, real()) }),
  });
  kvReads = 0;
  const db = w.deps.duckdb;
  const connect = db.connect.bind(db);
  let connections = 0;
  db.connect = () => (connections++, connect());
  const statuses = await Promise.all(Array.from({ length: 200 }, async () => {
    const res = await w.app.request("/readyz");
    await res.body?.cancel();
    return res.status;
  }));
  assert.deepEqual(new Set(statuses), new Set([200]));
  assert.equal(connections, 1);
  assert.equal(kvReads, 1);
  // A probe after the shared one has finished asks the stores again: a balancer sees a store go down.
  w.deps.duckdb.close();
  const res = await w.app.request("/readyz");
  assert.equal(res.status, 503);
  assert.equal((await res.json()).checks.duckdb, false);
});

Deno.test("GET /openapi.json documents the routes from their zod schemas", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/openapi.json");
  assert.equal(res.status, 200);
  const doc = await res.json();
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.paths["/healthz"].get);
  assert.ok(doc.paths["/v1/data-models"].get);
  assert.equal(doc.components.securitySchemes.bearerAuth.scheme, "bearer");
});

Deno.test("requests: incoming X-Request-Id is kept; one JSON log line per request", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/healthz", { headers: { "x-request-id": "trace-abc-123" } });
  assert.equal(res.headers.get("x-request-id"), "trace-abc-123");
  const lines = w.log.lines.filter((l) => l.msg === "request");
  assert.equal(lines.length, 1);
  const { ts: _ts, duration_ms, ...rest } = lines[0]!;
  assert.equal(typeof duration_ms, "number");
  assert.deepEqual(rest, {
    level: "info",
    msg: "request",
    method: "GET",
    path: "/healthz",
    status: 200,
    tenant: null,
    caller: null,
    request_id: "trace-abc-123",
  });
  // A hostile id is replaced, not echoed.
  const bad = await w.app.request("/healthz", { headers: { "x-request-id": "<script>" } });
  assert.notEqual(bad.headers.get("x-request-id"), "<script>");
  // A request an API key authenticates names its tenant in its line.
  const { tenantId, key } = await w.tenantWithKey();
  const listed = await w.app.request("/v1/data-models", { headers: { authorization: `Bearer ${key}` } });
  assert.equal(listed.status, 200);
  await listed.body?.cancel();
  const line = w.log.lines.findLast((l) => l.msg === "request")!;
  assert.deepEqual([line.path, line.status, line.tenant, line.caller], ["/v1/data-models", 200, tenantId, null]);
});

Deno.test("unknown routes answer 404 {message}", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/nope");
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { message: "Not found" });
  assert.ok(res.headers.get("x-request-id"));
});

Deno.test("GET /openapi.json documents every route family, storefront and discovery included", async () => {
  await using w = await createTestWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  for (
    const path of [
      "/app/v2/search",
      "/app/aimodel/{ai_model_id}",
      "/payproxy/v2/search",
      "/payproxy/aimodel/{aimodel_external_id}",
      "/v1/analytics/ask-ai",
      "/agent/identity",
      "/oauth2/token",
      "/plans/{planId}/purchase",
      "/extend",
      "/agent/entitlements",
      "/v2/search",
      "/internal/allowance",
      "/.well-known/oauth-authorization-server",
    ]
  ) assert.ok(doc.paths[path], `missing ${path}`);
  assert.equal(doc.components.securitySchemes.agentToken.scheme, "bearer");
});

Deno.test("sharedStoreProbe(): a store that does not answer within the deadline is down, and the next probe asks again", async () => {
  await using w = await createTestWorld();
  // DuckDB opens on first use (seconds on a busy machine): opened first, so only the stuck KV is late.
  assert.equal(await w.deps.duckdb.ping(), true);
  const kvGet = w.deps.kv.get.bind(w.deps.kv);
  let stuck = true;
  w.deps.kv.get =
    ((key: Deno.KvKey, opts?: { consistency?: Deno.KvConsistencyLevel }) =>
      key[0] === "meta" && stuck ? new Promise(() => {}) : kvGet(key, opts)) as typeof w.deps.kv.get;
  const probe = sharedStoreProbe(w.deps, { timeoutMs: 300 });
  assert.deepEqual(await probe(), { kv: false, duckdb: true });
  stuck = false;
  assert.deepEqual(await probe(), { kv: true, duckdb: true }, "a recovered store is seen at once");
});
