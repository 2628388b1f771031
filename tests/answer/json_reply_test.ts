import assert from "node:assert/strict";
import { parseJsonReply } from "../../core/answer/schema.ts";

Deno.test("parseJsonReply() reads a reply with or without a Markdown fence", () => {
  assert.deepEqual(parseJsonReply('{"a":1}'), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseJsonReply('```json\n{"a":1}\n```'), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseJsonReply('  ```JSON {"a":1}```  '), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseJsonReply("```\n[1]\n```"), { ok: true, value: [1] });
  assert.deepEqual(parseJsonReply('```json\n{"a":1}\n``'), { ok: false, problem: "the reply is not valid JSON" });
});

Deno.test("parseJsonReply() of a reply with 80,000 spaces after its fence returns within 1 s", () => {
  // A lazy fence pattern retried its closing part at every space: 1.6 s of the event loop.
  const reply = "```json\n{" + " ".repeat(80_000) + "}\n``` and more";
  const started = performance.now();
  assert.deepEqual(parseJsonReply(reply), { ok: false, problem: "the reply is not valid JSON" });
  const ms = performance.now() - started;
  assert.ok(ms < 1000, `${Math.round(ms)} ms`);
});
