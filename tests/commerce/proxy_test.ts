import assert from "node:assert/strict";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { unixSeconds } from "../../core/clock.ts";
import { signRequest } from "../../core/payproxy/signature.ts";
import {
  buyWithWallet,
  challengesOf,
  createCommerceWorld,
  paymentAuthorization,
  payPerCall,
  postJson,
} from "./_helpers.ts";
import { kvFaults } from "../_kv_faults.ts";

type World = Awaited<ReturnType<typeof createCommerceWorld>>;

const remaining = async (w: World, token: string) =>
  (await (await w.req("/agent/entitlements", { token })).json()).entitlements[0]?.remainingUsd ?? "none";

const search = (w: World, token: string, extra: Record<string, string> = {}, dm = w.dataModelId) =>
  w.req(`/v2/search?data_model_id=${dm}`, { ...postJson({ query: "rates" }, extra), token });

Deno.test("paid proxy: signs, forwards, returns the upstream answer with its usage receipt and bills the reported usage", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token, agent } = await w.agents.issue();
  await buyWithWallet(w, token, "1.000000");
  const res = await search(w, token);
  assert.equal(res.status, 200);
  assert.ok(res.headers.get("zc-request-id"));
  assert.equal(res.headers.get("zc-usage-error"), null);
  assert.deepEqual(JSON.parse(res.headers.get("zc-usage")!), [{
    serviceSlug: "demo-news",
    meterSlug: "query",
    quantity: 1,
  }]);
  // The upstream answer, with the call's receipt added as `usage`.
  assert.deepEqual(await res.json(), {
    status: "ok",
    echo: { query: "rates" },
    usage: {
      cost_usd: "0.010000",
      balance_usd: "0.990000",
      plan_id: w.plan.id,
      request_id: res.headers.get("zc-request-id"),
    },
  });
  assert.equal(w.upstream.verified, 1);
  assert.equal(await remaining(w, token), "0.990000");
  // The real-time route, priced at 0.02.
  const am = await w.req(`/aimodel/${w.aiModelId}`, { ...postJson({ query: "why?" }), token });
  assert.equal(am.status, 200);
  await am.body?.cancel();
  assert.equal(await remaining(w, token), "0.970000");
  // Both signed calls named the paying agent to the seller's payproxy routes.
  assert.deepEqual(w.upstream.agentIds, [agent.credentialId, agent.credentialId]);
});

Deno.test("paid proxy: upstream errors pass through unchanged and are not billed", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token } = await w.agents.issue();
  await buyWithWallet(w, token, "1.000000");
  w.upstream.mode = "error";
  const res = await search(w, token);
  assert.equal(res.status, 500);
  assert.deepEqual(await res.json(), { message: "upstream broke" });
  assert.equal(await remaining(w, token), "1.000000");
});

