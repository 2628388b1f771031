/** Payproxy real-time answers carry related questions when asked, as the bearer route does. */
import assert from "node:assert/strict";
import { seedAnswerDemo } from "../../fixtures/answer_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { createTestWorld } from "../_helpers.ts";
import { signedInit, startAllowancePeer } from "./_helpers.ts";

Deno.test("POST /payproxy/aimodel/{id} with related_questions: true adds three questions; without it the body is as before", async () => {
  await using peer = startAllowancePeer("allow");
  await using w = await createTestWorld({ env: { AGENT_AUTH_URL: peer.url } });
  const seeded = await seedDemo(w.deps, [seedStorefront, seedDemoArticles, seedAnswerDemo, seedPayproxySecret]);
  const secret = await w.deps.payproxy.secrets.rotate("demo");
  const models = await w.deps.repos.aiModels.listByTenant(seeded.ids.tenantId);
  const text = models.find((m) => m.output.kind === "text" && m.marketplace)!;
  const ask = async (payload: unknown) => {
    const url = `/payproxy/aimodel/${text.id}`;
    const body = JSON.stringify(payload);
    const res = await w.app.request(
      url,
      await signedInit({ ...secret, clock: w.clock, url, body, agentId: "agent-r" }),
    );
    return { status: res.status, json: await res.json() };
  };
  const query = "What did the council decide about the city budget?";
  const withRelated = await ask({ query, related_questions: true });
  assert.equal(withRelated.status, 200);
  assert.equal(withRelated.json.related_questions.length, 3);
  assert.ok(withRelated.json.related_questions.every((q: string) => q.endsWith("?")));
  const plain = await ask({ query });
  assert.deepEqual(Object.keys(plain.json).sort(), ["citations", "message"]);
  const bad = await ask({ query, related_questions: "yes" });
  assert.equal(bad.status, 422);
});
