/**
 * The settlement sweep's limits (core/commerce/settle_sweep.ts): a stop waits for the payment in
 * hand, not a whole batch of slow node calls; a settlement the chain cannot resolve is not rechecked
 * for good, whatever `validBefore` its payer chose. Real local peers: a node that never answers.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { SETTLE_RECHECK_GRACE_MS } from "../../core/commerce/settlement.ts";
import { SETTLE_RECHECK_HORIZON_MS, SETTLE_RECHECK_MAX_MS, SettlementSweep } from "../../core/commerce/settle_sweep.ts";
import { type SettlementRecheck, StandardMethods } from "../../core/commerce/standard_methods.ts";
import { type CommerceWorld, createCommerceWorld } from "./_helpers.ts";

const EVM_ENV = {
  PAY_EVM_CHAIN_ID: "31337",
  PAY_EVM_TOKEN: `0x${"11".repeat(20)}`,
  PAY_EVM_RECIPIENT: `0x${"22".repeat(20)}`,
  PAY_X402_FACILITATOR_URL: "http://127.0.0.1:9",
};

/** A node that takes every request and never answers: what it was asked, and its address. */
function hangingNode() {
  const asked: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    asked.push(req.url);
    return new Promise<Response>((resolve) => req.signal.addEventListener("abort", () => resolve(new Response(null))));
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, asked, close: () => server.shutdown() };
}

/** `n` evm settlements left `processing` (their answers lost), due for a recheck now. */
async function dueSettlements(
  w: CommerceWorld,
  clock: FixedClock,
  n: number,
  validBefore = String(Math.floor(clock.now().getTime() / 1000) + 3600),
): Promise<string[]> {
  const now = clock.now();
  const refs: string[] = [];
  for (let i = 0; i < n; i++) {
    const reference = `evm_${String(i).padStart(32, "0")}`;
    const record: PaymentRecord = {
      reference,
      sellerId: w.sellerId,
      rail: "evm",
      state: "processing",
      terms: {
        action: "purchase",
        sellerId: w.sellerId,
        planId: w.plan.id,
        amountUsd: "1.000000",
        currency: "usd",
        agent: "agent_someone",
      },
      amountMicros: 1_000_000,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      authorization: {
        from: `0x${"33".repeat(20)}`,
        nonce: `0x${i.toString(16).padStart(64, "0")}`,
        value: "1000000",
        validBefore,
      },
      answerLost: true,
      recheckAt: now.getTime() + SETTLE_RECHECK_GRACE_MS,
    };
    assert.ok(await w.deps.commerce.service.payments.claim(record));
    refs.push(reference);
  }
  clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
  return refs;
}

/** A sweep of the world whose chain answers through `standard`. */
function sweepOf(w: CommerceWorld, clock: FixedClock, standard: Pick<StandardMethods, "recheckSettlement">) {
  const { service } = w.deps.commerce;
  return new SettlementSweep({
    kv: w.deps.kv,
    clock,
    log: w.deps.log,
    payments: service.payments,
    settlement: service.settlement,
    standard: standard as StandardMethods,
    ledger: service.ledger,
    calls: w.deps.commerce.proxy,
    agents: service.agents,
    sellers: w.deps.commerce.catalog,
    intervalMs: 60_000,
  });
}

Deno.test("settlement sweep: stop() on a hanging node waits for the payment in hand, not the rest of its batch", async () => {
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  const node = hangingNode();
  await using w = await createCommerceWorld({ clock, env: { ...EVM_ENV, PAY_EVM_RPC_URL: node.url } });
  try {
    await dueSettlements(w, clock, 5);
    // The node call's timeout, injected short: each recheck ends unconfirmed after it.
    const ASK_TIMEOUT_MS = 300;
    let rechecks = 0;
    let firstAsked: () => void = () => {};
    const asked = new Promise<void>((resolve) => (firstAsked = resolve));
    const sweep = sweepOf(w, clock, {
      recheckSettlement: async (): Promise<SettlementRecheck> => {
        rechecks++;
        firstAsked();
        await fetch(node.url, { method: "POST", signal: AbortSignal.timeout(ASK_TIMEOUT_MS) }).catch(() => {});
        return { check: "unconfirmed" };
      },
    });
    const running = sweep.sweep();
    await asked;
    const started = performance.now();
    await sweep.stop();
    const waited = performance.now() - started;
    assert.equal(rechecks, 1, "no payment after the one in hand");
    assert.ok(waited < 3 * ASK_TIMEOUT_MS, `stop waited ${Math.round(waited)} ms`);
    const out = await running;
    assert.equal(out.deferred, 1);
    assert.equal(out.staleReservations + out.abandonedCalls, 0, "nor the other kinds");
    // The rest are left listed for the next sweep (this process's or another's).
    assert.equal((await w.deps.commerce.service.payments.dueRechecks(clock.now().getTime(), 10)).length, 4);
    assert.ok((await sweep.sweep()).deferred > 0, "a sweep after the stop runs again");
  } finally {
    await node.close();
  }
});

for (const digits of [15, 16, 78]) {
  Deno.test(`settlement sweep: an unresolved settlement whose validBefore has ${digits} digits is given up, and logged for the operator, within the horizon after its claim`, async () => {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const claimedMs = clock.now().getTime();
    await using w = await createCommerceWorld({ clock, env: { ...EVM_ENV, PAY_EVM_RPC_URL: "http://127.0.0.1:9" } });
    const [reference] = await dueSettlements(w, clock, 1, "9".repeat(digits));
    // The chain never answers about it: each recheck ends unconfirmed.
    const sweep = sweepOf(w, clock, { recheckSettlement: () => Promise.resolve({ check: "unconfirmed" }) });
    let givenUp = 0;
    let sweeps = 0;
    // A day at a time (one recheck a day is still a recheck that finds it unknown), hourly over the
    // last two days before the horizon, where the give-up must land within the hour.
    const day = 24 * SETTLE_RECHECK_MAX_MS;
    while (givenUp === 0 && sweeps < 2 * SETTLE_RECHECK_HORIZON_MS / SETTLE_RECHECK_MAX_MS) {
      givenUp += (await sweep.sweep()).givenUp;
      const beforeHorizon = claimedMs + SETTLE_RECHECK_HORIZON_MS - clock.now().getTime();
      if (givenUp === 0) clock.advance(beforeHorizon > 2 * day ? day : SETTLE_RECHECK_MAX_MS);
      sweeps++;
    }
    assert.equal(givenUp, 1, `given up after ${sweeps} hourly sweeps`);
    const at = clock.now().getTime() - claimedMs;
    assert.ok(at >= SETTLE_RECHECK_HORIZON_MS, "rechecked until the horizon");
    assert.ok(at <= SETTLE_RECHECK_HORIZON_MS + SETTLE_RECHECK_MAX_MS, `given up ${at} ms after its claim`);
    const line = w.log.lines.find((l) => l.msg === "settlement recheck given up: resolve it by hand");
    assert.equal(line?.level, "error");
    assert.equal(line?.reference, reference);
    assert.equal((await w.deps.commerce.service.payments.dueRechecks(Number.MAX_SAFE_INTEGER, 10)).length, 0);
  });
}
