/**
 * Settlement written once: the reference claim in PaymentStore and the token charge every lane
 * uses (purchases and pay-as-you-go calls), on real KV and the sandbox processor.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { AppError } from "../../core/errors.ts";
import type { PaymentTerms } from "../../core/commerce/challenges.ts";
import { EntitlementLedger } from "../../core/commerce/entitlements.ts";
import { type PaymentRecord, PaymentStore } from "../../core/commerce/payments.ts";
import { SANDBOX_TOKENS, SandboxProcessor } from "../../core/commerce/processor.ts";
import { Settlement, settlementReasonOf, STALE_PROCESSING_MS } from "../../core/commerce/settlement.ts";
import type { Seller } from "../../core/commerce/types.ts";
import { httpStatus } from "../../routes/error_status.ts";

const SELLER: Seller = { sellerId: "sel_1", tenantId: "t_1", name: "S1", hosts: ["store.test"], createdAt: "" };

const TERMS: PaymentTerms = {
  action: "call",
  sellerId: "sel_1",
  planId: "plan_payg",
  amountUsd: "0.010000",
  currency: "usd",
  agent: "cred_1",
  service: "demo-news",
};

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock();
  const payments = new PaymentStore(kv, clock);
  const processor = new SandboxProcessor();
  const ledger = new EntitlementLedger(kv, clock);
  const settlement = new Settlement({
    clock,
    payments,
    ledger,
    processor,
    statusUrl: (ref) => `http://store.test/payments/${ref}`,
  });
  const charge = (reference: string, token: string) =>
    settlement.chargeToken({ rail: "wallet", reference, seller: SELLER, terms: TERMS, micros: 10_000, token }, "q");
  return { kv, clock, payments, processor, ledger, settlement, charge, [Symbol.dispose]: () => kv.close() };
}

const record = (reference: string, at: string): PaymentRecord => ({
  reference,
  sellerId: "sel_1",
  rail: "wallet",
  state: "processing",
  terms: TERMS,
  amountMicros: 10_000,
  createdAt: at,
  updatedAt: at,
});

Deno.test("PaymentStore.claim(): of 20 concurrent claims of one reference exactly one wins", async () => {
  using s = await setup();
  const at = s.clock.now().toISOString();
  const results = await Promise.all(Array.from({ length: 20 }, () => s.payments.claim(record("ref_race_0001", at))));
  assert.equal(results.filter((r) => r !== null).length, 1);
  const won = results.find((r) => r !== null)!;
  assert.equal((await s.payments.get("sel_1", "ref_race_0001")).versionstamp, won.versionstamp);
  // A take-over replaces only the exact entry it names; release frees the reference.
  assert.equal(
    await s.payments.claim(record("ref_race_0001", at), { ...won, versionstamp: "00000000000000000000" }),
    null,
  );
  const taken = await s.payments.claim(record("ref_race_0001", at), won);
  assert.ok(taken);
  assert.equal(await s.payments.release(won), false);
  assert.equal(await s.payments.release(taken), true);
  assert.equal((await s.payments.get("sel_1", "ref_race_0001")).value, null);
});

Deno.test("Settlement.chargeToken(): concurrent charges of one reference charge once; the rest get the reference's state", async () => {
  using s = await setup();
  const out = await Promise.allSettled(
    Array.from({ length: 10 }, () => s.charge("ref_once_00001", SANDBOX_TOKENS.wallet.success)),
  );
  const ok = out.filter((o) => o.status === "fulfilled");
  assert.equal(ok.length, 1);
  assert.equal(s.processor.ledger.length, 1);
  for (const o of out) {
    if (o.status === "rejected") {
      assert.ok(o.reason instanceof AppError);
      assert.equal(o.reason.code, "payment_incomplete");
      assert.equal(o.reason.detail, "a charge is in progress; retry shortly");
    }
  }
  const charged = (ok[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof s.charge>>>).value;
  await s.settlement.consumeCall(charged.entry, charged.processorRef, SELLER);
  const spent = await s.charge("ref_once_00001", SANDBOX_TOKENS.wallet.success).then(() => null, (e) => e);
  assert.equal(spent?.code, "payment_consumed");
  assert.equal(httpStatus(spent), 409);
});

Deno.test("Settlement.chargeToken() maps each outcome once: decline, outage, missing token", async (t) => {
  using s = await setup();
  await t.step("a decline is 402 settlement_failed and leaves the reference failed", async () => {
    const err = await s.charge("ref_decline_001", SANDBOX_TOKENS.wallet.insufficientFunds).then(() => null, (e) => e);
    assert.equal(httpStatus(err), 402);
    assert.equal(err?.code, "settlement_failed");
    assert.equal(err?.detail, "retry from the start for a fresh challenge");
    assert.deepEqual(err?.extra, { settlementReason: "insufficient_funds" });
    assert.equal((await s.payments.get("sel_1", "ref_decline_001")).value?.state, "failed");
  });
  await t.step("an outage is 503 payment_provider_unavailable with Retry-After, and frees the reference", async () => {
    const err = await s.charge("ref_outage_0001", SANDBOX_TOKENS.wallet.unavailable).then(() => null, (e) => e);
    assert.equal(httpStatus(err), 503);
    assert.equal(err?.code, "payment_provider_unavailable");
    assert.deepEqual(err?.headers, { "retry-after": "2" });
    assert.equal((await s.payments.get("sel_1", "ref_outage_0001")).value, null);
  });
  await t.step("a payload without a token is 400 invalid_request", () => {
    assert.throws(
      () => s.settlement.tokenOf({}),
      (e: AppError) => e.code === "invalid_request" && httpStatus(e) === 400,
    );
    assert.equal(s.settlement.tokenOf({ token: "wal_test_success" }), "wal_test_success");
  });
});

Deno.test("Settlement.chargeToken() takes over a claim left processing by a dead process only after the grace period", async () => {
  using s = await setup();
  const at = s.clock.now().toISOString();
  assert.ok(await s.payments.claim(record("ref_stale_0001", at)));
  const early = await s.charge("ref_stale_0001", SANDBOX_TOKENS.wallet.success).then(() => null, (e) => e);
  assert.equal(early?.code, "payment_incomplete");
  s.clock.advance(STALE_PROCESSING_MS + 1);
  const charged = await s.charge("ref_stale_0001", SANDBOX_TOKENS.wallet.success);
  assert.equal(charged.entry.value.state, "processing");
  assert.equal(charged.entry.value.createdAt, at);
  assert.equal(s.processor.ledger.length, 1);
});

Deno.test("settlementReasonOf(): mppx's problem type as a code, never its detail", () => {
  const cases: [unknown, string][] = [
    [
      { type: "https://paymentauth.org/problems/invalid-challenge", detail: 'Challenge "x" is invalid' },
      "invalid_challenge",
    ],
    [{ type: "https://paymentauth.org/problems/verification-failed" }, "verification_failed"],
    [{ type: "https://paymentauth.org/problems/session/insufficient-balance" }, "insufficient_balance"],
    [{ type: "https://evil.example/problems/LEAK<x>", detail: "x" }, "payment_not_settled"],
    [{ type: "https://paymentauth.org/problems/LEAK<x>" }, "payment_not_settled"],
    [{ detail: "no type" }, "payment_not_settled"],
    [null, "payment_not_settled"],
  ];
  for (const [problem, reason] of cases) assert.equal(settlementReasonOf(problem), reason);
});
