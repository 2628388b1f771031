import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { OAuthService } from "../../core/identity/oauth.ts";
import { kvThrough } from "../_kv_proxy.ts";

/** `kv` whose next `get` runs `meanwhile` before it answers: another request's step between a read and a write. */
function kvWithInterleaving(kv: Deno.Kv): { kv: Deno.Kv; next(meanwhile: () => Promise<unknown>): void } {
  let pending: (() => Promise<unknown>) | null = null;
  const wrapped = kvThrough(kv, {
    get: async (_key, real) => {
      const entry = await real();
      const meanwhile = pending;
      pending = null;
      await meanwhile?.();
      return entry;
    },
  });
  return { kv: wrapped, next: (meanwhile) => (pending = meanwhile) };
}

Deno.test("consent page: an e-mail claim attached while the request is decided does not bring the request back", async () => {
  const store = await Deno.openKv(":memory:");
  try {
    const { kv, next } = kvWithInterleaving(store);
    // Only the request store is used here: no clients, accounts, tokens or settings.
    const unused = {} as never;
    const oauth = new OAuthService(kv, new FixedClock("2026-03-01T12:00:00Z"), unused, unused, unused, unused, unused);
    const id = await oauth.saveRequest({
      clientId: "client-1",
      redirectUri: "http://127.0.0.1:9/callback",
      codeChallenge: "c".repeat(43),
      resource: "http://svc.test/mcp",
    });
    // The human sends "e-mail me a code" and, in another tab, "continue anonymously": the second
    // decides the request between the first one's read and its write.
    let decided: unknown = null;
    next(async () => (decided = await oauth.takeRequest(id)));
    await oauth.attachClaim(id, { token: "claim-token", link: "claim-link", email: "reader@example.com" });
    assert.ok(decided, "the other tab decided the request");
    assert.equal(await oauth.loadRequest(id), null, "the decided request stays ended");
    assert.equal(await oauth.takeRequest(id), null, "it cannot be decided a second time");
  } finally {
    store.close();
  }
});
