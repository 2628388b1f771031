import assert from "node:assert/strict";
import { bearer, createTestWorld } from "../_helpers.ts";

Deno.test("API key auth: 401 without a header, 401 for a non-ak_ token", async () => {
  await using w = await createTestWorld();
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
  await using w = await createTestWorld();
  let res = await w.app.request("/v1/data-models", { headers: bearer("ak_" + "x".repeat(43)) });
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { message: "Invalid API key" });
  const { key, keyId } = await w.tenantWithKey();
  assert.equal(await w.deps.apiKeys.revoke(keyId), true);
  res = await w.app.request("/v1/data-models", { headers: bearer(key) });
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { message: "API key revoked" });
});

Deno.test("API key auth: 200 for a valid key, scoped to the key's tenant", async () => {
  await using w = await createTestWorld();
  const a = await w.tenantWithKey("A");
  const b = await w.tenantWithKey("B");
  await w.deps.repos.dataModels.create({
    id: "dm_a",
    tenantId: a.tenantId,
    name: "A news",
    sites: [],
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  let res = await w.app.request("/v1/data-models", { headers: bearer(a.key) });
  assert.equal(res.status, 200);
  assert.deepEqual((await res.json()).data.map((d: { id: string }) => d.id), ["dm_a"]);
  res = await w.app.request("/v1/data-models", { headers: bearer(b.key) });
  assert.deepEqual((await res.json()).data, []);
});

Deno.test("API keys are stored only as a hash and listed without it", async () => {
  await using w = await createTestWorld();
  const { tenantId, key } = await w.tenantWithKey();
  assert.match(key, /^ak_[A-Za-z0-9_-]{43}$/);
  for await (const e of w.deps.kv.list({ prefix: [] })) {
    assert.ok(!JSON.stringify(e.value).includes(key), `key stored in clear at ${JSON.stringify(e.key)}`);
  }
  const listed = await w.deps.apiKeys.list(tenantId);
  assert.equal(listed.length, 1);
  assert.ok(!("hash" in listed[0]!));
  assert.equal(listed[0]!.preview, key.slice(0, 7));
});

Deno.test("API key auth: the key never reaches a log line", async () => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey();
  await w.app.request("/v1/data-models?api_key=" + key, { headers: bearer(key) });
  assert.ok(w.log.lines.length > 0);
  assert.ok(!JSON.stringify(w.log.lines).includes(key));
});
