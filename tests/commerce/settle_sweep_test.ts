/**
 * The settlement sweep (core/commerce/settle_sweep.ts): an `evm` settlement left `processing` (the
 * facilitator's answer lost, or the process gone before its `paid` record) was resolved only by its
 * agent's retry, or by the operator; an agent that gave up left a charge possibly paid on chain and
 * never credited nor refused. Past its grace period the sweep asks the chain and moves it to its
 * final state once. Real local peers: the EVM chain and the x402 facilitator, with a stock mppx client.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { SETTLE_RECHECK_GRACE_MS } from "../../core/commerce/settlement.ts";
import { SETTLE_RECHECK_MAX_MS, SettlementSweep, type SettleSweepOutcome } from "../../core/commerce/settle_sweep.ts";
import { loadChallengeKey } from "../../core/commerce/challenges.ts";
import { StandardMethods } from "../../core/commerce/standard_methods.ts";
import type { LocalChain } from "../../fixtures/chain/local.ts";
import { kvFaults } from "../_kv_faults.ts";
import { kvThrough } from "../_kv_proxy.ts";
import { chainWorlds, evmClient, lossyFacilitator, rpcOf } from "./_chain_world.ts";
import { type CommerceWorld, createCommerceWorld, postJson } from "./_helpers.ts";

/** One chain for this file's tests, put back as it was started before each test's world. */
const withChainWorld = chainWorlds();

