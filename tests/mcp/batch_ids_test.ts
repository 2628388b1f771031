/**
 * A JSON-RPC batch whose requests share an id: the SDK's JSON response answered the first and
 * dropped the others after they ran, so three paid searches with id 7 debited three calls and
 * returned one result. Such a batch is now refused whole (-32600) before any call runs.
 */
import assert from "node:assert/strict";
import { mcpWorld } from "./_world.ts";

Deno.test("MCP: a batch repeating a request id is refused whole with -32600; no call runs, nothing is debited", async () => {
  await using w = await mcpWorld();
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const searches = { n: 0 };
  const recommend = w.deps.search.recommend.bind(w.deps.search);
  w.deps.search.recommend = (...a) => {
    searches.n++;
    return recommend(...a);
  };
  const call = (id: number | string, query: string) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "search_articles", arguments: { data_model_id: w.ids.dataModelId, query } },
  });
  const post = (batch: unknown[]) =>
    fetch(`${w.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-03-26",
      },
      body: JSON.stringify(batch),
    });

  const repeated = await post([call(7, "council budget"), call(7, "storm harbour"), call(7, "housing")]);
  assert.equal(repeated.status, 400);
  const body = await repeated.json();
  assert.equal(body.error.code, -32600);
  assert.equal(searches.n, 0);
  assert.equal(await w.remainingUsd(token), "0.100000");

  // Distinct ids (a number and the same digits as a string are two ids): every call runs and answers.
  const distinct = await post([call(7, "council budget"), call("7", "storm harbour")]);
  assert.equal(distinct.status, 200);
  const answers = await distinct.json() as { id: unknown; result: { isError?: boolean } }[];
  assert.deepEqual(new Set(answers.map((a) => a.id)), new Set([7, "7"]));
  assert.ok(answers.every((a) => a.result.isError === undefined));
  assert.equal(searches.n, 2);
  assert.equal(await w.remainingUsd(token), "0.080000");
});
