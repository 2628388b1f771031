/**
 * `X-Request-Id` on answers built outside Hono's context, through the whole app: the MCP SDK
 * transport's own `Response` and a storefront purchase challenge built by hand. A request-id
 * middleware that sets the header among Hono's prepared headers (as `hono/request-id` does) leaves
 * the hand-built 402 without it (checked: this test then fails on `trace-402`); the app's root sets
 * it on the final response instead (routes/middleware/request_envelope.ts).
 */
import assert from "node:assert/strict";
import { postJson } from "../commerce/_helpers.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("X-Request-Id: the MCP transport's answer and a hand-built 402 echo the caller's id", async () => {
  await using w = await mcpWorld();
  const initialize = await w.app.request(`${w.base}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${w.apiKey}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "x-request-id": "trace-mcp-1",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    }),
  });
  assert.equal(initialize.status, 200, await initialize.clone().text());
  assert.match(await initialize.text(), /"protocolVersion"/);
  assert.equal(initialize.headers.get("x-request-id"), "trace-mcp-1");

  const { token } = await w.agents.issue();
  const plan = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
  const challenge = await w.app.request(
    `${w.base}/plans/${plan.id}/purchase`,
    postJson({ amountUsd: "5.00" }, {
      authorization: `Bearer ${token}`,
      host: new URL(w.base).host,
      "x-request-id": "trace-402",
    }),
  );
  assert.equal(challenge.status, 402);
  assert.ok(challenge.headers.get("www-authenticate"));
  assert.equal(challenge.headers.get("x-request-id"), "trace-402");
  await challenge.body?.cancel();
});
