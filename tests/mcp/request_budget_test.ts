/**
 * An agent's POST /mcp counted once on its per-credential budget whatever its batch held: one free
 * anonymous token could send 600 batches of 100 `tools/list` a minute (about 1 MB answered each)
 * against a limit of 600 requests. Every JSON-RPC request of an agent's batch now counts.
 */
import assert from "node:assert/strict";
import { mcpWorld } from "./_world.ts";

const listTools = (n: number) =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/list" })));

Deno.test("POST /mcp: every JSON-RPC request of an agent's batch counts on its per-credential budget", async () => {
  await using w = await mcpWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "150" } });
  const { token } = await w.agents.issue();
  const post = (body: string) =>
    w.app.request("/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-03-26",
      },
      body,
    });
  const first = await post(listTools(100));
  assert.equal(first.status, 200);
  assert.equal((await first.json()).length, 100);
  // 100 more would pass 150: the whole batch is refused before anything runs.
  const second = await post(listTools(100));
  assert.equal(second.status, 429);
  assert.equal((await second.json()).error, "rate_limit_exceeded");
  assert.ok(Number(second.headers.get("retry-after")) > 0);
  // What is left of the minute still serves smaller batches, then nothing.
  const rest = await post(listTools(50));
  assert.equal(rest.status, 200);
  await rest.body?.cancel();
  const over = await post(listTools(1));
  assert.equal(over.status, 429);
  await over.body?.cancel();
});
