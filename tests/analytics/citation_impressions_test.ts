/**
 * Articles cited in answers count as impressions in recirculation (`/v1/analytics/articles`) and as
 * articles surfaced in agent readership (`/v1/analytics/agents`), on every route that serves an
 * answer: bearer JSON and its SSE `done` event, MCP with a tenant key, and MCP with an agent token
 * (through the paid proxy to `/payproxy/aimodel`).
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { mcpWorld } from "../mcp/_world.ts";

type Citation = { url: string; source_url: string };
// deno-lint-ignore no-explicit-any
type Json = any;

const QUESTION = "What did the city council decide about the budget?";

Deno.test("answers record one impression per cited article, attributed to the caller", async () => {
  await using w = await mcpWorld();
  const ask = (accept: string) =>
    w.app.request(`/app/aimodel/${w.ids.aiModelId}`, {
      method: "POST",
      headers: { ...bearer(w.apiKey), "content-type": "application/json", accept },
      body: JSON.stringify({ query: QUESTION }),
    });

  // The tenant's own bearer call, as JSON and as a stream.
  const plain = await ask("application/json");
  assert.equal(plain.status, 200);
  const plainBody = await plain.json();
  const sse = await ask("text/event-stream");
  assert.equal(sse.status, 200);
  const doneBlock = (await sse.text()).split("\n\n").find((b) => b.startsWith("event: done"))!;
  const streamed = JSON.parse(doneBlock.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
  // The responses are what they were: message and citations only.
  assert.deepEqual(Object.keys(plainBody), ["message", "citations"]);
  assert.deepEqual(Object.keys(streamed), ["message", "citations"]);

  // MCP with the tenant key.
  const tenantClient = await w.connect(`Bearer ${w.apiKey}`);
  const viaMcp = await tenantClient.callTool({
    name: "ask",
    arguments: { ai_model_id: w.ids.aiModelId, query: QUESTION },
  });
  assert.equal(viaMcp.isError, undefined, JSON.stringify(viaMcp.content));
  const mcpCitations: Citation[] = (viaMcp.structuredContent as Json).citations;

  // A paying agent over MCP: the paid proxy calls /payproxy/aimodel as payproxy:<credential>.
  const { token, agent } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const agentClient = await w.connect(`Bearer ${token}`);
  const paid = await agentClient.callTool({
    name: "ask",
    arguments: { ai_model_id: w.ids.aiModelId, query: QUESTION },
  });
  assert.equal(paid.isError, undefined, JSON.stringify(paid.content));
  const paidCitations: Citation[] = (paid.structuredContent as Json).citations;

  const all: Citation[][] = [plainBody.citations, streamed.citations, mcpCitations, paidCitations];
  for (const c of all) assert.ok(c.length >= 1, "the question is answered from the seeded articles");
  const top = plainBody.citations[0] as Citation;
  const timesCited = all.flat().filter((c) => c.url === top.url).length;
  assert.equal(timesCited, 4);

  // The paying agent's user follows the link it was given.
  const click = await w.app.request(new URL(paidCitations[0]!.source_url).pathname, { redirect: "manual" });
  assert.equal(click.status, 302);
  await click.body?.cancel();

  await w.deps.events.stop(); // hands in the buffered impressions and flushes the log

  const articles: Json = await (await w.app.request("/v1/analytics/articles", { headers: bearer(w.apiKey) })).json();
  const row = articles.articles.find((a: { url: string }) => a.url === top.url);
  assert.ok(row, JSON.stringify(articles.articles));
  assert.equal(row.impressions, timesCited, "no searches ran: every impression is a citation");
  assert.equal(row.clicks, paidCitations[0]!.url === top.url ? 1 : 0);
  assert.equal(row.ctr, Math.round((row.clicks * 10_000) / row.impressions) / 100);
  const totalImpressions = articles.articles.reduce((n: number, a: { impressions: number }) => n + a.impressions, 0);
  assert.equal(totalImpressions, all.flat().length);

  const agents: Json = await (await w.app.request("/v1/analytics/agents", { headers: bearer(w.apiKey) })).json();
  const byId = new Map(agents.agents.map((a: { agent_identity: string }) => [a.agent_identity, a]));
  assert.deepEqual([...byId.keys()].sort(), ["mcp", `payproxy:${agent.credentialId}`].sort());
  const mcp = byId.get("mcp") as Json;
  assert.equal(mcp.answers, 1);
  assert.equal(mcp.results_surfaced, mcpCitations.length);
  assert.equal(mcp.articles_surfaced, new Set(mcpCitations.map((c) => c.url)).size);
  const payer = byId.get(`payproxy:${agent.credentialId}`) as Json;
  assert.equal(payer.channel, "payproxy");
  assert.equal(payer.answers, 1);
  assert.equal(payer.searches, 0);
  assert.equal(payer.results_surfaced, paidCitations.length);
  assert.equal(payer.clicks, 1);
  assert.equal(payer.click_through_rate, Math.round(10_000 / paidCitations.length) / 100);
});
