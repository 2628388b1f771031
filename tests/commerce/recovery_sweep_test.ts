/**
 * The commerce sweep (core/commerce/settle_sweep.ts) on a quiet storefront: money held for a call
 * or a payment nobody comes back for was given back only by a later paid call (stale reservations,
 * abandoned pay-per-call charges), and the sweep ran only with `PAY_EVM_RPC_URL` set (a Stripe
 * purchase `paid` whose credit failed to commit waited for its agent's retry). The sweep now does
 * all three from their indexes, whatever rails are configured, and moves each once when a live call
 * races it. Real local peers: the payproxy upstream, the Stripe stand-in.
 */
import assert from "node:assert/strict";
import { STALE_RESERVATION_MS } from "../../core/commerce/entitlements.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import type { SandboxProcessor } from "../../core/commerce/processor.ts";
import { SETTLE_RECHECK_GRACE_MS } from "../../core/commerce/settlement.ts";
import type { AuthenticatedAgent } from "../../core/commerce/types.ts";
import { kvFaults } from "../_kv_faults.ts";
import { buyWithWallet, type CommerceWorld, createCommerceWorld, payPerCall, postJson } from "./_helpers.ts";
import { cardClient, startStripeStandIn, stripeWorld } from "./_stripe_standin.ts";

/** What `/agent/entitlements` shows the agent as remaining. */
const remaining = async (w: CommerceWorld, token: string): Promise<string> =>
  (await (await w.req("/agent/entitlements", { token })).json()).entitlements[0]?.remainingUsd ?? "none";

/** A paid call's reservation whose process died right after it: nothing will ever settle it. */
async function deadCallReservation(w: CommerceWorld, agent: AuthenticatedAgent, requestId: string, micros: number) {
  const res = await w.deps.commerce.service.ledger.reserve(agent, w.sellerId, new Set([w.plan.id]), micros, requestId);
  assert.ok(res.ok);
}

Deno.test("commerce sweep: with no payment settings, a stale reservation of a dead call is given back on a quiet storefront, once", async () => {
  await using w = await createCommerceWorld();
  const sweep = w.deps.commerce.settleSweep;
  assert.ok(sweep, "the sweep runs without PAY_EVM_RPC_URL (the card and wallet rails always do)");
  const alice = await w.agents.issue();
  await buyWithWallet(w, alice.token, "1.000000");
  await deadCallReservation(w, alice.agent, "req_dead_0001", 250_000);
  assert.equal(await remaining(w, alice.token), "0.750000");

  // While the call may still be running, its credit stays held.
  w.clock.advance(STALE_RESERVATION_MS - 1000);
  assert.equal((await sweep.sweep()).swept, true);
  alice.token = await alice.renew();
  assert.equal(await remaining(w, alice.token), "0.750000");

  // Past it, the sweep gives it back: no paid call of anyone was needed.
  w.clock.advance(2000);
  await sweep.sweep();
  alice.token = await alice.renew();
  assert.equal(await remaining(w, alice.token), "1.000000");
  assert.equal((await w.deps.commerce.service.ledger.debit(w.sellerId, "req_dead_0001"))?.state, "refunded");
  // Again: nothing more moves, and the late settle of the call charges nothing.
  await sweep.sweep();
  assert.equal(await w.deps.commerce.service.ledger.settle(w.sellerId, "req_dead_0001", 250_000), 0);
  assert.equal(await remaining(w, alice.token), "1.000000");
  const open = [];
  for await (const e of w.deps.kv.list({ prefix: ["commerce_debit_open"] })) open.push(e.key);
  assert.equal(open.length, 0);

  // Started and stopped with the app's background work.
  const calls: string[] = [];
  const { start, stop } = sweep;
  sweep.start = () => (calls.push("start"), start.call(sweep));
  sweep.stop = () => (calls.push("stop"), stop.call(sweep));
  await w.deps.start({ background: true });
  await w.deps.stop();
  assert.deepEqual(calls, ["start", "stop"]);
});