/** A stock mppx evm client for a new agent, and the same credential sent again unchanged (the spec's retry). */
async function buyer(w: CommerceWorld, url: string) {
  const { token, agent, renew } = await w.agents.issue();
  const sent: { authorization: string | null } = { authorization: null };
  // The access token of a retry: renewed after the clock moved past its 5 minutes.
  const current = { token };
  const client = evmClient(token, sent);
  const purchase = () => client.fetch(`${url}/plans/${w.plan.id}/purchase`, postJson({ amountUsd: "1.000000" }));
  const retry = () =>
    fetch(`${url}/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "1.000000" }),
      headers: {
        "content-type": "application/json",
        "zc-agent-authorization": `Bearer ${current.token}`,
        authorization: sent.authorization!,
      },
    });
  const renewToken = async () => void (current.token = await renew());
  /** A purchase whose settle answer never reached the storefront: 503, its body left unread. */
  const lostPurchase = async () => {
    const lost = await purchase();
    assert.equal(lost.status, 503);
    await lost.body?.cancel();
  };
  /** A purchase the storefront failed (500) after its settlement, its body left unread. */
  const failedPurchase = async () => {
    const failed = await purchase();
    await failed.body?.cancel();
    assert.equal(failed.status, 500);
  };
  return { agent, purchase, retry, renewToken, lostPurchase, failedPurchase };
}

/** Fails the next `times` writes of a payment record moving to `state` (a KV outage, or a process killed first). */
function failPaymentWrites(faults: ReturnType<typeof kvFaults>, times: number, state: PaymentRecord["state"]) {
  faults.failNext(times, {
    op: "set",
    entity: "commerce_payment",
    value: (v) => (v as PaymentRecord).state === state,
  });
}

async function evmRecords(w: CommerceWorld): Promise<Deno.KvEntry<PaymentRecord>[]> {
  const out: Deno.KvEntry<PaymentRecord>[] = [];
  for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) {
    if (e.value.rail === "evm") out.push(e);
  }
  return out;
}

/** The agent's credit at the seller (micro-USD), read from the ledger (no request: a read would settle it too). */
async function creditOf(w: CommerceWorld, agent: { credentialId: string; claimed: boolean }): Promise<number> {
  const entries = await w.deps.commerce.service.ledger.entries(agent, w.sellerId);
  return entries.reduce((sum, e) => sum + e.value.creditMicros, 0);
}

/**
 * Sweeps, the clock moved on before each, until one gives a settlement up or `withinMs` has passed:
 * a day at a time (a sweep a day still rechecks it and finds it unknown), hourly over the last two
 * days before `withinMs`, where a give-up lands within the hour as with hourly sweeps throughout.
 * @returns how many gave it up, and how long after the start the last sweep ran
 */
async function sweepUntilGivenUp(
  clock: FixedClock,
  sweep: SettlementSweep,
  withinMs: number,
  each: (out: SettleSweepOutcome) => void = () => {},
): Promise<{ givenUp: number; afterMs: number; sweeps: number }> {
  const day = 24 * SETTLE_RECHECK_MAX_MS;
  let givenUp = 0, afterMs = 0, sweeps = 0;
  while (givenUp === 0 && afterMs < withinMs) {
    const step = withinMs - afterMs > 2 * day ? day : SETTLE_RECHECK_MAX_MS;
    clock.advance(step);
    afterMs += step;
    const out = await sweep.sweep();
    each(out);
    givenUp += out.givenUp;
    sweeps++;
  }
  return { givenUp, afterMs, sweeps };
}

async function rechecksListed(w: CommerceWorld): Promise<number> {
  let n = 0;
  for await (const _ of w.deps.kv.list({ prefix: ["commerce_settle_recheck"] })) n++;
  return n;
}

Deno.test("settlement sweep: a purchase whose facilitator settle answer was lost, its agent never retrying, is credited once past its grace period", async () => {
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, true) }, async ({ chain, clock, w, http }) => {
    const buyer0 = await chain.balanceOf(chain.addresses.buyer);
    const alice = await buyer(w, http.url);
    const lost = await alice.purchase();
    assert.equal(lost.status, 503);
    assert.equal((await lost.json()).error, "payment_provider_unavailable");
    assert.equal(chain.settlements.length, 1, "paid on chain, once");
    assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 1_000_000n);
    const [pending] = await evmRecords(w);
    assert.equal(pending.value.state, "processing");
    assert.equal(pending.value.pendingTransfer, undefined, "the facilitator named no transaction");

    const sweep = w.deps.commerce.settleSweep;
    // Within the grace period the agent's own retries come first: the sweep leaves it.
    const early = await sweep.sweep();
    assert.deepEqual([early.swept, early.resolved, early.deferred], [true, [], 0]);
    assert.equal((await evmRecords(w))[0].value.state, "processing");

    // The agent never comes back: past the grace period the chain says it was paid, and it is credited.
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    const swept = await sweep.sweep();
    assert.deepEqual(swept.resolved, [{ reference: pending.value.reference, state: "consumed" }]);
    const [done] = await evmRecords(w);
    assert.equal(done.value.state, "consumed");
    assert.equal(done.value.processorRef, chain.settlements[0], "the transaction found on chain");
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
    assert.equal(await rechecksListed(w), 0, "no longer listed");

    // Swept again: nothing left to do, credited once.
    clock.advance(24 * 3600_000);
    assert.deepEqual((await sweep.sweep()).resolved, []);
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
    assert.equal(chain.settlements.length, 1);
  });
});

Deno.test("settlement sweep: a settlement whose process died before its paid record is credited once", async () => {
  const faults = kvFaults();
  await withChainWorld({ wrapKv: faults.wrap }, async ({ chain, clock, w, http }) => {
    const alice = await buyer(w, http.url);
    // Every try at the `paid` record fails, as if the process were killed right after the settlement.
    failPaymentWrites(faults, 3, "paid");
    await alice.failedPurchase();
    assert.equal(chain.settlements.length, 1, "the settlement moved the money");
    assert.equal((await evmRecords(w))[0].value.state, "processing");
    assert.equal(await creditOf(w, alice.agent), 0);

    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    const swept = await w.deps.commerce.settleSweep.sweep();
    assert.equal(swept.resolved.length, 1);
    assert.equal(swept.resolved[0].state, "consumed");
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
  });
});

Deno.test("settlement sweep: a settlement that never happened is rechecked with backoff, then failed once its authorization can no longer be used", async () => {
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, false) }, async ({ chain, clock, w, http }) => {
    const buyer0 = await chain.balanceOf(chain.addresses.buyer);
    const alice = await buyer(w, http.url);
    await alice.lostPurchase();
    assert.equal(chain.settlements.length, 0);

    const sweep = w.deps.commerce.settleSweep;
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    // Unused and still usable: the facilitator may yet submit it. Listed again, later.
    const first = await sweep.sweep();
    assert.deepEqual([first.resolved, first.deferred], [[], 1]);
    const [kept] = await evmRecords(w);
    assert.equal(kept.value.state, "processing");
    assert.equal(kept.value.rechecks, 1);
    assert.ok(kept.value.recheckAt! > clock.now().getTime() + SETTLE_RECHECK_GRACE_MS, "backoff grows");
    assert.equal((await sweep.sweep()).deferred, 0, "not due again yet");

    // The chain's time passes the authorization's validBefore: no block can use it now.
    const rpc = rpcOf(chain);
    await rpc("evm_increaseTime", [8 * 86_400]);
    await rpc("evm_mine");
    clock.advance(2 * 3600_000);
    const swept = await sweep.sweep();
    assert.deepEqual(swept.resolved, [{ reference: kept.value.reference, state: "failed" }]);
    const [failed] = await evmRecords(w);
    assert.equal(failed.value.state, "failed");
    assert.equal(failed.value.settlementReason, "authorization_expired");
    assert.equal(await creditOf(w, alice.agent), 0);
    assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0, "no money moved");
    assert.equal(await rechecksListed(w), 0);
  });
});

Deno.test("settlement sweep: two processes sweeping at once credit a settlement once", async () => {
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, true) }, async ({ clock, w, http }) => {
    const alice = await buyer(w, http.url);
    await alice.lostPurchase();
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);

    const { service } = w.deps.commerce;
    const another = () =>
      new SettlementSweep({
        kv: w.deps.kv,
        clock,
        log: w.deps.log,
        payments: service.payments,
        settlement: service.settlement,
        standard: new StandardMethods(w.deps.config.payments, () => loadChallengeKey(w.deps.kv)),
        agents: service.agents,
        sellers: w.deps.commerce.catalog,
        ledger: service.ledger,
        calls: w.deps.commerce.proxy,
        intervalMs: w.deps.config.payments.settleSweepIntervalMs,
      });
    // Two processes at once: the lease gives the sweep to one of them.
    const outcomes = await Promise.all([w.deps.commerce.settleSweep.sweep(), another().sweep()]);
    assert.equal(outcomes.filter((o) => o.swept).length, 1);
    assert.equal(outcomes.flatMap((o) => o.resolved).length, 1);
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
    assert.equal((await evmRecords(w))[0].value.state, "consumed");
  });
});

Deno.test("settlement sweep: two resolutions of one rechecked settlement racing move it once", async () => {
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, true) }, async ({ chain, w, http }) => {
    const alice = await buyer(w, http.url);
    const lost = await alice.purchase();
    await lost.body?.cancel();
    const [entry] = await evmRecords(w);
    const { settlement } = w.deps.commerce.service;
    const seller = (await w.deps.commerce.catalog.getSeller(w.sellerId))!;
    const confirmed = { check: "confirmed", processorRef: chain.settlements[0] } as const;
    // Both read the same record (a lease that lapsed mid-sweep): one commit wins.
    const moved = await Promise.all([
      settlement.settleRechecked(entry, confirmed, alice.agent, seller),
      settlement.settleRechecked(entry, confirmed, alice.agent, seller),
    ]);
    assert.deepEqual(moved.sort(), [false, true]);
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
    assert.equal(await rechecksListed(w), 0);
  });
});

Deno.test("settlement sweep: a pay-as-you-go call whose settle answer was lost is recorded paid with its answer owed, and the same credential sent again is served once", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async ({ chain, clock, w, http }) => {
      await w.addPayg(20_000);
      const buyer0 = await chain.balanceOf(chain.addresses.buyer);
      const { token, renew } = await w.agents.issue();
      const sent: { authorization: string | null } = { authorization: null };
      const client = evmClient(token, sent);
      const searchUrl = `${http.url}/v2/search?data_model_id=${w.dataModelId}`;
      const lost = await client.fetch(searchUrl, postJson({ query: "budget" }));
      assert.equal(lost.status, 503);
      assert.equal((await lost.json()).error, "payment_provider_unavailable");
      assert.equal(chain.settlements.length, 1);
      assert.equal(w.upstream.verified, 1, "the call ran, its answer not delivered");

      // The agent gave up: the sweep finds the transfer on chain; the call stays owed, not consumed.
      clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
      const swept = await w.deps.commerce.settleSweep.sweep();
      assert.equal(swept.resolved[0]?.state, "paid");
      const [owed] = await evmRecords(w);
      assert.deepEqual([owed.value.state, owed.value.answerOwed], ["paid", true]);
      assert.equal(owed.value.processorRef, chain.settlements[0]);

      // Back later with the same credential (and a fresh access token): served once, never charged again.
      const later = await renew();
      const retry = () =>
        fetch(searchUrl, {
          ...postJson({ query: "budget" }),
          headers: {
            "content-type": "application/json",
            "zc-agent-authorization": `Bearer ${later}`,
            authorization: sent.authorization!,
          },
        });
      const served = await retry();
      assert.equal(served.status, 200, await served.clone().text());
      assert.ok(served.headers.get("payment-receipt"));
      await served.body?.cancel();
      assert.equal(w.upstream.verified, 2);
      const again = await retry();
      assert.equal(again.status, 409);
      assert.equal((await again.json()).error, "payment_consumed");
      assert.equal(w.upstream.verified, 2);
      assert.equal((await evmRecords(w))[0].value.state, "consumed");
      assert.equal(chain.settlements.length, 1);
      assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 20_000n, "paid once");
    },
  );
});

Deno.test("settlement sweep: runs every PAY_SETTLE_SWEEP_INTERVAL_S from deps.start({background}) under a lease, and stop() ends it and frees the lease", async () => {
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  // The chain is never asked: nothing is due.
  await using w = await createCommerceWorld({
    clock,
    env: {
      PAY_EVM_CHAIN_ID: "31337",
      PAY_EVM_TOKEN: `0x${"11".repeat(20)}`,
      PAY_EVM_RECIPIENT: `0x${"22".repeat(20)}`,
      PAY_X402_FACILITATOR_URL: "http://127.0.0.1:9",
      PAY_EVM_RPC_URL: "http://127.0.0.1:9",
      PAY_SETTLE_SWEEP_INTERVAL_S: "30",
    },
  });
  assert.equal(w.deps.config.payments.settleSweepIntervalMs, 30_000);
  const calls: string[] = [];
  const sweep = w.deps.commerce.settleSweep;
  const { start, stop } = sweep;
  sweep.start = () => (calls.push("start"), start.call(sweep));
  sweep.stop = () => (calls.push("stop"), stop.call(sweep));
  await w.deps.start({ background: true });
  assert.deepEqual(calls, ["start"]);
  await w.deps.stop();
  assert.deepEqual(calls, ["start", "stop"]);

  // Its own schedule, on injected timers: one sweep per interval, the lease held while it runs.
  const timers: { fn: () => void; ms: number }[] = [];
  const { service } = w.deps.commerce;
  const own = new SettlementSweep({
    kv: w.deps.kv,
    clock,
    log: w.deps.log,
    payments: service.payments,
    settlement: service.settlement,
    standard: new StandardMethods(w.deps.config.payments, () => loadChallengeKey(w.deps.kv)),
    ledger: service.ledger,
    calls: w.deps.commerce.proxy,
    agents: service.agents,
    sellers: w.deps.commerce.catalog,
    intervalMs: 30_000,
    timers: {
      setTimeout: (fn, ms) => (timers.push({ fn, ms }), timers.length as unknown as ReturnType<typeof setTimeout>),
      clearTimeout: () => {},
    },
  });
  own.start();
  assert.deepEqual(timers.map((t) => t.ms), [30_000]);
  timers[0].fn();
  assert.equal((await own.sweep()).swept, true);
  assert.ok((await w.deps.kv.get(["commerce_settle_sweep_lease"])).value, "the lease is held");
  await own.stop();
  assert.equal((await w.deps.kv.get(["commerce_settle_sweep_lease"])).value, null, "stop() frees the lease");
});

Deno.test("a retry of a purchase whose facilitator settle answer was lost asks the chain and is credited at once; one that never settled is 503 until its authorization expires, then settlement_failed", async () => {
  let settles = true;
  const facilitator = (c: LocalChain) => {
    const paid = lossyFacilitator(c, true);
    const unpaid = lossyFacilitator(c, false);
    const front = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      const u = new URL(req.url);
      return fetch(`${settles ? paid.url : unpaid.url}${u.pathname}`, {
        method: req.method,
        headers: req.headers,
        body: req.body,
      });
    });
    return {
      url: `http://127.0.0.1:${front.addr.port}`,
      close: async () => {
        await front.shutdown();
        await paid.close();
        await unpaid.close();
      },
    };
  };
  await withChainWorld({ facilitator }, async ({ chain, w, http }) => {
    const alice = await buyer(w, http.url);
    await alice.lostPurchase();
    assert.equal(chain.settlements.length, 1);
    // Retried unchanged, as the 503 says: the chain shows the transfer the authorization made.
    const credited = await alice.retry();
    const body = await credited.json();
    assert.equal(credited.status, 200, JSON.stringify(body));
    assert.equal(body.entitlement.remainingUsd, "1.000000");
    assert.equal((await evmRecords(w))[0].value.processorRef, chain.settlements[0]);
    const again = await alice.retry();
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "payment_consumed");
    assert.equal(await creditOf(w, alice.agent), 1_000_000);

    // Nothing settled behind the lost answer: 503 while the authorization may still be used.
    settles = false;
    const bob = await buyer(w, http.url);
    const unknown = await bob.purchase();
    assert.equal(unknown.status, 503);
    await unknown.body?.cancel();
    const stillUnknown = await bob.retry();
    assert.equal(stillUnknown.status, 503);
    assert.equal((await stillUnknown.json()).error, "payment_provider_unavailable");
    const rpc = rpcOf(chain);
    await rpc("evm_increaseTime", [8 * 86_400]);
    await rpc("evm_mine");
    const expired = await bob.retry();
    const expiredBody = await expired.json();
    assert.equal(expired.status, 402, JSON.stringify(expiredBody));
    assert.equal(expiredBody.error, "settlement_failed");
    assert.equal(expiredBody.settlementReason, "authorization_expired");
    assert.equal(chain.settlements.length, 1);
    assert.equal(await creditOf(w, bob.agent), 0);
  });
});

