import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { sseEvents, widgetWorld } from "../widget/_world.ts";

Deno.test("POST /app/aimodel/{id} with related_questions: true adds three follow-up questions (JSON and SSE)", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const ask = (body: unknown, accept = "application/json") =>
    w.app.request(`/app/aimodel/${a.model.id}`, {
      method: "POST",
      headers: { ...bearer(a.key), "content-type": "application/json", accept },
      body: JSON.stringify(body),
    });
  const query = "What did the council decide about the budget?";
  let res = await ask({ query, related_questions: true });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.related_questions.length, 3);
  for (const q of body.related_questions) assert.ok(q.endsWith("?"), q);
  assert.match(body.related_questions[0], /Council approves 2027 city budget/);

  res = await ask({ query, related_questions: true }, "text/event-stream");
  const events = sseEvents(await res.text());
  const done = events.find((e) => e.event === "done")!.data as { related_questions: string[] };
  assert.deepEqual(done.related_questions, body.related_questions);

  // Not asked: the body is as before.
  res = await ask({ query });
  assert.equal((await res.json()).related_questions, undefined);
  res = await ask({ query, related_questions: "yes" });
  assert.equal(res.status, 422);
});
