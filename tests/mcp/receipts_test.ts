/**
 * A receipt on every paid answer: REST answers of the storefront's paid proxy carry
 * `usage {cost_usd, balance_usd, plan_id, request_id}`, MCP results the same figures in
 * `_meta.usage` (with the payment receipt when a payment paid the call), and the free `balance`
 * tool and `GET /agent/balance` report the same balance.
 */
import assert from "node:assert/strict";
import { Challenge, Credential, Receipt } from "mppx";
import { UsageReceipts } from "../../core/commerce/usage_receipt.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { challengesOf, paymentAuthorization } from "../commerce/_helpers.ts";
import { mcpWorld } from "./_world.ts";

const SF = "http://svc.test";
// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("REST paid answers carry a usage block; GET /agent/balance reports the same balance", async () => {
  await using w = await mcpWorld();
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const credit = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    w.app.request(`${SF}${path}`, {
      method: "POST",
      headers: { host: "svc.test", "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });

  const res = await post(`/v2/search?data_model_id=${w.ids.dataModelId}`, { query: "council budget" });
  assert.equal(res.status, 200);
  const body: Json = await res.json();
  assert.ok(body.response.results.length > 0, "the answer is otherwise the spec's SearchResponse");
  assert.deepEqual(body.usage, {
    cost_usd: "0.010000",
    balance_usd: "0.090000",
    plan_id: credit.id,
    request_id: res.headers.get("zc-request-id"),
  });

  const answer = await post(`/aimodel/${w.ids.aiModelId}`, { query: "What did the council decide?" });
  const answered: Json = await answer.json();
  assert.equal(typeof answered.message, "string");
  assert.equal(answered.usage.plan_id, credit.id);
  const cost = Number(answered.usage.cost_usd);
  assert.ok(cost > 0);
  assert.equal(answered.usage.balance_usd, (0.09 - cost).toFixed(6));

  const balance: Json = await (await w.app.request(`${SF}/agent/balance`, {
    headers: { host: "svc.test", authorization: `Bearer ${token}` },
  })).json();
  assert.equal(balance.balance_usd, answered.usage.balance_usd);
  assert.deepEqual(balance.plans.map((p: Json) => [p.plan_id, p.remaining_usd]), [[credit.id, balance.balance_usd]]);
  assert.equal(balance.currency, "usd");

  // Pay per call (no credit left to use for another agent): the receipt names the payment and the plan.
  const other = await w.agents.issue();
  const first = await w.app.request(`${SF}/v2/search?data_model_id=${w.ids.dataModelId}`, {
    method: "POST",
    headers: { host: "svc.test", "content-type": "application/json", authorization: `Bearer ${other.token}` },
    body: JSON.stringify({ query: "storm" }),
  });
  assert.equal(first.status, 402);
  const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const paid = await post(`/v2/search?data_model_id=${w.ids.dataModelId}`, { query: "storm" }, {
    authorization: paymentAuthorization(wallet, { token: SANDBOX_TOKENS.wallet.success }),
    "zc-agent-authorization": `Bearer ${other.token}`,
  });
  assert.equal(paid.status, 200);
  const paidBody: Json = await paid.json();
  assert.equal(paidBody.usage.cost_usd, wallet.request.amountUsd);
  assert.equal(paidBody.usage.plan_id, wallet.request.planId);
  assert.equal(paidBody.usage.payment_reference, wallet.id);
  assert.equal(paidBody.usage.balance_usd, "0.000000");
});

Deno.test("MCP paid results carry _meta.usage (and the payment receipt); the balance tool matches /agent/balance", async () => {
  await using w = await mcpWorld();
  const { token } = await w.agents.issue();
  const client = await w.connect(`Bearer ${token}`);
  const args = { data_model_id: w.ids.dataModelId, query: "council budget" };

  // Paid per call: the receipt of the payment and the figures, naming the same reference.
  const err = await client.callTool({ name: "search_articles", arguments: args }).then(() => null, (e: unknown) => e);
  const wallet = (err as { data: { challenges: Challenge.Challenge[] } }).data.challenges.find((c) =>
    c.method === "wallet"
  )!;
  const credential = Credential.from({ challenge: wallet, payload: { token: SANDBOX_TOKENS.wallet.success } });
  const paid = await client.callTool({
    name: "search_articles",
    arguments: args,
    _meta: { "org.paymentauth/credential": credential },
  });
  const meta = paid._meta as Json;
  assert.equal(meta["org.paymentauth/receipt"].reference, meta.usage.payment_reference);
  assert.equal(meta.usage.cost_usd, wallet.request.amountUsd);
  assert.equal(meta.usage.balance_usd, "0.000000");

  // From credit: no payment receipt, the figures only.
  await w.buyCredit(token, "0.100000");
  const fromCredit = await client.callTool({ name: "search_articles", arguments: args });
  const usage = (fromCredit._meta as Json).usage;
  assert.equal((fromCredit._meta as Json)["org.paymentauth/receipt"], undefined);
  assert.equal(usage.cost_usd, "0.010000");
  assert.equal(usage.balance_usd, "0.090000");
  assert.match(usage.request_id, /^[0-9a-f-]{36}$/);

  const balance = await client.callTool({ name: "balance", arguments: {} });
  assert.equal(balance.isError, undefined, JSON.stringify(balance.content));
  const rest: Json = await (await w.app.request(`${SF}/agent/balance`, {
    headers: { host: "svc.test", authorization: `Bearer ${token}` },
  })).json();
  assert.deepEqual(balance.structuredContent, rest);
  assert.equal(rest.balance_usd, usage.balance_usd);
  assert.match((balance.content as { text: string }[])[0]!.text, /^Balance: 0\.090000 USD/);

  // A tenant key has no balance tool.
  const tenant = await w.connect(`Bearer ${w.apiKey}`);
  const names = (await tenant.listTools()).tools.map((t: { name: string }) => t.name);
  assert.ok(!names.includes("balance"));
  assert.equal((await tenant.callTool({ name: "balance", arguments: {} })).isError, true);
});

Deno.test("UsageReceipts.forResponse(): a payment receipt naming no record of ours is priced at the covering pay-as-you-go plan", async () => {
  await using w = await mcpWorld();
  const { agent } = await w.agents.issue();
  const seller = (await w.deps.storefront.sellers.get("demo"))!;
  const payg = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "payg")!;
  const service = (await w.deps.commerce.catalog.services(seller)).find((s) => s.kind === "search")!;
  const receipt = Receipt.serialize(
    Receipt.from({
      method: "evm",
      reference: "0xabc:1",
      externalId: "0xtx",
      status: "success",
      timestamp: w.clock.now().toISOString(),
    }),
  );
  const res = new Response("{}", {
    headers: {
      "content-type": "application/json",
      "zc-request-id": "req-12345678",
      "payment-receipt": receipt,
      "zc-usage": JSON.stringify([{ serviceSlug: service.slug, meterSlug: "query", quantity: 1 }]),
    },
  });
  const usage = await new UsageReceipts(w.deps.commerce.service).forResponse(seller, agent, res);
  assert.deepEqual(usage, {
    cost_usd: "0.020000",
    balance_usd: "0.000000",
    plan_id: payg.id,
    request_id: "req-12345678",
    payment_reference: "0xabc:1",
  });
  // No request id: no receipt.
  assert.equal(await new UsageReceipts(w.deps.commerce.service).forResponse(seller, agent, new Response("{}")), null);
});

Deno.test("MCP paid ask: a structured model whose payload is not an object is answered, as it was charged", async () => {
  await using w = await mcpWorld();
  const model = (await w.deps.repos.aiModels.get(w.ids.aiModelId))!;
  // A schema whose root is a string: the payload is the answer text itself.
  await w.deps.repos.aiModels.update({ ...model, output: { kind: "structured", schema: { type: "string" } } });
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "0.100000");
  const client = await w.connect(`Bearer ${token}`);
  const res = await client.callTool({
    name: "ask",
    arguments: { ai_model_id: w.ids.aiModelId, query: "What did the council decide?" },
  });
  assert.equal(res.isError, undefined, JSON.stringify(res.content));
  const out = res.structuredContent as Json;
  assert.equal(typeof out.payload, "string");
  const usage = (res._meta as Json).usage;
  assert.ok(Number(usage.cost_usd) > 0);
  assert.equal(usage.balance_usd, (0.1 - Number(usage.cost_usd)).toFixed(6));
  const rest: Json = await (await w.app.request(`${SF}/agent/balance`, {
    headers: { host: "svc.test", authorization: `Bearer ${token}` },
  })).json();
  assert.equal(rest.balance_usd, usage.balance_usd);
});
