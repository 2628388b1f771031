/**
 * KV drops a record by its own clock (the KV server's, under KV Connect); each process judges the
 * record's logical expiry by its own. A record KV was asked to drop at the very instant of its logical
 * end is gone while a process whose clock runs a few seconds behind still honours it: a conversation's
 * follow-up got 404, a paid Idempotency-Key ran (and charged) again, a registered OAuth client was
 * unknown, a repeat click counted twice. Each is now kept `KV_EXPIRY_SLACK_MS` past its logical end.
 */
import assert from "node:assert/strict";
import { CONVERSATION_TTL_MS, ConversationStore } from "../../core/answer/conversation.ts";
import { FixedClock, KV_EXPIRY_SLACK_MS } from "../../core/clock.ts";
import type { PaymentTerms } from "../../core/commerce/challenges.ts";
import { type HeldKey, IdempotencyKeys } from "../../core/commerce/idempotency.ts";
import { OAuthClients } from "../../core/identity/oauth_clients.ts";
import { ClickGate } from "../../core/links/click_gate.ts";
import { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { recordKvWrites } from "../_kv_writes.ts";

/** The lifetime KV was last asked to give the one key under `prefix`. */
function askedFor(writes: ReturnType<typeof recordKvWrites>, prefix: string): number {
  const w = writes.writes().filter((w) => w.key[0] === prefix);
  assert.equal(w.length, 1, `one ${prefix} record`);
  assert.ok(w[0]!.expireIn !== undefined, `${prefix} expires in KV`);
  return w[0]!.expireIn!;
}

const SKEW_MS = 30_000;

Deno.test("KV lifetimes: a record outlives its logical expiry in KV by more than a clock skew", async (t) => {
  const raw = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    await t.step("conversation (30 minutes from its last turn)", async () => {
      const w = recordKvWrites(raw);
      const store = new ConversationStore(w.kv, clock);
      const turn = await store.prepare("tn_a", "am_a", "Storm roads?", { conversation: true });
      await store.remember("tn_a", "am_a", turn, "Storm roads?", "Closed.");
      assert.ok(askedFor(w, "conversation") >= CONVERSATION_TTL_MS + SKEW_MS);
    });
    await t.step("Idempotency-Key (a day from its success)", async () => {
      const w = recordKvWrites(raw);
      const keys = new IdempotencyKeys(w.kv, clock);
      const terms: PaymentTerms = {
        action: "purchase",
        sellerId: "sl_1",
        planId: "pl_1",
        amountUsd: "1.000000",
        currency: "usd",
        agent: "ag_1",
      };
      const ref = (await keys.lookup(new Headers({ "idempotency-key": "k-1" }), terms))!;
      const held = await keys.hold(ref) as HeldKey;
      await keys.remember(held, { body: {}, receipts: [] });
      assert.ok(askedFor(w, "commerce_idem") >= 24 * 3600_000 + SKEW_MS);
    });
    await t.step("OAuth client (CLIENT_TTL_S from registration)", async () => {
      const w = recordKvWrites(raw);
      await new OAuthClients(w.kv, clock).register({ redirect_uris: ["http://127.0.0.1:3000/cb"] });
      assert.ok(askedFor(w, "oauth_client") >= OAuthClients.CLIENT_TTL_S * 1000 + SKEW_MS);
    });
    await t.step("click dedupe mark (its window)", async () => {
      const w = recordKvWrites(raw);
      const gate = new ClickGate({
        kv: w.kv,
        clock,
        perAddress: new FixedWindowLimiter(raw, clock, { scope: "c", limit: 100, windowS: 60 }),
        dedupeWindowS: 600,
        linkTtlS: 86_400,
      });
      const click = { issuedAt: Math.floor(clock.now().getTime() / 1000) } as Parameters<ClickGate["verdict"]>[0];
      assert.equal(await gate.verdict(click, { method: "GET", address: "192.0.2.1", token: "t1" }), "counted");
      assert.ok(askedFor(w, "click_seen") >= 600_000 + SKEW_MS);
    });
    assert.ok(KV_EXPIRY_SLACK_MS >= SKEW_MS);
  } finally {
    raw.close();
  }
});