Deno.test("paid proxy: an answer that breaks off after its usage was reported is not billed", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token } = await w.agents.issue();
  await buyWithWallet(w, token, "1.000000");
  w.upstream.mode = "broken_body";
  const res = await search(w, token);
  const text = await res.text().catch(() => "(the body broke off)");
  assert.equal(res.status, 502, text);
  assert.equal(JSON.parse(text).error, "upstream_unavailable");
  assert.equal(await remaining(w, token), "1.000000");

  // Pay per call: the charge is given back, and the receipt says so.
  await using p = await createCommerceWorld({ upstream: true, withPlan: false });
  await p.addPayg(20_000);
  const agent = await p.agents.issue();
  const [ch] = challengesOf(await search(p, agent.token));
  p.upstream.mode = "broken_body";
  const paid = await p.req(`/v2/search?data_model_id=${p.dataModelId}`, {
    ...postJson({ query: "rates" }, {
      authorization: paymentAuthorization(ch!, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${agent.token}`,
    }),
  });
  const paidText = await paid.text().catch(() => "(the body broke off)");
  assert.equal(paid.status, 502, paidText);
  const processor = p.deps.commerce.service.processor as SandboxProcessor;
  assert.equal(processor.refunds.length, 1);
  assert.match(paid.headers.get("payment-receipt") ?? "", /./);
});

Deno.test("paid proxy: unbillable usage reports name the problem in zc-usage-error and are not charged", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token } = await w.agents.issue();
  await buyWithWallet(w, token, "1.000000");
  for (
    const [mode, problem] of [["bad_usage", "invalid_usage_header"], ["no_usage", "invalid_usage_header"], [
      "unpriced_usage",
      "usage_not_priced",
    ]] as const
  ) {
    w.upstream.mode = mode;
    const before = w.upstream.calls;
    const res = await search(w, token);
    assert.equal(res.status, 200, mode);
    assert.equal(res.headers.get("zc-usage-error"), problem, mode);
    // Not charged, and the receipt says so.
    assert.deepEqual(await res.json(), {
      status: "ok",
      echo: { query: "rates" },
      usage: {
        cost_usd: "0.000000",
        balance_usd: "1.000000",
        plan_id: null,
        request_id: res.headers.get("zc-request-id"),
      },
    });
    assert.equal(w.upstream.calls, before + 1, "not retried");
  }
  assert.equal(await remaining(w, token), "1.000000");
});

Deno.test("paid proxy: coverage errors: plan_required (both reasons), usage_exhausted, access_not_found", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token } = await w.agents.issue();

  // No plan at all: plan_required / access_not_found with covering plans and their purchase URLs.
  const none = await search(w, token);
  assert.equal(none.status, 403);
  const noneBody = await none.json();
  assert.equal(noneBody.error, "plan_required");
  assert.equal(noneBody.reason, "access_not_found");
  assert.equal(noneBody.plans[0].purchase.url, `http://store.test/plans/${w.plan.id}/purchase`);

  // A plan that does not cover the archive service: not_included_in_plan with the meters.
  await buyWithWallet(w, token, "0.100000");
  const other = await search(w, token, {}, w.otherDataModelId);
  assert.equal(other.status, 403);
  const otherBody = await other.json();
  assert.equal(otherBody.reason, "not_included_in_plan");
  assert.deepEqual(otherBody.meters, [{ serviceSlug: "archive-vault", meterSlug: "query" }]);

  // Credit for 10 searches, then exhausted.
  for (let i = 0; i < 10; i++) assert.equal((await search(w, token)).status, 200);
  const out = await search(w, token);
  assert.equal(out.status, 402);
  const outBody = await out.json();
  assert.equal(outBody.error, "usage_exhausted");
  assert.ok(outBody.plans[0].purchase.url);
  assert.equal(await remaining(w, token), "none"); // zero-credit plans are not listed as active

  // A model that is not a service of this seller (not marketplace-enabled / unknown).
  const unknown = await search(w, token, {}, "dm_00000000000000000000000000");
  assert.equal(unknown.status, 404);
  assert.equal((await unknown.json()).error, "access_not_found");
  // No token at all.
  const anon = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, postJson({ query: "x" }));
  assert.equal(anon.status, 401);
  await anon.body?.cancel();
  assert.equal(w.upstream.calls, 10);
});

Deno.test("paid proxy: a zc-request-id is billed once; reusing it is refused", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token } = await w.agents.issue();
  await buyWithWallet(w, token, "1.000000");
  const id = "req-0001-abcdef";
  assert.equal((await search(w, token, { "zc-request-id": id })).status, 200);
  const dup = await search(w, token, { "zc-request-id": id });
  assert.equal(dup.status, 409);
  await dup.body?.cancel();
  assert.equal(await remaining(w, token), "0.990000");
  // Settling the same request again moves nothing.
  assert.equal(await w.deps.commerce.service.ledger.settle(w.sellerId, id, 10_000), 10_000);
  assert.equal(await remaining(w, token), "0.990000");
});

Deno.test("paid proxy: pay as you go answers the per-call 402 with a payment block, then serves the paid call", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  const payg = await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const first = await search(w, token);
  assert.equal(first.status, 402);
  const body = await first.json();
  assert.equal(body.error, "payment_required");
  assert.equal(body.reason, undefined);
  assert.equal(body.payment.planId, payg.id);
  assert.equal(body.payment.amountUsd, "0.020000");
  const ch = challengesOf(first);
  assert.deepEqual(ch.map((c) => c.method), ["wallet"]);
  const auth = paymentAuthorization(ch[0]!, { token: SANDBOX_TOKENS.wallet.success });
  const paid = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
    ...postJson({ query: "rates" }, { authorization: auth, "zc-agent-authorization": `Bearer ${token}` }),
  });
  assert.equal(paid.status, 200);
  assert.ok(paid.headers.get("payment-receipt"));
  await paid.body?.cancel();
  const again = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
    ...postJson({ query: "rates" }, { authorization: auth, "zc-agent-authorization": `Bearer ${token}` }),
  });
  assert.equal((await again.json()).error, "payment_consumed");
  // Purchasing the pay-as-you-go plan is refused.
  const buyIt = await w.req(`/plans/${payg.id}/purchase`, { ...postJson({ amountUsd: "1.000000" }), token });
  assert.equal((await buyIt.json()).error, "payg_not_purchasable");
});

