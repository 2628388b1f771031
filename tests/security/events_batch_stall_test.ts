/**
 * `POST /v1/events` answers anyone (a widget batch needs no key, and its size was checked only in
 * the handler). The route schema read every element of `events` first: 1 MB of `0,` (500,000
 * events) made half a million issues and overflowed the stack listing them (500), and the 8 MB the
 * route admits held the event loop about 5 s. The batch size is now checked before the schema.
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
  const body = zeros(3_900_000);
  assert.ok(body.length <= w.deps.config.eventsMaxBodyBytes);
  await using served = await servedAndProbed(w.app);
  const { out, window } = await served.measure(() =>
    postJson(`${served.base}/v1/events`, body, { origin: READER_ORIGIN })
  );
  // Decoded in the worker, it is refused there for its 3.9 million values (large_ingest_test.ts).
  assert.equal(out.status, 413);
  assert.deepEqual(out.json, { message: "Request body too large: the limit is 300000 JSON values" });
  assertNoStall(window);
});
