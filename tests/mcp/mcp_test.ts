/**
 * `POST /mcp` through the official SDK client (`Client` + `StreamableHTTPClientTransport`) against a
 * real server on port 0: tools, credentials, paid calls through the paid proxy, -32042 challenges.
 */
import assert from "node:assert/strict";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { Challenge, Credential } from "mppx";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { mcpWorld } from "./_world.ts";

type World = Awaited<ReturnType<typeof mcpWorld>>;

/** Counts searches reaching the engine (a pass-through wrapper around its own method). */
function countSearches(w: World) {
  const engine = w.deps.search;
  const counter = { n: 0 };
  const recommend = engine.recommend.bind(engine);
  engine.recommend = (...a) => {
    counter.n++;
    return recommend(...a);
  };
  return counter;
}

// deno-lint-ignore no-explicit-any
type Structured = any;
interface ToolInfo {
  name: string;
  description?: string;
  annotations?: { readOnlyHint?: boolean; openWorldHint?: boolean };
  inputSchema: { properties?: Record<string, unknown> };
}
const toolsOf = async (client: { listTools(): Promise<unknown> }) =>
  ((await client.listTools()) as { tools: ToolInfo[] }).tools;

Deno.test("MCP with a tenant API key: lists six annotated tools and calls each one", async () => {
  await using w = await mcpWorld();
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const tools = await toolsOf(client);
  assert.deepEqual(tools.map((t) => t.name), [
    "search_articles",
    "get_article",
    "ask",
    "list_data_models",
    "list_ai_models",
    "analytics_summary",
  ]);
  for (const t of tools) {
    assert.ok(t.description && t.description.length > 80, t.name);
    assert.equal(t.annotations?.readOnlyHint, true);
    assert.equal(typeof t.annotations?.openWorldHint, "boolean");
  }
  const search = tools.find((t) => t.name === "search_articles")!;
  for (
    const f of ["data_model_id", "query", "include_domains", "exclude_domains", "start_date", "end_date", "explain"]
  ) {
    assert.ok(f in (search.inputSchema.properties ?? {}), f);
  }

  const models = await client.callTool({ name: "list_data_models", arguments: {} });
  const dms = (models.structuredContent as Structured).data_models.map((m: { id: string }) => m.id);
  assert.ok(dms.includes(w.ids.dataModelId));

  const ai = await client.callTool({ name: "list_ai_models", arguments: {} });
  assert.ok((ai.structuredContent as Structured).ai_models.some((m: { id: string }) => m.id === w.ids.aiModelId));

  const found = await client.callTool({
    name: "search_articles",
    arguments: { data_model_id: w.ids.dataModelId, query: "city council budget", exclude_domains: ["beta.example"] },
  });
  assert.equal(found.isError, undefined);
  const results = (found.structuredContent as Structured).response.results;
  assert.ok(results.length >= 1);
  assert.equal(results[0].title, "City council passes the budget after a long debate");
  assert.ok(results.every((r: { site_domain: string }) => r.site_domain !== "beta.example"));
  const text = (found.content as { type: string; text: string }[])[0]!.text;
  assert.match(text, /1\. City council passes the budget after a long debate\n {3}Ana Reyes · \d{4}-\d{2}-\d{2}/);
  assert.match(text, /Link: http:\/\/svc\.test\//);

  const asked = await client.callTool({
    name: "ask",
    arguments: { ai_model_id: w.ids.aiModelId, query: "What did the city council decide about the budget?" },
  });
  assert.equal(asked.isError, undefined, JSON.stringify(asked.content));
  assert.equal(typeof (asked.structuredContent as Structured).message, "string");
  // The answer cites the articles it used, in structuredContent and as sources in the text.
  const citations = (asked.structuredContent as Structured).citations;
  assert.ok(citations.length >= 1, JSON.stringify(asked.structuredContent));
  assert.equal(citations[0].title, "City council passes the budget after a long debate");
  assert.match((asked.content as { text: string }[])[0]!.text, /Sources:\n\[1\] City council passes the budget/);

  const summary = await client.callTool({ name: "analytics_summary", arguments: { start_date: "2026-11-16" } });
  assert.equal(summary.isError, undefined, JSON.stringify(summary.content));
  assert.equal((summary.structuredContent as Structured).success, true);
  assert.equal((summary.structuredContent as Structured).daily_breakdown.length, 7);
});

Deno.test("MCP tool errors carry the REST 422 messages; another tenant's model is not found", async () => {
  await using w = await mcpWorld();
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name, arguments: args });
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}`);
    return (r.content as { text: string }[])[0]!.text;
  };
  const dm = w.ids.dataModelId;
  assert.equal(await call("search_articles", { data_model_id: dm, query: "  " }), "query: query cannot be empty");
  assert.equal(
    await call("search_articles", { data_model_id: dm, query: "x", start_date: "2026-13-01" }),
    "start_date: must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM:SSZ)",
  );
  assert.equal(
    await call("search_articles", { data_model_id: dm, query: "x", start_date: "2026-11-10", end_date: "2026-11-01" }),
    "end_date must be on or after start_date",
  );
  assert.equal(
    await call("search_articles", { data_model_id: dm, query: "x", include_domains: ["<script>"] }),
    "include_domains.0: must be a domain such as example.com",
  );
  assert.equal(await call("search_articles", { query: "x" }), "data_model_id is required");
  assert.equal(await call("ask", { ai_model_id: w.ids.aiModelId, query: " " }), "query cannot be empty");
  assert.equal(
    await call("ask", { ai_model_id: "nope", query: "x" }),
    "ai_model_id is not in the correct format: expected am_ followed by letters and digits",
  );
  assert.equal(
    await call("analytics_summary", { start_date: "2026-11-10", end_date: "2026-11-01" }),
    "end_date must be on or after start_date",
  );

  // Tenant crossing: a second tenant's key cannot reach the demo tenant's models.
  const other = await w.tenantWithKey("Other Media");
  const stranger = await w.connect(`Bearer ${other.key}`);
  const crossed = await stranger.callTool({
    name: "search_articles",
    arguments: { data_model_id: dm, query: "budget" },
  });
  assert.equal(crossed.isError, true);
  assert.equal((crossed.content as { text: string }[])[0]!.text, "Data model not found");
  const listed = await stranger.callTool({ name: "list_data_models", arguments: {} });
  assert.deepEqual((listed.structuredContent as Structured).data_models, []);
});

Deno.test("MCP without a credential, with a bad one, or an unknown key is 401 with a Bearer challenge", async () => {
  await using w = await mcpWorld();
  for (const authorization of [undefined, "Bearer ak_unknownkey000000000000", "Bearer not.a.token", "Basic abc"]) {
    await assert.rejects(w.connect(authorization), /401|Unauthorized|invalid/i, String(authorization));
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    if (authorization) headers.authorization = authorization;
    const res = await fetch(`${w.url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer resource_metadata="/);
    const body = await res.json();
    assert.ok(body.error === "invalid_request" || body.error === "invalid_token");
    assert.ok(!JSON.stringify(body).includes("not.a.token"));
  }
});

