/**
 * A retired signing key verifies every token signed with it until that token expires: other
 * processes keep signing with the key they loaded (up to `SigningKeyStore.RELOAD_MS`) after a
 * rotation elsewhere, and their clocks may run a few seconds ahead of the rotating process's.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { SigningKeyStore } from "../../core/identity/keys.ts";
import { TokenService } from "../../core/identity/tokens.ts";
import type { Credential } from "../../core/identity/types.ts";

const TTL_S = 3600;
const settings = {
  issuer: "https://network.example",
  resource: "https://shop.example",
  accessTokenTtlS: 300,
  assertionTtlS: TTL_S,
};
const cred: Credential = {
  credentialId: "ag_1",
  type: "service_auth",
  state: "claimed",
  sellerId: "sl_1",
  accountId: "ac_1",
  createdAt: "2026-11-22T12:00:00.000Z",
};

Deno.test("SigningKeyStore: a token signed with the old key just before another process's cache renews still verifies until its exp", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    // Two processes on one KV: A rotates, B had loaded the key list just before.
    const a = new SigningKeyStore(kv, clock, TTL_S);
    const b = new SigningKeyStore(kv, clock, TTL_S);
    const oldKid = (await a.current()).kid;
    assert.equal((await b.current()).kid, oldKid);
    await a.rotate();
    // Within B's reload interval B still signs with the key it loaded.
    clock.advance(SigningKeyStore.RELOAD_MS - 1000);
    const { assertion } = await new TokenService(b, clock, settings).mintAssertion(cred);
    // One second before it expires, a process that has just loaded the keys verifies it.
    clock.advance(TTL_S * 1000 - 1000);
    const fresh = new SigningKeyStore(kv, clock, TTL_S);
    const got = await new TokenService(fresh, clock, settings).verifyAssertion(assertion);
    assert.equal(got.credentialId, "ag_1");
  } finally {
    kv.close();
  }
});

Deno.test("SigningKeyStore: a process whose clock runs a few seconds ahead of the rotating one signs tokens the old key still verifies", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const ahead = new FixedClock(clock.now().getTime() + 5000);
    const a = new SigningKeyStore(kv, clock, TTL_S);
    const b = new SigningKeyStore(kv, ahead, TTL_S);
    const oldKid = (await a.current()).kid;
    assert.equal((await b.current()).kid, oldKid);
    await a.rotate();
    // B signs with the key it loaded, at the same instant, its clock 5 s ahead.
    const { assertion } = await new TokenService(b, ahead, settings).mintAssertion(cred);
    ahead.advance(TTL_S * 1000 - 1000);
    const fresh = new SigningKeyStore(kv, ahead, TTL_S);
    assert.equal((await new TokenService(fresh, ahead, settings).verifyAssertion(assertion)).credentialId, "ag_1");
  } finally {
    kv.close();
  }
});