Deno.test("paid proxy: a pay-per-call credential whose charge was taken over after a stall pays for one call, not two", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const first = await search(w, token);
  const [ch] = challengesOf(first);
  const auth = paymentAuthorization(ch!, { token: SANDBOX_TOKENS.wallet.success });
  // The first charge stalls at the processor past the grace period; a retry with the same
  // credential takes the reference over and is served (the processor dedupes the charge).
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  const charge = processor.charge.bind(processor);
  let stalled = true;
  let resume!: () => void;
  const resumed = new Promise<void>((r) => (resume = r));
  processor.charge = async (input) => {
    if (stalled) {
      stalled = false;
      await resumed;
    }
    return await charge(input);
  };
  const call = () =>
    w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
      ...postJson({ query: "rates" }, { authorization: auth, "zc-agent-authorization": `Bearer ${token}` }),
    });
  const slow = call();
  while (stalled) await new Promise((r) => setTimeout(r, 1));
  w.clock.advance(31_000);
  const retry = await call();
  assert.equal(retry.status, 200);
  await retry.body?.cancel();
  resume();
  const late = await slow;
  const lateBody = await late.json();
  assert.equal(late.status, 409, JSON.stringify(lateBody));
  assert.equal(lateBody.error, "payment_consumed");
  assert.equal(w.upstream.calls, 1);
  assert.equal(processor.ledger.length, 1);
});

Deno.test("paid proxy: 100 parallel calls against credit for exactly 50 succeed 50 times and leave exactly zero", async () => {
  await using w = await createCommerceWorld({ upstream: true });
  const { token, agent } = await w.agents.issue();
  await buyWithWallet(w, token, "0.500000"); // 50 searches at 0.01
  // Every committed balance of the entitlement, as KV reports its changes (no sampling timer).
  const keys: Deno.KvKey[] = [];
  for await (const e of w.deps.kv.list({ prefix: ["commerce_ent"] })) keys.push(e.key);
  assert.equal(keys.length, 1);
  const key = keys[0]!;
  let lowest = Infinity;
  let changes = 0;
  const balances = w.deps.kv.watch<[{ creditMicros: number }]>([key]).getReader();
  const watching = (async () => {
    for (let r = await balances.read(); !r.done; r = await balances.read()) {
      const value = r.value[0].value;
      if (value) lowest = Math.min(lowest, value.creditMicros);
      changes++;
    }
  })();
  const results = await Promise.all(Array.from({ length: 100 }, () =>
    search(w, token).then(async (r) => {
      await r.body?.cancel();
      return r.status;
    })));
  await balances.cancel();
  await watching;
  assert.equal(results.filter((s) => s === 200).length, 50);
  assert.equal(results.filter((s) => s === 402).length, 50);
  const ents = await w.deps.commerce.service.ledger.entries(agent, w.sellerId);
  assert.equal(ents[0]!.value.creditMicros, 0);
  assert.ok(changes > 1, "the balance was watched while it changed");
  assert.ok(lowest >= 0, `balance went to ${lowest}`);
  assert.equal(w.upstream.verified, 50);
});

Deno.test("allowance: POST /internal/allowance verifies the payproxy signature and answers by coverage", async () => {
  await using w = await createCommerceWorld();
  const { token, agent } = await w.agents.issue({ humanId: "hu_9" });
  const key = (await w.secrets.current(w.sellerId))!;
  const ask = async (agentId: string, serviceSlug: string, opts: { sign?: boolean } = {}) => {
    const body = new TextEncoder().encode(
      JSON.stringify({ agentId, serviceSlug, usage: [{ meterSlug: "query", quantity: 1 }] }),
    );
    const requestId = crypto.randomUUID();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "zc-request-id": requestId,
      "zc-agent-id": agentId,
    };
    if (opts.sign !== false) {
      headers["zc-signature"] = (await signRequest({
        ...key,
        t: unixSeconds(w.clock),
        method: "POST",
        url: "http://store.test/internal/allowance",
        body,
        requestId,
        agentId,
      })).header;
    }
    return await w.app.request("http://store.test/internal/allowance", { method: "POST", headers, body });
  };
  const unsigned = await ask(agent.credentialId, "demo-news", { sign: false });
  assert.equal(unsigned.status, 401);
  assert.deepEqual(await unsigned.json(), { error: "invalid_payproxy_signature" });
  assert.deepEqual(await (await ask(agent.credentialId, "demo-news")).json(), { allowed: false });
  // The agent is seen on the storefront (which records its human), then buys credit.
  await buyWithWallet(w, token, "0.100000");
  assert.deepEqual(await (await ask(agent.credentialId, "demo-news")).json(), { allowed: true });
  assert.deepEqual(await (await ask(agent.credentialId, "archive-vault")).json(), { allowed: false });
  assert.deepEqual(await (await ask(agent.credentialId, "no-such-service")).json(), { allowed: false });
  // Another credential of the same human shares the plan.
  const sibling = await w.agents.issue({ humanId: "hu_9" });
  await (await w.req("/agent/entitlements", { token: sibling.token })).body?.cancel();
  assert.deepEqual(await (await ask(sibling.agent.credentialId, "demo-news")).json(), { allowed: true });
});