Deno.test("MCP with an agent token: a paid search debits the credit exactly once", async () => {
  await using w = await mcpWorld();
  const searches = countSearches(w);
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const client = await w.connect(`Bearer ${token}`);
  const tools = await toolsOf(client);
  assert.deepEqual(tools.map((t) => t.name), [
    "search_articles",
    "ask",
    "list_data_models",
    "list_ai_models",
    "balance",
  ]);
  const listed = await client.callTool({ name: "list_data_models", arguments: {} });
  const dm = (listed.structuredContent as Structured).data_models.find((m: { id: string }) =>
    m.id === w.ids.dataModelId
  );
  // What a call draws from credit, and what it costs without credit (the pay-per-call challenge).
  assert.equal(dm.credit_price_usd, "0.010000");
  assert.equal(dm.price_usd, "0.020000");

  const r = await client.callTool({
    name: "search_articles",
    arguments: { data_model_id: w.ids.dataModelId, query: "council budget", explain: true },
  });
  assert.equal(r.isError, undefined, JSON.stringify(r.content));
  const results = (r.structuredContent as Structured).response.results;
  assert.ok(results[0].explain.matched_terms.length > 0);
  assert.equal(searches.n, 1);
  assert.equal(await w.remainingUsd(token), "0.090000");
  // A bad argument is refused before the proxy: not billed, no search.
  const bad = await client.callTool({ name: "search_articles", arguments: { data_model_id: w.ids.dataModelId } });
  assert.equal(bad.isError, true);
  assert.equal(await w.remainingUsd(token), "0.090000");
  assert.equal(searches.n, 1);
  // A paid question: billed at the AI model's own price, once.
  const ais = await client.callTool({ name: "list_ai_models", arguments: {} });
  const am = (ais.structuredContent as Structured).ai_models.find((m: { id: string }) => m.id === w.ids.aiModelId);
  const asked = await client.callTool({
    name: "ask",
    arguments: { ai_model_id: w.ids.aiModelId, query: "What did the city council decide about the budget?" },
  });
  assert.equal(asked.isError, undefined, JSON.stringify(asked.content));
  assert.equal(typeof (asked.structuredContent as Structured).message, "string");
  const left = Math.round((0.09 - Number(am.credit_price_usd)) * 1e6) / 1e6;
  assert.equal(await w.remainingUsd(token), left.toFixed(6));
  // The analytics tool is the tenant's: an agent cannot call it.
  const denied = await client.callTool({ name: "analytics_summary", arguments: {} });
  assert.equal(denied.isError, true);
});

