/**
 * An unclaimed credential lives until its `expiresAt` and KV drops it a day later. Revoking one
 * (`admin identity revoke`) rewrote it without that lifetime, so a revoked anonymous credential was
 * kept for good; it now keeps the lifetime it had.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { AccountStore } from "../../core/identity/accounts.ts";
import type { Credential } from "../../core/identity/types.ts";
import { recordKvWrites } from "../_kv_writes.ts";

const DAY_MS = 86_400_000;

Deno.test("AccountStore.revokeCredential() keeps an unclaimed credential's KV lifetime (a day past its expiry)", async () => {
  const raw = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const w = recordKvWrites(raw);
    const cred: Credential = {
      credentialId: "ag_1",
      type: "anonymous",
      state: "unclaimed",
      sellerId: "sl_1",
      createdAt: clock.now().toISOString(),
      expiresAt: new Date(clock.now().getTime() + 3 * DAY_MS).toISOString(),
    };
    await raw.set(["credential", "ag_1"], cred, { expireIn: 4 * DAY_MS });
    clock.advance(DAY_MS);
    assert.equal(await new AccountStore(w.kv, clock).revokeCredential("ag_1"), true);
    const [write] = w.writes();
    assert.deepEqual(write?.key, ["credential", "ag_1"]);
    assert.equal(write?.expireIn, 3 * DAY_MS, "two days to its expiry, then a day");
  } finally {
    raw.close();
  }
});

Deno.test("AccountStore.revokeCredential() keeps a claimed credential for good (its purchases are the human's)", async () => {
  const raw = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const w = recordKvWrites(raw);
    const cred: Credential = {
      credentialId: "ag_2",
      type: "service_auth",
      state: "claimed",
      sellerId: "sl_1",
      accountId: "ac_1",
      createdAt: clock.now().toISOString(),
    };
    await raw.set(["credential", "ag_2"], cred);
    assert.equal(await new AccountStore(w.kv, clock).revokeCredential("ag_2"), true);
    assert.equal(w.writes()[0]?.expireIn, undefined);
    assert.ok((await raw.get<Credential>(["credential", "ag_2"])).value?.revokedAt);
  } finally {
    raw.close();
  }
});
