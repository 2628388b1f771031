/**
 * The API key middleware on a tiny Hono app (real KV, the app's request id, access log and error
 * handler): nothing else of the service is built or imported.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { ApiKeyService } from "../../core/auth/mod.ts";
import { FixedClock } from "../../core/clock.ts";
import { memoryLogger } from "../../core/log.ts";
import { createRepos } from "../../core/store/repos.ts";
import type { AppEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { apiKeyAuth } from "../../routes/middleware/api_key.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";
import { bearer } from "../_basics.ts";

/** `/v1/data-models` behind the key check, listing the data models of the tenant the key names. */
async function tinyApp() {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  const log = memoryLogger(() => clock.now());
  const apiKeys = new ApiKeyService(kv, clock);
  const repos = createRepos(kv);
  const app = new Hono<AppEnv>();
  app.onError(createErrorHandler(log, "message"));
  app.use("/v1/*", apiKeyAuth(apiKeys));
  app.get("/v1/data-models", async (c) => {
    const models = await repos.dataModels.listByTenant(c.get("tenantId")!);
    return c.json({ data: models.map((m) => ({ id: m.id })), tenant_id: c.get("tenantId") });
  });
  app.fetch = withRequestEnvelope(app.fetch, log);
  return {
    app,
    kv,
    clock,
    log,
    apiKeys,
    repos,
    async tenantWithKey(tenantId: string) {
      const { key, record } = await apiKeys.create(tenantId);
      return { tenantId, key, keyId: record.id };
    },
    [Symbol.dispose]: () => kv.close(),
  };
}

Deno.test("API key auth: 401 without a header, 401 for a non-ak_ token", async () => {
  using w = await tinyApp();
  let res = await w.app.request("/v1/data-models");
  assert.equal(res.status, 401);
  assert.match((await res.json()).message, /Missing API key/);
  res = await w.app.request("/v1/data-models", { headers: bearer("sk_live_123") });
  assert.equal(res.status, 401);
  assert.match((await res.json()).message, /Malformed API key/);
  res = await w.app.request("/v1/data-models", { headers: { authorization: "Basic abc" } });
  assert.equal(res.status, 401);
});

Deno.test("API key auth: 403 for an unknown key and for a revoked key", async () => {
  using w = await tinyApp();
  let res = await w.app.request("/v1/data-models", { headers: bearer("ak_" + "x".repeat(43)) });
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { message: "Invalid API key" });
  const { key, keyId } = await w.tenantWithKey("tn_acme");
  assert.equal(await w.apiKeys.revoke(keyId), true);
  res = await w.app.request("/v1/data-models", { headers: bearer(key) });
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { message: "API key revoked" });
});

Deno.test("API key auth: 200 for a valid key, scoped to the key's tenant", async () => {
  using w = await tinyApp();
  const a = await w.tenantWithKey("tn_a");
  const b = await w.tenantWithKey("tn_b");
  await w.repos.dataModels.create({
    id: "dm_a",
    tenantId: a.tenantId,
    name: "A news",
    sites: [],
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  let res = await w.app.request("/v1/data-models", { headers: bearer(a.key) });
  assert.equal(res.status, 200);
  let body = await res.json();
  assert.equal(body.tenant_id, "tn_a");
  assert.deepEqual(body.data.map((d: { id: string }) => d.id), ["dm_a"]);
  res = await w.app.request("/v1/data-models", { headers: bearer(b.key) });
  body = await res.json();
  assert.equal(body.tenant_id, "tn_b");
  assert.deepEqual(body.data, []);
});

Deno.test("API keys are stored only as a hash and listed without it", async () => {
  using w = await tinyApp();
  const { tenantId, key } = await w.tenantWithKey("tn_acme");
  assert.match(key, /^ak_[A-Za-z0-9_-]{43}$/);
  for await (const e of w.kv.list({ prefix: [] })) {
    assert.ok(!JSON.stringify(e.value).includes(key), `key stored in clear at ${JSON.stringify(e.key)}`);
  }
  const listed = await w.apiKeys.list(tenantId);
  assert.equal(listed.length, 1);
  assert.ok(!("hash" in listed[0]!));
  assert.equal(listed[0]!.preview, key.slice(0, 7));
});

Deno.test("API key auth: the key never reaches a log line", async () => {
  using w = await tinyApp();
  const { key } = await w.tenantWithKey("tn_acme");
  await w.app.request("/v1/data-models?api_key=" + key, { headers: bearer(key) });
  assert.ok(w.log.lines.length > 0);
  assert.ok(!JSON.stringify(w.log.lines).includes(key));
});