Deno.test("commerce sweep: a sweep racing the live settles of stale reservations moves each once (credit plus billed is what was bought)", async () => {
  await using w = await createCommerceWorld();
  const { ledger } = w.deps.commerce.service;
  const alice = await w.agents.issue();
  await buyWithWallet(w, alice.token, "1.000000");
  const ids = Array.from({ length: 8 }, (_, i) => `req_slow_${String(i).padStart(4, "0")}`);
  for (const id of ids) await deadCallReservation(w, alice.agent, id, 100_000);
  assert.equal(await remaining(w, alice.token), "0.200000");
  // The calls stalled past their hold, and settle now, while the sweep gives them back.
  w.clock.advance(STALE_RESERVATION_MS + 1);
  const [sweepOutcome, ...billed] = await Promise.all([
    w.deps.commerce.settleSweep.sweep(),
    ...ids.map((id) => ledger.settle(w.sellerId, id, 100_000)),
  ]);
  assert.equal(sweepOutcome.swept, true);
  const billedTotal = billed.reduce((n, b) => n + b, 0);
  for (const [i, id] of ids.entries()) {
    const d = await ledger.debit(w.sellerId, id);
    assert.equal(d?.state, billed[i] === 0 ? "refunded" : "billed", id);
    assert.equal(d?.amountMicros, billed[i], id);
  }
  const credit = (await ledger.entries(alice.agent, w.sellerId)).reduce((n, e) => n + e.value.creditMicros, 0);
  assert.equal(credit + billedTotal, 1_000_000, "each reservation settled or given back, never both");
  await w.deps.commerce.settleSweep.sweep();
  assert.equal(
    (await ledger.entries(alice.agent, w.sellerId)).reduce((n, e) => n + e.value.creditMicros, 0),
    credit,
  );
});

/** A pay-per-call charge consumed by a process that died before forwarding its call: its request never ends. */
async function deadPayPerCall(w: CommerceWorld) {
  const ledger = w.deps.commerce.service.ledger;
  const holdCall = ledger.holdCall.bind(ledger);
  let reached!: () => void;
  const held = new Promise<void>((r) => reached = r);
  ledger.holdCall = () => (reached(), new Promise<void>(() => {}));
  const dead = await payPerCall(w, (await w.agents.issue()).token);
  void dead.send();
  await held;
  ledger.holdCall = holdCall;
  return dead;
}