Deno.test("MCP with an agent token and no entitlement: -32042 with the storefront's challenges, no search run", async () => {
  await using w = await mcpWorld();
  const searches = countSearches(w);
  const { token } = await w.agents.issue();
  const client = await w.connect(`Bearer ${token}`);
  const err = await client.callTool({
    name: "search_articles",
    arguments: { data_model_id: w.ids.dataModelId, query: "council budget" },
  }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof McpError, String(err));
  assert.equal(err.code, -32042);
  const data = err.data as { httpStatus: number; challenges: Challenge.Challenge[] };
  assert.equal(data.httpStatus, 402);
  assert.ok(data.challenges.length >= 1);
  // The same challenges the storefront's paid route issues: its realm, rails, terms and price.
  const http = await w.app.request(`http://svc.test/v2/search?data_model_id=${w.ids.dataModelId}`, {
    method: "POST",
    headers: { host: "svc.test", authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ query: "council budget" }),
  });
  assert.equal(http.status, 402);
  const viaHttp = Challenge.fromResponseList(http);
  await http.body?.cancel();
  const shape = (c: Challenge.Challenge) => {
    const { nonce: _n, ...terms } = c.request as Record<string, unknown>;
    return { realm: c.realm, method: c.method, intent: c.intent, terms };
  };
  assert.deepEqual(data.challenges.map(shape), viaHttp.map(shape));
  assert.equal(searches.n, 0, "an unpaid call runs no search");
});

Deno.test("MCP: 50 concurrent paid calls against credit for 20 give exactly 20 results and 30 payment errors", async () => {
  await using w = await mcpWorld();
  const searches = countSearches(w);
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.200000");
  const client = await w.connect(`Bearer ${token}`);
  const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    client.callTool({
      name: "search_articles",
      arguments: { data_model_id: w.ids.dataModelId, query: `council budget ${i}` },
    }).then(
      (r: { isError?: unknown }) => (r.isError ? "tool_error" : "ok"),
      (e: unknown) => (e instanceof McpError ? String((e as { code: number }).code) : "other"),
    )));
  const count = (k: string) => outcomes.filter((o: string) => o === k).length;
  assert.equal(count("ok"), 20, JSON.stringify(outcomes));
  assert.equal(count("-32042"), 30);
  assert.equal(searches.n, 20);
  assert.equal(await w.remainingUsd(token) ?? "0.000000", "0.000000");
});

Deno.test("the server card, /services, /llms.txt and the authorization-server metadata name /mcp", async () => {
  await using w = await mcpWorld();
  const get = (path: string) => w.app.request(`http://svc.test${path}`, { headers: { host: "svc.test" } });
  const card = await (await get("/.well-known/mcp.json")).json();
  assert.equal(card.endpoint, "http://svc.test/mcp");
  assert.equal(card.transport.type, "streamable-http");
  assert.deepEqual(card.tools.map((t: { name: string }) => t.name), [
    "search_articles",
    "get_article",
    "ask",
    "list_data_models",
    "list_ai_models",
    "analytics_summary",
  ]);
  assert.equal((await (await get("/services")).json()).mcp.url, "http://svc.test/mcp");
  assert.match(await (await get("/llms.txt")).text(), /\[MCP server\]\(http:\/\/svc\.test\/mcp\)/);
  const meta = await (await get("/.well-known/oauth-authorization-server")).json();
  assert.equal(meta.agent_auth.mcp_endpoint, "http://svc.test/mcp");
  const stateless = await fetch(`${w.url}/mcp`, { headers: { authorization: `Bearer ${w.apiKey}` } });
  assert.equal(stateless.status, 405);
  await stateless.body?.cancel();
});