Deno.test("settlement sweep: a settled purchase whose credit failed to commit, its agent never sending the credential again, is credited once", async () => {
  const faults = kvFaults();
  await withChainWorld({ wrapKv: faults.wrap }, async ({ chain, clock, w, http }) => {
    const alice = await buyer(w, http.url);
    // Every try at the commit that consumes the payment and grants its credit fails (a KV outage).
    failPaymentWrites(faults, 20, "consumed");
    await alice.failedPurchase();
    faults.failNext(0, { op: "set", entity: "commerce_payment" });
    assert.equal(chain.settlements.length, 1, "paid on chain");
    assert.equal((await evmRecords(w))[0].value.state, "paid");
    assert.equal(await creditOf(w, alice.agent), 0);

    const sweep = w.deps.commerce.settleSweep;
    assert.deepEqual((await sweep.sweep()).resolved, [], "its agent's own retry comes first");
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    const swept = await sweep.sweep();
    assert.deepEqual(swept.resolved.map((r) => r.state), ["consumed"]);
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
    assert.equal(await rechecksListed(w), 0);
    // The credential sent again now: spent, nothing granted twice.
    await alice.renewToken();
    const late = await alice.retry();
    assert.equal(late.status, 409);
    assert.equal((await late.json()).error, "payment_consumed");
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
  });
});

