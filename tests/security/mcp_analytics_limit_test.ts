/**
 * Issue 24, finding 3: MCP `analytics_summary` had no rate limit and no cache, and JSON-RPC
 * batches of 100 were accepted: one key ran 300 one-year rollups in 16.8 s against a REST limit of
 * 60 per minute. Now every tool call is one hit on the same analytics limiter as REST (a batch of
 * 100 calls is 100 hits) and `analytics_summary` answers from the same KV answer cache.
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld } from "../analytics/_fixture.ts";

const YEAR = { start_date: "2025-11-23", end_date: "2026-11-22" };

/** One POST /mcp carrying `calls` JSON-RPC tool calls as a batch; the responses by id. */
async function batch(
  w: Awaited<ReturnType<typeof analyticsWorld>>["w"],
  key: string,
  calls: number,
): Promise<{ status: number; results: { isError?: boolean; content: { text: string }[] }[] }> {
  const body = Array.from({ length: calls }, (_, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tools/call",
    params: { name: "analytics_summary", arguments: YEAR },
  }));
  const res = await w.app.request("/mcp", {
    method: "POST",
    headers: {
      ...bearer(key),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-03-26",
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const parsed = JSON.parse(text);
  const list = (Array.isArray(parsed) ? parsed : [parsed]) as { id: number; result?: unknown; error?: unknown }[];
  assert.equal(list.length, calls, text.slice(0, 300));
  return {
    status: res.status,
    results: list.sort((a, b) => a.id - b.id).map((r) =>
      r.result as { isError?: boolean; content: { text: string }[] }
    ),
  };
}

Deno.test("MCP: a JSON-RPC batch of 100 analytics_summary calls counts 100 hits; only the quota is served", async () => {
  await using world = await analyticsWorld();
  const { w, key } = world;
  const { status, results } = await batch(w, key, 100);
  assert.equal(status, 200);
  const served = results.filter((r) => !r.isError);
  const limited = results.filter((r) => r.isError);
  assert.equal(served.length, 60, "ANALYTICS_RATE_LIMIT_PER_MIN (60) calls are served");
  assert.equal(limited.length, 40);
  assert.match(limited[0]!.content[0]!.text, /^Rate limit exceeded: try again in \d+ s$/);
  // The REST bucket of the same key is the one the batch used up.
  const rest = await w.app.request(`/v1/analytics/ask-ai?start_date=${YEAR.start_date}&end_date=${YEAR.end_date}`, {
    headers: bearer(key),
  });
  assert.equal(rest.status, 429);
  assert.ok(Number(rest.headers.get("retry-after")) >= 1);
});

Deno.test("MCP: analytics_summary answers from the same KV answer cache as GET /v1/analytics/ask-ai", async () => {
  await using world = await analyticsWorld();
  const { w, key } = world;
  const { results } = await batch(w, key, 1);
  assert.equal(results[0]!.isError, undefined, JSON.stringify(results[0]));
  // The MCP call filled the entry the REST route reads: its first request is a cache hit.
  const rest = await w.app.request(`/v1/analytics/ask-ai?start_date=${YEAR.start_date}&end_date=${YEAR.end_date}`, {
    headers: bearer(key),
  });
  assert.equal(rest.status, 200);
  assert.equal(rest.headers.get("x-cache"), "HIT");
  const body = await rest.json();
  assert.equal(body.daily_breakdown.length, 365);
});