Deno.test("commerce sweep: a pay-per-call charge whose process died mid-call is refunded on a quiet storefront, once", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  // The process dies once the charge is consumed, before the call is forwarded: its request never ends.
  const dead = await deadPayPerCall(w);
  assert.equal((await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value?.state, "consumed");

  const sweep = w.deps.commerce.settleSweep;
  w.clock.advance(STALE_RESERVATION_MS - 1000);
  assert.equal((await sweep.sweep()).abandonedCalls, 0, "not while the call may still be running");
  w.clock.advance(2000);
  assert.equal((await sweep.sweep()).abandonedCalls, 1);
  assert.equal((await sweep.sweep()).abandonedCalls, 0);
  assert.deepEqual(processor.refunds.map((r) => [r.reference, r.reason]), [[dead.ch.id, "call_not_finished"]]);
  const record = (await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value;
  assert.equal(record?.state, "refunded");
  assert.equal(record?.refundReason, "call_not_finished");
});

Deno.test("commerce sweep: an abandoned pay-per-call charge whose refunder died mid-refund is refunded by a later sweep, once", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  const dead = await deadPayPerCall(w);

  // A process takes the abandoned charge and dies while the processor refunds it.
  w.clock.advance(STALE_RESERVATION_MS + 1);
  const refund = processor.refund.bind(processor);
  let asked!: () => void;
  const refunding = new Promise<void>((r) => asked = r);
  processor.refund = () => (asked(), new Promise<never>(() => {}));
  void w.deps.commerce.proxy.refundAbandonedCalls();
  await refunding;
  processor.refund = refund;
  assert.equal((await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value?.state, "consumed");

  // Not before the taken mark is stale in its turn; then a sweep refunds it, once.
  const sweep = w.deps.commerce.settleSweep;
  assert.equal((await sweep.sweep()).abandonedCalls, 0);
  w.clock.advance(STALE_RESERVATION_MS + 1);
  assert.equal((await sweep.sweep()).abandonedCalls, 1);
  assert.equal((await sweep.sweep()).abandonedCalls, 0);
  assert.deepEqual(processor.refunds.map((r) => [r.reference, r.reason]), [[dead.ch.id, "call_not_finished"]]);
  assert.equal((await w.deps.commerce.service.payments.get(w.sellerId, dead.ch.id)).value?.state, "refunded");
  const marks = [];
  for await (const e of w.deps.kv.list({ prefix: ["commerce_call_open"] })) marks.push(e.key);
  assert.equal(marks.length, 0);
});

Deno.test("commerce sweep: a pay-per-call charge the sweep refunded while its stalled call was still running is not refunded again when the call fails", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  // Counted at the processor: the sandbox answers a second refund of one charge as the first (as a
  // real processor may not), so its refund lines alone would not show one.
  const refund = processor.refund.bind(processor);
  let refundsAsked = 0;
  processor.refund = (input) => (refundsAsked++, refund(input));
  // The call stalls before it is forwarded (its hold write hangs), then fails.
  const ledger = w.deps.commerce.service.ledger;
  const holdCall = ledger.holdCall.bind(ledger);
  let reached!: () => void;
  const held = new Promise<void>((r) => reached = r);
  let fail!: (err: Error) => void;
  ledger.holdCall = () => (reached(), new Promise<void>((_, reject) => fail = reject));
  const slow = await payPerCall(w, (await w.agents.issue()).token);
  const answer = slow.send();
  await held;
  ledger.holdCall = holdCall;

  w.clock.advance(STALE_RESERVATION_MS + 1);
  assert.equal((await w.deps.commerce.settleSweep.sweep()).abandonedCalls, 1);
  fail(new Error("hold write failed"));
  const res = await answer;
  assert.equal(res.status, 502);
  assert.equal((await res.json()).error, "upstream_unavailable");
  assert.equal(refundsAsked, 1, "refunded once");
  assert.equal(processor.refunds.length, 1);
  const record = (await w.deps.commerce.service.payments.get(w.sellerId, slow.ch.id)).value;
  assert.equal(record?.state, "refunded");
  assert.equal(record?.refundReason, "call_not_finished");
  assert.match(res.headers.get("payment-receipt") ?? "", /./, "the receipt still goes with the failure");
});