Deno.test("settlement sweep: a pay-as-you-go call whose settlement outlasted its grace period is consumed by its own request, not by a sweep running between its paid record and its consume", async () => {
  const late: {
    clock?: FixedClock;
    sweep?: () => Promise<unknown>;
    swept?: unknown;
  } = {};
  // A facilitator whose settlement takes longer than the grace period (the claim's first due time).
  const slow = (chain: LocalChain) => {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const path = new URL(req.url).pathname;
      const res = await fetch(`${chain.facilitatorUrl}${path}`, {
        method: req.method,
        headers: { "content-type": "application/json" },
        body: req.method === "POST" ? await req.text() : undefined,
      });
      if (path === "/settle") late.clock!.advance(SETTLE_RECHECK_GRACE_MS + 1);
      return res;
    });
    return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
  };
  // The sweep runs right after the `paid` record commits, before the live request consumes it.
  const wrapKv = (kv: Deno.Kv) =>
    kvThrough(kv, {
      atomic: () => {
        let paid = false;
        return {
          set: (key, value) =>
            void (paid ||= key[0] === "commerce_payment" && (value as PaymentRecord).state === "paid"),
          commit: async (real) => {
            const res = await real();
            if (paid && res.ok && late.sweep && !late.swept) late.swept = await late.sweep();
            return res;
          },
        };
      },
    });
  await withChainWorld({ facilitator: slow, wrapKv, upstream: true }, async ({ chain, clock, w, http }) => {
    late.clock = clock;
    await w.addPayg(20_000);
    const { token } = await w.agents.issue();
    const client = evmClient(token);
    late.sweep = () => w.deps.commerce.settleSweep.sweep();
    const res = await client.fetch(`${http.url}/v2/search?data_model_id=${w.dataModelId}`, postJson({ query: "x" }));
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.ok(late.swept, "the sweep ran between the paid record and its consume");
    assert.deepEqual((late.swept as { resolved: unknown[] }).resolved, [], "the call's own request consumes it");
    assert.equal((await evmRecords(w))[0].value.state, "consumed");
    assert.equal(chain.settlements.length, 1);
  });
});

