/**
 * `notifications/cancelled` in the same POST as the request it names: the SDK sends nothing for a
 * cancelled request, and the stateless JSON response waits for every request of its POST, so the
 * response never came and the connection (with its server) was held until the client gave up.
 * A stateless server has no other request to cancel: cancellations are ignored, every request is
 * answered.
 */
import assert from "node:assert/strict";
import { mcpWorld } from "./_world.ts";

Deno.test("MCP: a batch cancelling its own request is still answered whole, not held open", async () => {
  await using w = await mcpWorld();
  const res = await fetch(`${w.url}/mcp`, {
    method: "POST",
    // Only a guard so a regression fails instead of hanging the suite.
    signal: AbortSignal.timeout(10_000),
    headers: {
      authorization: `Bearer ${w.apiKey}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-03-26",
    },
    body: JSON.stringify([
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_ai_models", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "never mind" } },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } },
    ]),
  }).catch((err: unknown) => err);
  assert.ok(res instanceof Response, `no answer: ${res}`);
  assert.equal(res.status, 200);
  const answers = await res.json() as { id: number; result?: Record<string, unknown> }[];
  assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2]);
  assert.ok(answers.every((a) => a.result !== undefined));
});
