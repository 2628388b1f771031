import assert from "node:assert/strict";
import { isId } from "../../core/ids.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

Deno.test("seedDemo() seeds once: a second run keeps the data and makes no new key", async () => {
  await using w = await createTestWorld();
  const first = await seedDemo(w.deps);
  assert.equal(first.created, true);
  assert.match(first.apiKey!, /^ak_/);
  assert.ok(isId("tn", first.ids.tenantId) && isId("dm", first.ids.dataModelId) && isId("am", first.ids.aiModelId));
  assert.ok(isId("wd", first.ids.widgetId) && isId("cp", first.ids.campaignId));

  const second = await seedDemo(w.deps);
  assert.equal(second.created, false);
  assert.equal(second.apiKey, undefined);
  assert.deepEqual(second.ids, first.ids);
  assert.equal((await w.deps.repos.tenants.list()).length, 1);
  assert.equal((await w.deps.apiKeys.list(first.ids.tenantId)).length, 1);
  assert.equal((await w.deps.repos.dataModels.listByTenant(first.ids.tenantId)).length, 2);
});

Deno.test("seedDemo(): two concurrent seeds make one tenant", async () => {
  await using w = await createTestWorld();
  const [a, b] = await Promise.all([seedDemo(w.deps), seedDemo(w.deps)]);
  assert.equal(a.ids.tenantId, b.ids.tenantId);
  assert.equal((await w.deps.repos.tenants.list()).length, 1);
});

Deno.test("seedDemo(): the printed key works on an authenticated route and sees the demo data", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps);
  const res = await w.app.request("/v1/ai-models", { headers: bearer(seeded.apiKey!) });
  assert.equal(res.status, 200);
  const [model] = (await res.json()).data;
  assert.equal(model.id, seeded.ids.aiModelId);
  assert.deepEqual(model.groundingDataModelIds, [seeded.ids.dataModelId, seeded.ids.secondDataModelId]);
});
