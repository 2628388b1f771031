/**
 * The defects issue 26 lists, one test each: listing price vs pay-per-call challenge, the issuer
 * of the root authorization-server metadata, the 401 of a Payment-only request, the server card's
 * protocol versions, and a missing `query` argument.
 */
import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { Challenge } from "mppx";
import { mcpWorld } from "./_world.ts";

const SF = "http://svc.test";

Deno.test("list_data_models and list_ai_models name the price the pay-per-call challenge asks", async () => {
  await using w = await mcpWorld();
  const { token } = await w.agents.issue();
  const client = await w.connect(`Bearer ${token}`);
  for (
    const [tool, field, call] of [
      ["list_data_models", "data_models", { name: "search_articles", arguments: { query: "council" } }],
      ["list_ai_models", "ai_models", { name: "ask", arguments: { query: "What did the council decide?" } }],
    ] as const
  ) {
    const listed = await client.callTool({ name: tool, arguments: {} });
    // deno-lint-ignore no-explicit-any
    const model = (listed.structuredContent as any)[field][0];
    const idField = tool === "list_data_models" ? "data_model_id" : "ai_model_id";
    const err = await client.callTool({ name: call.name, arguments: { ...call.arguments, [idField]: model.id } })
      .then(() => null, (e: unknown) => e) as { code: number; data: { challenges: Challenge.Challenge[] } };
    assert.equal(err?.code, -32042, `${tool}: a call without credit is challenged`);
    const asked = err.data.challenges.map((c) => c.request.amountUsd);
    assert.ok(asked.length > 0);
    for (const amount of asked) assert.equal(model.price_usd, amount, `${tool}: listed price vs challenge`);
    assert.equal(typeof model.credit_price_usd, "string");
  }
});

Deno.test("the root authorization-server metadata names the origin it is served at: a strict client from BASE_URL accepts it", async () => {
  await using w = await mcpWorld();
  const opts = {
    [oauth.customFetch]: (url: string, init: RequestInit) => Promise.resolve(w.app.request(url, init)),
    [oauth.allowInsecureRequests]: true,
  };
  const base = new URL(w.deps.config.baseUrl);
  const as = await oauth.processDiscoveryResponse(
    base,
    await oauth.discoveryRequest(base, { ...opts, algorithm: "oauth2" }),
  );
  assert.equal(new URL(as.issuer).href, base.href);
  assert.equal(as.token_endpoint, `${SF}/oauth2/token`);
  assert.equal(as.authorization_endpoint, `${SF}/oauth2/authorize`);
  // The network issuer's own document keeps its issuer.
  const network = new URL(w.deps.config.networkApiUrl);
  const nas = await oauth.processDiscoveryResponse(
    network,
    await oauth.discoveryRequest(network, { ...opts, algorithm: "oauth2" }),
  );
  assert.equal(nas.issuer, w.deps.config.networkApiUrl);
});

Deno.test("a purchase with only a Payment credential in Authorization: the 401 names ZC-Agent-Authorization", async () => {
  await using w = await mcpWorld();
  const plan = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
  const res = await w.app.request(`${SF}/plans/${plan.id}/purchase`, {
    method: "POST",
    headers: { host: "svc.test", "content-type": "application/json", authorization: "Payment abc" },
    body: JSON.stringify({ amountUsd: "1.000000" }),
  });
  assert.equal(res.status, 401);
  const body = await res.json();
  assert.equal(body.error, "bearer_required");
  assert.match(body.detail, /ZC-Agent-Authorization: Bearer <access token>/);
  assert.doesNotMatch(body.detail, /send Authorization: Bearer/);
});

Deno.test("the server card lists every protocol version the SDK negotiates, 2025-11-25 first", async () => {
  await using w = await mcpWorld();
  const card = await (await w.app.request(`${SF}/.well-known/mcp.json`)).json();
  assert.deepEqual(card.protocolVersions, [...SUPPORTED_PROTOCOL_VERSIONS]);
  assert.equal(card.protocolVersions[0], "2025-11-25");
  // And the SDK client negotiates the newest with this server.
  const client = await w.connect(`Bearer ${w.apiKey}`);
  assert.ok(client.getServerVersion());
});

Deno.test("a missing query argument says it is required, on search_articles and on ask", async () => {
  await using w = await mcpWorld();
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const text = async (name: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name, arguments: args });
    assert.equal(r.isError, true);
    return (r.content as { text: string }[])[0]!.text;
  };
  assert.equal(await text("search_articles", { data_model_id: w.ids.dataModelId }), "query is required");
  assert.equal(await text("ask", { ai_model_id: w.ids.aiModelId }), "query is required");
  // A wrong type still says so.
  assert.equal(
    await text("search_articles", { data_model_id: w.ids.dataModelId, query: 5 }),
    "query: must be a string",
  );
});
