/**
 * A paid call reserves its price before it is forwarded and settles after: a process that dies in
 * between (a restart, a crash) left the debit `reserved` and the credit taken for good, and its hold
 * told the allowance check "paid" for as long as KV kept it (for ever in a `:memory:` KV). A hold
 * now counts for ten minutes by the injected clock; after that the reservation goes back at the
 * agent's next paid call at that seller.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { EntitlementLedger, HOLD_MS } from "../../core/commerce/entitlements.ts";
import type { AuthenticatedAgent } from "../../core/commerce/types.ts";

const agent: AuthenticatedAgent = { credentialId: "ag_1", claimed: false };
const plans = new Set(["pl_1"]);

async function ledgerWithCredit(kv: Deno.Kv, clock: FixedClock, micros: number): Promise<EntitlementLedger> {
  const ledger = new EntitlementLedger(kv, clock);
  const g = await ledger.prepareGrant(agent, "sl_1", "pl_1", micros);
  assert.ok((await kv.atomic().check(g.current).set(g.key, g.next).commit()).ok);
  return ledger;
}

Deno.test("EntitlementLedger: a reservation its process never settled goes back once its hold lapses, not before", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const ledger = await ledgerWithCredit(kv, clock, 1_000_000);
    assert.equal((await ledger.reserve(agent, "sl_1", plans, 1_000_000, "rq_dead")).ok, true);
    // The forwarding process dies here: nothing settles rq_dead.
    assert.deepEqual(await ledger.reserve(agent, "sl_1", plans, 1_000_000, "rq_2"), { ok: false, why: "exhausted" });
    assert.equal(await ledger.hasHold("sl_1", "ag_1"), true, "a call in flight is paid for");
    clock.advance(HOLD_MS - 1);
    assert.deepEqual(await ledger.reserve(agent, "sl_1", plans, 1_000_000, "rq_3"), { ok: false, why: "exhausted" });
    assert.equal(await ledger.hasHold("sl_1", "ag_1"), true);
    clock.advance(1);
    assert.equal(await ledger.hasHold("sl_1", "ag_1"), false, "a lapsed hold no longer counts, whatever KV keeps");
    assert.equal((await ledger.reserve(agent, "sl_1", plans, 1_000_000, "rq_4")).ok, true, "the credit came back");
    assert.equal((await ledger.debit("sl_1", "rq_dead"))?.state, "refunded");
    // Were the first call still running, its late settlement bills nothing: the credit is charged once.
    assert.equal(await ledger.settle("sl_1", "rq_dead", 1_000_000), 0);
    const [ent] = await ledger.entries(agent, "sl_1");
    assert.equal(ent!.value.creditMicros, 0);
  } finally {
    kv.close();
  }
});

Deno.test("EntitlementLedger: a pay-as-you-go call's hold counts for ten minutes, then no longer", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const ledger = new EntitlementLedger(kv, clock);
    await ledger.holdCall("sl_1", "ag_1", "rq_1", 10_000);
    assert.equal(await ledger.hasHold("sl_1", "ag_1"), true);
    clock.advance(HOLD_MS);
    assert.equal(await ledger.hasHold("sl_1", "ag_1"), false);
  } finally {
    kv.close();
  }
});