Deno.test("settlement sweep: an authorization is failed as expired only once the chain's latest block is well past its validBefore (a block just past it may be reorganised away)", async () => {
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, false) }, async ({ chain, clock, w, http }) => {
    const alice = await buyer(w, http.url);
    await alice.lostPurchase();
    const [pending] = await evmRecords(w);
    const validBefore = Number(pending.value.authorization!.validBefore);
    const rpc = rpcOf(chain);
    const sweep = w.deps.commerce.settleSweep;

    // The latest block's time just reached validBefore: a reorg could still bring a block that used it.
    await rpc("evm_mine", [{ timestamp: validBefore + 60 }]);
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    const early = await sweep.sweep();
    assert.deepEqual([early.resolved, early.deferred], [[], 1]);
    assert.equal((await evmRecords(w))[0].value.state, "processing");

    // Well past it: no reorg reaches back that far, and it is failed.
    await rpc("evm_mine", [{ timestamp: validBefore + 16 * 60 }]);
    clock.advance(2 * 3600_000);
    const swept = await sweep.sweep();
    assert.deepEqual(swept.resolved, [{ reference: pending.value.reference, state: "failed" }]);
    assert.equal((await evmRecords(w))[0].value.settlementReason, "authorization_expired");
  });
});

/**
 * An RPC provider in front of the chain that serves `eth_getLogs` over at most `maxRange` blocks
 * (none at all with 0), as several providers do, fails the methods in `failing`, and answers
 * everything else as the chain does.
 */
