/**
 * A payproxy answer whose caller was gone before it was made is recorded as a question, as on every
 * answer route, and counts no impressions of its citations (shown to nobody), as on /app/aimodel.
 */
import assert from "node:assert/strict";
import type { EventInput } from "../../core/events.ts";
import { payproxyAnswerWorld } from "./_answer_world.ts";
import { signedInit } from "./_helpers.ts";

Deno.test("POST /payproxy/aimodel/{id}: an answer its caller left is one question and no citation impressions", async () => {
  await using world = await payproxyAnswerWorld();
  const { w, secret, text } = world;
  const seen: EventInput[] = [];
  const record = w.deps.events.record.bind(w.deps.events);
  w.deps.events.record = async (events) => {
    seen.push(...events);
    return await record(events);
  };
  const ask = async (signal?: AbortSignal) => {
    const url = `/payproxy/aimodel/${text.id}`;
    const body = JSON.stringify({ query: "What did the council decide about the city budget?" });
    const init = await signedInit({ ...secret, clock: w.clock, url, body, agentId: "agent-r" });
    return await w.app.request(url, { ...init, signal });
  };
  const read = await ask();
  assert.equal(read.status, 200);
  const cited = (await read.json()).citations.length;
  assert.ok(cited > 0, "the answer cites articles");
  // The same question from a caller gone before the answer was made.
  const gone = new AbortController();
  gone.abort();
  await ask(gone.signal);
  await w.deps.events.stop();
  assert.equal(seen.filter((e) => e.event_type === "query").length, 2, "both questions are recorded");
  assert.equal(seen.filter((e) => e.event_type === "result_impression").length, cited, "only the answer read");
});
