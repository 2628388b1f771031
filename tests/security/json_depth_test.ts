/**
 * JSON bodies are parsed on the event loop below 1 MB and in a worker above. `JSON.parse` of 1 MB of
 * `[` (500,000 levels) held the loop about 250 ms, and a deep body decoded in the worker could not be
 * copied back (stack overflow: 500). Bodies are now refused past 128 levels, before parsing.
 */
import assert from "node:assert/strict";
import { nestsAtMost } from "../../core/json_depth.ts";
import { createTestWorld } from "../_helpers.ts";
import { allowReaderOrigin, READER_ORIGIN } from "./_reader_origin.ts";

const deepEvents = (depth: number, pad = "") =>
  `{"widget_id":"wd_x","pad":"${pad}","events":[${"[".repeat(depth)}${"]".repeat(depth)}]}`;

Deno.test("nestsAtMost(): counts arrays and objects, not brackets inside strings", () => {
  assert.equal(nestsAtMost(`${"[".repeat(128)}${"]".repeat(128)}`), true);
  assert.equal(nestsAtMost(`${"[".repeat(129)}${"]".repeat(129)}`), false);
  assert.equal(nestsAtMost(`{"a":"${"[{".repeat(500)}","b":["\\"[[[["]}`, 2), true);
  assert.equal(nestsAtMost(`{"a":{"b":[1]}}`, 2), false);
});

Deno.test("POST /v1/events with 1 MB nested 500,000 deep (on the event loop): 400 naming the depth limit", async () => {
  await using w = await createTestWorld();
  await allowReaderOrigin(w);
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", origin: READER_ORIGIN },
    body: deepEvents(499_000),
  });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { message: "Malformed JSON body: nested deeper than 128 levels" });
});

Deno.test("POST /v1/events over 1 MB nested 250,000 deep (in the worker): 400 naming the depth limit, not a 500", async () => {
  await using w = await createTestWorld();
  await allowReaderOrigin(w);
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", origin: READER_ORIGIN },
    body: deepEvents(250_000, "x".repeat(600_000)),
  });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { message: "Malformed JSON body: nested deeper than 128 levels" });
});