Deno.test("MCP pay-per-call: a Payment credential in _meta pays one search; replaying it pays nothing and runs nothing", async () => {
  await using w = await mcpWorld();
  const searches = countSearches(w);
  const { token } = await w.agents.issue();
  const client = await w.connect(`Bearer ${token}`);
  const args = { data_model_id: w.ids.dataModelId, query: "council budget" };
  const err = await client.callTool({ name: "search_articles", arguments: args }).then(() => null, (e: unknown) => e);
  const challenges = (err as { data: { challenges: Challenge.Challenge[] } }).data.challenges;
  const wallet = challenges.find((c) => c.method === "wallet")!;
  const credential = Credential.from({ challenge: wallet, payload: { token: SANDBOX_TOKENS.wallet.success } });
  const meta = { "org.paymentauth/credential": credential };
  const paid = await client.callTool({ name: "search_articles", arguments: args, _meta: meta });
  assert.equal(paid.isError, undefined, JSON.stringify(paid.content));
  assert.equal(searches.n, 1);
  // The result carries the payment's receipt where mppx's MCP binding looks for it.
  const receipt = (paid._meta as Record<string, Record<string, unknown>>)["org.paymentauth/receipt"]!;
  assert.equal(receipt.challengeId, wallet.id);
  assert.equal(receipt.method, "wallet");
  assert.equal(receipt.status, "success");
  assert.equal(typeof receipt.reference, "string");
  assert.ok(!Number.isNaN(Date.parse(String(receipt.timestamp))));
  const replayed = await client.callTool({ name: "search_articles", arguments: args, _meta: meta });
  assert.equal(replayed.isError, true);
  assert.equal(searches.n, 1, "a spent credential runs no search");
  // A credential for another call's terms (tampered amount) is refused too.
  const forged = { ...credential, challenge: { ...wallet, request: { ...wallet.request, amountUsd: "0.000001" } } };
  const refused = await client.callTool({
    name: "search_articles",
    arguments: args,
    _meta: { "org.paymentauth/credential": forged },
  });
  assert.equal(refused.isError, true);
  assert.equal(searches.n, 1);
  // A call paid from credit (no credential) carries none.
  await w.buyCredit(token, "0.100000");
  const fromCredit = await client.callTool({ name: "search_articles", arguments: args });
  assert.equal(fromCredit.isError, undefined, JSON.stringify(fromCredit.content));
  assert.equal(fromCredit._meta?.["org.paymentauth/receipt"], undefined);
  assert.equal(searches.n, 2);
});

Deno.test("MCP refuses an oversized body with 413 and names no unknown tool back", async () => {
  await using w = await mcpWorld();
  const res = await fetch(`${w.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${w.apiKey}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { pad: "x".repeat(2_000_000) } }),
  });
  assert.equal(res.status, 413);
  await res.body?.cancel();
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const r = await client.callTool({ name: "<img src=x>", arguments: {} });
  assert.equal(r.isError, true);
  assert.ok(!JSON.stringify(r.content).includes("<img"));
});

Deno.test("MCP: spent credit answers -32042 with a purchase challenge; paying it in _meta buys credit once and returns the purchase's receipt even when the call fails", async () => {
  await using w = await mcpWorld();
  const searches = countSearches(w);
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const client = await w.connect(`Bearer ${token}`);
  const args = { data_model_id: w.ids.dataModelId, query: "council budget" };
  for (let i = 0; i < 10; i++) {
    assert.equal((await client.callTool({ name: "search_articles", arguments: args })).isError, undefined);
  }
  const err = await client.callTool({ name: "search_articles", arguments: args }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof McpError, String(err));
  const challenges = (err.data as { challenges: Challenge.Challenge[] }).challenges;
  const purchase = challenges.find((c) => c.method === "wallet" && c.request.action === "purchase")!;
  assert.ok(purchase, JSON.stringify(challenges));
  assert.equal(searches.n, 10);
  const credential = Credential.from({ challenge: purchase, payload: { token: SANDBOX_TOKENS.wallet.success } });
  const meta = { "org.paymentauth/credential": credential };
  // The purchase settles before the call; a call that then fails still returns the purchase's receipt.
  const failed = await client.callTool({
    name: "search_articles",
    arguments: { ...args, data_model_id: "dm_00000000000000000000000000" },
    _meta: meta,
  });
  assert.equal(failed.isError, true);
  const receipt = (failed._meta as Record<string, Record<string, unknown>>)["org.paymentauth/receipt"]!;
  assert.equal(receipt.challengeId, purchase.id);
  assert.equal(receipt.method, "wallet");
  assert.equal(receipt.status, "success");
  assert.equal(await w.remainingUsd(token), "0.100000");
  // The credential is spent; the credit it bought pays the next call.
  assert.equal((await client.callTool({ name: "search_articles", arguments: args, _meta: meta })).isError, true);
  const paid = await client.callTool({ name: "search_articles", arguments: args });
  assert.equal(paid.isError, undefined, JSON.stringify(paid.content));
  assert.equal(paid._meta?.["org.paymentauth/receipt"], undefined);
  assert.equal(searches.n, 11);
  assert.equal(await w.remainingUsd(token), "0.090000");
});
