import assert from "node:assert/strict";
import { boundPassed, SLICE_BYTES } from "../../core/json_count.ts";

const longer = async (text: string, max = 3) =>
  (await boundPassed(new TextEncoder().encode(text), { key: "events", maxElements: max })) === "elements";

Deno.test("boundPassed(): counts the top-level member's elements as the parser reads them", async () => {
  const cases: [string, boolean][] = [
    [`{"events":[1,2,3]}`, false],
    [`{"events":[1,2,3,4]}`, true],
    [`{"events":[]}`, false],
    [` { "events" : [ 1 , 2 , 3 , 4 ] }`, true],
    // Nested values, strings with commas, brackets and escaped quotes are one element each.
    [`{"events":[[1,2,3,4,5]]}`, false],
    [`{"events":["a,b","c","d",{"x":[1,2]}]}`, true],
    [`{"events":["a\\",b","c","d"]}`, false],
    [`{"events":["a\\\\",",","c","d"]}`, true],
    // Only the top-level member of that name, as an array.
    [`{"a":{"events":[1,2,3,4]},"events":[1]}`, false],
    [`{"a":"events","b":[1,2,3,4]}`, false],
    [`{"x":[1,2,3,4,5],"events":[1,2,3]}`, false],
    [`{"events":{"a":1,"b":2,"c":3,"d":4}}`, false],
    [`[{"events":[1,2,3,4]}]`, false],
    // A name written with escapes is the same name.
    [`{"ev\\u0065nts":[1,2,3,4]}`, true],
  ];
  for (const [text, expected] of cases) assert.equal(await longer(text), expected, text);
});

Deno.test("boundPassed(): stops at the first element past the bound, and gives the event loop turns on a long pass", async () => {
  const many = `{"events":[${Array(2_000_000).fill("0").join(",")}]}`;
  assert.equal(await longer(many, 500), true);
  assert.equal(await longer(many, 2_000_000), false);
  // A pass over more than one slice lets a timer run before it ends.
  let ticked = false;
  setTimeout(() => ticked = true, 0);
  assert.ok(many.length > 2 * SLICE_BYTES);
  assert.equal(await longer(many, 2_000_000), false);
  assert.equal(ticked, true);
});

Deno.test("boundPassed(): counts values at any depth from above, members and elements alike", async () => {
  const over = (text: string, maxValues: number) =>
    boundPassed(new TextEncoder().encode(text), { key: "events", maxElements: 500, maxValues });
  // The body, its events array, one event and its two members: 5 values.
  const body = `{"widget_id":"wd_x","events":[{"event_type":"query","prompt":"a, b, [c]"}]}`;
  assert.equal(await over(body, 5), null);
  assert.equal(await over(body, 4), "values");
  const fields = `{"events":[{${Array.from({ length: 1000 }, (_, i) => `"k${i}":1`).join(",")}}]}`;
  assert.equal(await over(fields, 999), "values");
  assert.equal(await over(fields, 1003), null);
  // A body nested past the decoder's depth limit is left to the decoder (400 for its depth).
  assert.equal(await over(`{"events":[${"[".repeat(200)}${"]".repeat(200)}]}`, 1000), null);
  // The element bound is told apart.
  assert.equal(await over(`{"events":[${Array(501).fill("{}").join(",")}]}`, 10_000), "elements");
});

Deno.test("boundPassed(): a body after a UTF-8 byte-order mark is counted, as the decoder reads past the mark", async () => {
  const bom = (text: string) => new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]);
  assert.equal(await boundPassed(bom(`{"events":[1,2,3,4]}`), { key: "events", maxElements: 3 }), "elements");
  assert.equal(await boundPassed(bom(` {"events":[1,2,3]}`), { key: "events", maxElements: 3 }), null);
  const fields = `{"events":[{${Array.from({ length: 1000 }, (_, i) => `"k${i}":1`).join(",")}}]}`;
  assert.equal(await boundPassed(bom(fields), { key: "events", maxElements: 500, maxValues: 999 }), "values");
});

Deno.test("boundPassed(): gives the event loop turns inside one long string of escaped quotes", async () => {
  // One string of 4 MiB of `\"` pairs, never closed: the pass ends inside it.
  const text = `{"events":["${'\\"'.repeat(2 * SLICE_BYTES)}`;
  assert.ok(text.length > 3 * SLICE_BYTES);
  let ticked = false;
  setTimeout(() => ticked = true, 0);
  assert.equal(await longer(text, 500), false);
  assert.equal(ticked, true);
  // Closed, it is one element.
  assert.equal(await longer(`${text}"]}`, 1), false);
});

/** Turns of the event loop taken while `run` runs (a timer chain counts them). */
async function turnsDuring(run: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let going = true;
  const tick = () => {
    if (!going) return;
    turns++;
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  await run();
  going = false;
  return turns;
}

Deno.test("boundPassed(): gives the event loop turns inside a string of many escaped quotes shorter than a slice, and inside a long run of backslashes", async () => {
  // 400,000 escaped quotes in 800 KB (under one slice): each costs a native search and a look back.
  const quotes = `{"events":["${'\\"'.repeat(400_000)}"]}`;
  assert.ok(quotes.length < SLICE_BYTES);
  assert.ok(await turnsDuring(() => longer(quotes, 1)) >= 3);
  // 4 MiB of backslashes before one quote, walked back to count them.
  const run = `{"events":["${"\\".repeat(4 * SLICE_BYTES)}"]}`;
  assert.ok(await turnsDuring(() => longer(run, 1)) >= 3);
});
