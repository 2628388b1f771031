/**
 * A paid call's reservation when the call's process dies (or its settle fails) between the reserve
 * and the settle: the credit comes back once the reservation is older than any call in flight,
 * on the next paid call of any agent, and never while the call may still be running.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { type Debit, EntitlementLedger, STALE_RESERVATION_MS } from "../../core/commerce/entitlements.ts";
import type { AuthenticatedAgent } from "../../core/commerce/types.ts";

const SELLER = "sel_1";
const PLAN = "plan_credit";

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock();
  const ledger = new EntitlementLedger(kv, clock);
  const grant = async (agent: AuthenticatedAgent, micros: number) => {
    const g = await ledger.prepareGrant(agent, SELLER, PLAN, micros);
    assert.ok((await kv.atomic().check(g.current).set(g.key, g.next).commit()).ok);
  };
  const credit = async (agent: AuthenticatedAgent) =>
    (await ledger.entries(agent, SELLER)).reduce((n, e) => n + e.value.creditMicros, 0);
  return { kv, clock, ledger, grant, credit, [Symbol.dispose]: () => kv.close() };
}

const agentA: AuthenticatedAgent = { credentialId: "ag_a", claimed: true, humanId: "hu_a" };
const agentB: AuthenticatedAgent = { credentialId: "ag_b", claimed: true, humanId: "hu_b" };

Deno.test("EntitlementLedger.reserve() returns a reservation its dead call never settled, once it is stale", async () => {
  using s = await setup();
  await s.grant(agentA, 100_000);
  await s.grant(agentB, 100_000);
  // The call's process is killed after the reserve commit: nothing ever settles req_dead.
  const dead = await s.ledger.reserve(agentA, SELLER, new Set([PLAN]), 10_000, "req_dead");
  assert.ok(dead.ok);
  assert.equal(await s.credit(agentA), 90_000);

  // Within the time a call may run, another call does not touch it.
  s.clock.advance(STALE_RESERVATION_MS - 1000);
  assert.ok((await s.ledger.reserve(agentB, SELLER, new Set([PLAN]), 1_000, "req_b1")).ok);
  assert.equal((await s.ledger.debit(SELLER, "req_dead"))?.state, "reserved");
  assert.equal(await s.credit(agentA), 90_000);

  // Past it, the next paid call (another agent's) gives the credit back, exactly once.
  s.clock.advance(2000);
  assert.ok((await s.ledger.reserve(agentB, SELLER, new Set([PLAN]), 1_000, "req_b2")).ok);
  assert.ok((await s.ledger.reserve(agentB, SELLER, new Set([PLAN]), 1_000, "req_b3")).ok);
  const after: Debit | null = await s.ledger.debit(SELLER, "req_dead");
  assert.equal(after?.state, "refunded");
  assert.equal(after?.amountMicros, 0);
  assert.equal(await s.credit(agentA), 100_000);
  assert.equal(await s.credit(agentB), 97_000);
  assert.equal(await s.ledger.hasHold(SELLER, agentA.credentialId), false);

  // A late settle of the dead call (a process that stalled rather than died) charges nothing more.
  assert.equal(await s.ledger.settle(SELLER, "req_dead", 10_000), 0);
  assert.equal(await s.credit(agentA), 100_000);
});

Deno.test("EntitlementLedger.settle() closes the reservation: a settled call is never returned later", async () => {
  using s = await setup();
  await s.grant(agentA, 100_000);
  assert.ok((await s.ledger.reserve(agentA, SELLER, new Set([PLAN]), 10_000, "req_ok")).ok);
  assert.equal(await s.ledger.settle(SELLER, "req_ok", 10_000), 10_000);
  assert.ok((await s.ledger.reserve(agentA, SELLER, new Set([PLAN]), 10_000, "req_part")).ok);
  assert.equal(await s.ledger.settle(SELLER, "req_part", 4_000), 4_000);
  s.clock.advance(STALE_RESERVATION_MS * 2);
  assert.ok((await s.ledger.reserve(agentA, SELLER, new Set([PLAN]), 1_000, "req_next")).ok);
  assert.equal((await s.ledger.debit(SELLER, "req_ok"))?.state, "billed");
  assert.equal((await s.ledger.debit(SELLER, "req_part"))?.amountMicros, 4_000);
  assert.equal(await s.credit(agentA), 85_000);
  const open = [];
  for await (const e of s.kv.list({ prefix: ["commerce_debit_open"] })) open.push(e.key);
  assert.equal(open.length, 1, "only the call still in flight is listed open");
});