function pickyProvider(chain: LocalChain, maxRange: number, failing: string[] = []) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    const call = JSON.parse(body);
    if (failing.includes(call.method)) {
      return Response.json({ jsonrpc: "2.0", id: call.id, error: { code: -32603, message: "internal error" } });
    }
    if (call.method === "eth_getLogs") {
      const { fromBlock, toBlock } = call.params[0];
      if (Number(BigInt(toBlock)) - Number(BigInt(fromBlock)) + 1 > maxRange) {
        const error = { code: -32005, message: `block range exceeds ${maxRange}` };
        return Response.json({ jsonrpc: "2.0", id: call.id, error });
      }
    }
    return await fetch(chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

Deno.test("settlement sweep: a settlement the chain cannot resolve (its provider refusing every log query) is rechecked for a bounded time, then taken off the list for the operator with an error, left processing", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), rpc: (c) => pickyProvider(c, 0) },
    async ({ clock, w, http }) => {
      const alice = await buyer(w, http.url);
      const lost = await alice.purchase();
      assert.equal(lost.status, 503);
      await lost.body?.cancel();
      const sweep = w.deps.commerce.settleSweep;
      const [pending] = await evmRecords(w);
      // Within 8 days and an hour of hourly sweeps.
      const bound = (8 * 24 + 1) * SETTLE_RECHECK_MAX_MS;
      const { givenUp, afterMs, sweeps } = await sweepUntilGivenUp(
        clock,
        sweep,
        bound,
        (out) => assert.deepEqual(out.resolved, []),
      );
      assert.equal(givenUp, 1, `given up after ${sweeps} sweeps`);
      assert.ok(afterMs <= bound, `given up ${afterMs / SETTLE_RECHECK_MAX_MS} hours after its claim`);
      assert.equal(await rechecksListed(w), 0, "no longer listed");
      const [left] = await evmRecords(w);
      assert.equal(left.value.state, "processing", "the operator's to resolve");
      const line = w.log.lines.find((l) => l.msg === "settlement recheck given up: resolve it by hand");
      assert.equal(line?.level, "error");
      assert.equal(line?.reference, pending.value.reference);
      clock.advance(SETTLE_RECHECK_MAX_MS);
      assert.equal((await sweep.sweep()).deferred, 0, "never looked at again");
      assert.equal(await creditOf(w, alice.agent), 0);
    },
  );
});