Deno.test("commerce sweep: in a Stripe-only setup, a paid purchase whose credit failed to commit is credited once, its agent never coming back", async () => {
  const standIn = startStripeStandIn();
  const faults = kvFaults();
  await using w = await stripeWorld(standIn, { wrapKv: faults.wrap });
  try {
    const buyer = await w.agents.issue();
    const { agent } = buyer;
    let token = buyer.token;
    const { client, sent, transport } = cardClient(w, standIn, () => token, "pm_card_visa");
    // The PaymentIntent succeeds; the commit that consumes the reference and grants the credit fails.
    faults.failNext(1, {
      op: "set",
      entity: "commerce_payment",
      value: (v) => (v as PaymentRecord).state === "consumed",
    });
    const failed = await client.fetch(
      `http://store.test/plans/${w.plan.id}/purchase`,
      postJson({ amountUsd: "5.000000" }),
    );
    assert.equal(failed.status, 500);
    await failed.body?.cancel();
    assert.equal(standIn.captured.length, 1, "the card was charged");
    const credit = async () =>
      (await w.deps.commerce.service.ledger.entries(agent, w.sellerId)).reduce((n, e) => n + e.value.creditMicros, 0);
    assert.equal(await credit(), 0);

    const sweep = w.deps.commerce.settleSweep;
    assert.ok(sweep, "the sweep runs without PAY_EVM_RPC_URL");
    w.clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    assert.deepEqual((await sweep.sweep()).resolved.map((r) => r.state), ["consumed"]);
    assert.equal(await credit(), 5_000_000);
    assert.deepEqual((await sweep.sweep()).resolved, []);
    // The credential sent again now: spent, nothing granted twice, nothing charged twice.
    token = await buyer.renew();
    const late = await transport(`http://store.test/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "5.000000" }),
      headers: { "content-type": "application/json", authorization: sent.at(-1)! },
    });
    assert.equal(late.status, 409);
    assert.equal((await late.json()).error, "payment_consumed");
    assert.equal(await credit(), 5_000_000);
    assert.equal(standIn.captured.length, 1);
  } finally {
    await standIn.close();
  }
});

Deno.test("commerce sweep: a pay-per-call refund that failed is tried again by a later sweep, once it succeeds the charge is refunded once; one failing for a day is left to the operator with an error", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const processor = w.deps.commerce.service.processor as SandboxProcessor;
  const refund = processor.refund.bind(processor);
  let refundsAsked = 0;
  let processorDown = true;
  processor.refund = (input) => {
    refundsAsked++;
    return processorDown ? Promise.reject(new Error("processor unavailable")) : refund(input);
  };
  const marks = async () => {
    const out = [];
    for await (const e of w.deps.kv.list({ prefix: ["commerce_call_open"] })) out.push(e.key);
    return out.length;
  };
  const { payments } = w.deps.commerce.service;
  const sweep = w.deps.commerce.settleSweep;

  // The upstream fails; its refund fails too: the agent is told the refund is pending.
  w.upstream.mode = "error";
  const failed = await payPerCall(w, (await w.agents.issue()).token);
  const res = await failed.send();
  assert.equal(res.status, 500);
  await res.body?.cancel();
  assert.equal(refundsAsked, 1);
  assert.equal((await payments.get(w.sellerId, failed.ch.id)).value?.state, "consumed");
  assert.equal(await marks(), 1, "its mark is kept for a later try");

  // A later sweep, once the mark is stale, tries again: still failing, then refunded once.
  w.clock.advance(STALE_RESERVATION_MS + 1000);
  assert.equal((await sweep.sweep()).abandonedCalls, 0);
  assert.equal(refundsAsked, 2);
  assert.equal(await marks(), 1);
  processorDown = false;
  w.clock.advance(STALE_RESERVATION_MS + 1000);
  assert.equal((await sweep.sweep()).abandonedCalls, 1);
  assert.equal(refundsAsked, 3);
  assert.equal((await payments.get(w.sellerId, failed.ch.id)).value?.state, "refunded");
  assert.deepEqual(processor.refunds.map((r) => r.reference), [failed.ch.id]);
  assert.equal(await marks(), 0);
  w.clock.advance(STALE_RESERVATION_MS + 1000);
  assert.equal((await sweep.sweep()).abandonedCalls, 0);
  assert.equal(refundsAsked, 3);

  // One whose refund never succeeds: tried while its call is under a day old, then the operator's.
  processorDown = true;
  const stuck = await payPerCall(w, (await w.agents.issue()).token);
  const res2 = await stuck.send();
  await res2.body?.cancel();
  const asked = refundsAsked;
  for (let i = 0; i < 200 && (await marks()) > 0; i++) {
    w.clock.advance(STALE_RESERVATION_MS + 1000);
    await sweep.sweep();
  }
  assert.equal(await marks(), 0, "given up");
  const tries = refundsAsked - asked;
  assert.ok(tries >= 100 && tries <= 150, `tried ${tries} times over a day`);
  assert.equal((await payments.get(w.sellerId, stuck.ch.id)).value?.state, "consumed", "the operator's to refund");
  const line = w.log.lines.find((l) => l.msg === "pay-as-you-go refund given up: refund it by hand");
  assert.equal(line?.level, "error");
  assert.equal(line?.reference, stuck.ch.id);
  w.clock.advance(STALE_RESERVATION_MS + 1000);
  await sweep.sweep();
  assert.equal(refundsAsked - asked, tries, "not tried again");
});
