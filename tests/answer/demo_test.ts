import assert from "node:assert/strict";
import { buildPayload, extract } from "../../core/answer/extractive.ts";
import { compileSchema } from "../../core/answer/schema.ts";
import { DEMO_BRIEFING_SCHEMA, seedAnswerDemo } from "../../fixtures/answer_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { createTestWorld } from "../_helpers.ts";
import { fixtureArticles, NOW } from "./_articles.ts";

Deno.test("seedAnswerDemo() adds one structured demo model the extractive provider can fill", async () => {
  await using w = await createTestWorld();
  const { ids } = await seedDemo(w.deps, [seedAnswerDemo]);
  await seedAnswerDemo(w.deps, ids); // a resumed seed
  const models = (await w.deps.repos.aiModels.listByTenant(ids.tenantId)).filter((m) => m.output.kind === "structured");
  assert.equal(models.length, 1);
  assert.deepEqual(models[0]!.groundingDataModelIds, [ids.dataModelId, ids.secondDataModelId]);
  const validator = compileSchema(DEMO_BRIEFING_SCHEMA);
  for (const q of ["bus fares", "football"]) {
    const payload = buildPayload(extract(q, fixtureArticles("a", "b"), NOW), DEMO_BRIEFING_SCHEMA);
    assert.deepEqual(validator.validate(payload), [], q);
  }
});