Deno.test("settlement sweep: a settlement whose transfer the node never confirms is given up after its bounded time, and its agent's reads stop asking the node about it", async () => {
  await withChainWorld(
    { rpc: (c) => pickyProvider(c, 2_000, ["eth_getTransactionReceipt"]) },
    async ({ chain, clock, w, http }) => {
      const alice = await buyer(w, http.url);
      const unconfirmed = await alice.purchase();
      assert.equal(unconfirmed.status, 503);
      await unconfirmed.body?.cancel();
      assert.equal(chain.settlements.length, 1);
      const [pending] = await evmRecords(w);
      assert.ok(pending.value.pendingTransfer, "the facilitator named its transaction");
      const listedForAgent = async () => {
        let n = 0;
        for await (const _ of w.deps.kv.list({ prefix: ["commerce_unconfirmed"] })) n++;
        return n;
      };
      assert.equal(await listedForAgent(), 1);
      const sweep = w.deps.commerce.settleSweep;
      const { givenUp } = await sweepUntilGivenUp(clock, sweep, 400 * SETTLE_RECHECK_MAX_MS);
      assert.equal(givenUp, 1);
      assert.equal((await evmRecords(w))[0].value.state, "processing", "the operator's to resolve");
      assert.equal(await rechecksListed(w), 0);
      assert.equal(await listedForAgent(), 0, "its agent's entitlements reads no longer ask the node about it");
    },
  );
});