Deno.test("allowance: only whole, non-negative query usage of a named agent is priced; anything else is a no", async () => {
  await using w = await createCommerceWorld();
  const { token, agent } = await w.agents.issue();
  await buyWithWallet(w, token, "0.100000"); // 10 searches at 0.01
  const allow = (usage: unknown[], agentId = agent.credentialId) =>
    w.deps.commerce.service.allowUsage(w.sellerId, agentId, "demo-news", usage);
  assert.equal(await allow([{ meterSlug: "query", quantity: 2 }, { meterSlug: "query", quantity: 3 }]), true);
  assert.equal(await allow([{ meterSlug: "query", quantity: 11 }]), false, "more than the credit covers");
  assert.equal(await allow([{ meterSlug: "tokens", quantity: 1 }]), false);
  assert.equal(await allow([{ meterSlug: "query", quantity: -1 }]), false);
  assert.equal(await allow([{ meterSlug: "query", quantity: 1.5 }]), false);
  assert.equal(await allow([null]), false);
  assert.equal(await allow([{ meterSlug: "query", quantity: 1 }], ""), false, "no agent, no allowance");
});

Deno.test("paid proxy: a pay-per-call charge whose call could not be started (its hold write failed) is refunded", async () => {
  const faults = kvFaults();
  await using w = await createCommerceWorld({ upstream: true, withPlan: false, wrapKv: faults.wrap });
  await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const [ch] = challengesOf(await search(w, token));
  faults.failNext(1, { op: "set", entity: "commerce_hold" });
  const res = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
    ...postJson({ query: "rates" }, {
      authorization: paymentAuthorization(ch!, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 502, text);
  assert.equal(JSON.parse(text).error, "upstream_unavailable");
  assert.equal(w.upstream.calls, 0);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  assert.equal(processor.ledger.length, 1);
  assert.equal(processor.refunds.length, 1, "the charge for a call never made is given back");
  assert.match(res.headers.get("payment-receipt") ?? "", /./);
  const record = (await w.deps.commerce.service.payments.get(w.sellerId, ch!.id)).value;
  assert.equal(record?.state, "refunded");
});

Deno.test("paid proxy: a paid call whose hold could not be removed afterwards still answers, charged once", async () => {
  const faults = kvFaults();
  await using w = await createCommerceWorld({ upstream: true, withPlan: false, wrapKv: faults.wrap });
  await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const [ch] = challengesOf(await search(w, token));
  faults.failNext(1, { op: "delete", entity: "commerce_hold" });
  const res = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
    ...postJson({ query: "rates" }, {
      authorization: paymentAuthorization(ch!, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(faults.left, 0, "the hold's removal failed");
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  assert.equal(processor.ledger.length, 1);
  assert.equal(processor.refunds.length, 0);
  assert.equal((await w.deps.commerce.service.payments.get(w.sellerId, ch!.id)).value?.state, "consumed");
});

Deno.test("paid proxy: a pay-per-call charge whose process died before the call ended is refunded on a later paid call", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  // The process dies once the charge is consumed, before the call is forwarded: its request never ends.
  const ledger = w.deps.commerce.service.ledger;
  const holdCall = ledger.holdCall.bind(ledger);
  ledger.holdCall = () => new Promise<void>(() => {});
  const dead = await payPerCall(w, (await w.agents.issue()).token);
  void dead.send();
  while (processor.ledger.length === 0) await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal((await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value?.state, "consumed");
  ledger.holdCall = holdCall;

  // Within the time a call may take, another paid call leaves it alone.
  w.clock.advance(5 * 60_000);
  const soon = await (await payPerCall(w, (await w.agents.issue()).token)).send();
  assert.equal(soon.status, 200);
  await soon.body?.cancel();
  assert.equal(processor.refunds.length, 0);

  // Past it, the next paid call (another agent's) gives the abandoned charge back, once.
  w.clock.advance(6 * 60_000);
  for (let i = 0; i < 2; i++) {
    const later = await (await payPerCall(w, (await w.agents.issue()).token)).send();
    assert.equal(later.status, 200);
    await later.body?.cancel();
  }
  assert.deepEqual(processor.refunds.map((r) => [r.reference, r.reason]), [[dead.ch.id, "call_not_finished"]]);
  const record = (await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value;
  assert.equal(record?.state, "refunded");
  assert.equal(record?.refundReason, "call_not_finished");
  assert.equal(processor.ledger.length, 4);
});
