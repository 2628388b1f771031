/**
 * An Idempotency-Key is kept for a day (docs/storefront.md): its paid result replays until then and
 * never after, whatever KV still holds (KV's `expireIn` only sets the earliest deletion; a `:memory:`
 * KV, like a lagging sweep, keeps the record readable).
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import type { PaymentTerms } from "../../core/commerce/challenges.ts";
import { type HeldKey, IdempotencyKeys } from "../../core/commerce/idempotency.ts";

const DAY_MS = 24 * 3600_000;
const terms = (amountUsd: string): PaymentTerms => ({
  action: "purchase",
  sellerId: "sl_1",
  planId: "pl_1",
  amountUsd,
  currency: "usd",
  agent: "ag_1",
});
const headers = new Headers({ "idempotency-key": "k-1" });

async function paidAt(kv: Deno.Kv, clock: FixedClock): Promise<IdempotencyKeys> {
  const keys = new IdempotencyKeys(kv, clock);
  const ref = (await keys.lookup(headers, terms("1.000000")))!;
  const held = await keys.hold(ref) as HeldKey;
  await keys.remember(held, { body: { ok: true }, receipts: [["payment-receipt", "r1"]] });
  return keys;
}

Deno.test("IdempotencyKeys: a paid result replays until its day ends, not at or after it", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const keys = await paidAt(kv, clock);
    clock.advance(DAY_MS - 1);
    const earlier = (await keys.lookup(headers, terms("1.000000")))!.earlier;
    assert.deepEqual(earlier && "kept" in earlier ? earlier.kept.body : null, { ok: true }, "replayed within the day");
    clock.advance(1);
    const ref = (await keys.lookup(headers, terms("1.000000")))!;
    assert.equal(ref.earlier, null, "a day later the key is free: the request runs anew");
    const held = await keys.hold(ref);
    assert.ok("versionstamp" in held, "the key is held again by the new request");
  } finally {
    kv.close();
  }
});

Deno.test("IdempotencyKeys: a key a day old is free for other terms (no 422 from a result no longer kept)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const keys = await paidAt(kv, clock);
    await assert.rejects(keys.lookup(headers, terms("2.000000")), { code: "idempotency_key_reused" });
    clock.advance(DAY_MS);
    assert.equal((await keys.lookup(headers, terms("2.000000")))!.earlier, null);
  } finally {
    kv.close();
  }
});