Deno.test("settlement sweep: a settlement whose resolution keeps failing (its credit never commits) is asked again with backoff and given up like any unresolved one", async () => {
  const faults = kvFaults();
  await withChainWorld({ wrapKv: faults.wrap }, async ({ chain, clock, w, http }) => {
    try {
      const alice = await buyer(w, http.url);
      // The commit that consumes the payment and grants its credit always fails.
      failPaymentWrites(faults, 1_000_000, "consumed");
      await alice.failedPurchase();
      assert.equal((await evmRecords(w))[0].value.state, "paid");
      const sweep = w.deps.commerce.settleSweep;
      let sweeps = 0, givenUp = 0;
      const failures = () => w.log.lines.filter((l) => l.msg === "settlement recheck failed").length;
      // Swept when it is next due and a moment before, over the time 4,000 sweeps five minutes apart
      // took: what those sweeps found (about 2,300 of them to the give-up), in about 400. The sweep
      // before leaves it alone, the sweep at it asks again.
      const until = clock.now().getTime() + 4000 * (SETTLE_RECHECK_GRACE_MS + 1);
      const dueTimes: number[] = [];
      while (givenUp === 0 && clock.now().getTime() < until) {
        const due = (await evmRecords(w))[0].value.recheckAt!;
        dueTimes.push(due);
        const asked = failures();
        clock.set(due - 1);
        givenUp += (await sweep.sweep()).givenUp;
        assert.equal(failures(), asked, "not asked again before it is due");
        clock.set(due);
        givenUp += (await sweep.sweep()).givenUp;
        assert.equal(failures(), asked + 1, "asked again once due");
        sweeps += 2;
      }
      const attempts = failures();
      assert.equal(givenUp, 1, `given up after ${sweeps} sweeps`);
      assert.ok(attempts <= 8 * 24 + 10, `${attempts} attempts: backoff grows to hourly`);
      const waits = dueTimes.slice(1).map((at, i) => at - dueTimes[i]);
      assert.ok(waits.every((ms, i) => i === 0 || ms >= waits[i - 1]), `waits never shrink: ${waits}`);
      assert.equal(waits.at(-1), SETTLE_RECHECK_MAX_MS, "up to an hour");
      assert.equal(await rechecksListed(w), 0);
      assert.equal((await evmRecords(w))[0].value.state, "paid", "the operator's to credit");
      assert.equal(chain.settlements.length, 1);
    } finally {
      faults.failNext(0, { op: "set", entity: "commerce_payment" });
    }
  });
});

// Last in the file: the chain it leaves 12,000 blocks longer takes the next test's reset most of a second to undo.
Deno.test("settlement sweep: a settlement made many blocks after the sweep first looked is found from the block that look started at, in log ranges a provider serves", async () => {
  // A facilitator whose settle answer is lost, and which submits the settlement only later.
  let held: string | null = null;
  const facilitator = (c: LocalChain) => {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const path = new URL(req.url).pathname;
      const body = req.method === "POST" ? await req.text() : undefined;
      if (path === "/settle") {
        held = body!;
        return new Response("bad gateway", { status: 502 });
      }
      return fetch(`${c.facilitatorUrl}${path}`, {
        method: req.method,
        headers: { "content-type": "application/json" },
        body,
      });
    });
    return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
  };
  await withChainWorld({ facilitator, rpc: (c) => pickyProvider(c, 2_000) }, async ({ chain, clock, w, http }) => {
    const alice = await buyer(w, http.url);
    await alice.lostPurchase();
    const sweep = w.deps.commerce.settleSweep;
    clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    assert.equal((await sweep.sweep()).deferred, 1, "unused as yet");
    const [looked] = await evmRecords(w);
    assert.equal(typeof looked.value.logsFromBlock, "number", "the first look's start is kept");

    // Submitted later, then many blocks pass before the sweep looks again.
    const settled = await fetch(`${chain.facilitatorUrl}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: held!,
    });
    assert.equal(settled.status, 200, await settled.text());
    assert.equal(chain.settlements.length, 1);
    await rpcOf(chain)("evm_mine", [{ blocks: 12_000 }]);
    clock.advance(SETTLE_RECHECK_MAX_MS);
    const swept = await sweep.sweep();
    assert.deepEqual(swept.resolved, [{ reference: looked.value.reference, state: "consumed" }]);
    assert.equal((await evmRecords(w))[0].value.processorRef, chain.settlements[0]);
    assert.equal(await creditOf(w, alice.agent), 1_000_000);
  });
});
