/** Payproxy real-time answers carry related questions when asked, as the bearer route does. */
import assert from "node:assert/strict";
import { payproxyAnswerWorld } from "./_answer_world.ts";
import { signedInit } from "./_helpers.ts";

Deno.test("POST /payproxy/aimodel/{id} with related_questions: true adds three questions; without it the body is as before", async () => {
  await using world = await payproxyAnswerWorld();
  const { w, secret, text } = world;
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
