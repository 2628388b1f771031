/**
 * `POST /v1/events` answers anyone (a widget batch needs no key, and its size was checked only in
 * the handler). The route schema read every element of `events` first: 1 MB of `0,` (500,000
 * events) made half a million issues and overflowed the stack listing them (500), and the 8 MB the
 * route admits held the event loop about 5 s. The batch size is now checked before the schema, and
 * a batch of more than 500 events is refused from its bytes before it is decoded.
 */
import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";
import { allowReaderOrigin, READER_ORIGIN } from "./_reader_origin.ts";
import { assertNoStall, postJson, servedAndProbed } from "./_healthz.ts";

const zeros = (n: number) => `{"widget_id":"wd_x","events":[${"0,".repeat(n - 1)}0]}`;

Deno.test("POST /v1/events with 500,000 events of 0 and no key: 422 naming the batch limit, not a 500", async () => {
  await using w = await createTestWorld();
  await allowReaderOrigin(w);
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", origin: READER_ORIGIN },
    body: zeros(500_000),
  });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "events: must contain 1 to 500 events" });
});

Deno.test("POST /v1/events with 8 MB of events of 0: /healthz answers within 1 s throughout", async () => {
  await using w = await createTestWorld();
  await allowReaderOrigin(w);
  const { key } = await w.tenantWithKey("Publisher");
  await using served = await servedAndProbed(w.app);
  const send = (body: string, sender: Record<string, string> = { origin: READER_ORIGIN }) => {
    assert.ok(body.length <= w.deps.config.eventsMaxBodyBytes);
    return postJson(`${served.base}/v1/events`, body, sender);
  };
  // 3.9 million events: refused at the 501st, seen in the bytes, undecoded.
  const many = await served.measure(() => send(zeros(3_900_000)));
  assert.equal(many.out.status, 422);
  assert.deepEqual(many.out.json, { message: "events: must contain 1 to 500 events" });
  assertNoStall(many.window, "3.9 million events");
  // One event of 3.9 million zeros: a widget batch is refused from its bytes for its values
  // (events_decode_memory_test.ts); a server's is decoded in the worker and refused there
  // (large_ingest_test.ts).
  const deepBody = `{"widget_id":"wd_x","events":[[${"0,".repeat(3_899_999)}0]]}`;
  // The next minute: the batch above spent the address's events (it is charged for its size too).
  w.clock.advance(60_000);
  const widget = await served.measure(() => send(deepBody));
  assert.equal(widget.out.status, 413);
  assert.deepEqual(widget.out.json, {
    message: "Request body too large: a widget batch holds at most 32000 JSON values",
  });
  assertNoStall(widget.window, "a widget batch of one deep event");
  const deep = await served.measure(() => send(deepBody, { authorization: `Bearer ${key}` }));
  assert.equal(deep.out.status, 413);
  assert.deepEqual(deep.out.json, { message: "Request body too large: the limit is 300000 JSON values" });
  assertNoStall(deep.window, "a server batch of one deep event");
});
