/**
 * Nothing an outsider can make the service write for free is kept in KV for good. A `:memory:` KV
 * shows no expiry, so these tests read the lifetime each write asked for (`tests/_kv_writes.ts`):
 * every key a flow writes must be one KV drops in time, or be named here with why it stays.
 */
import assert from "node:assert/strict";
import { consent } from "../mcp/_consent.ts";
import { keptForGood, recordKvWrites } from "../_kv_writes.ts";
import { SF, storefrontWorld } from "../storefront/_world.ts";

const DAY_MS = 86_400_000;
const REDIRECT = "http://127.0.0.1:53682/callback";

/** S256 of a PKCE verifier, base64url. */
async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

Deno.test("OAuth: an anonymous consent, its code grant and its refreshes write nothing KV keeps for good (refresh families expire with their tokens)", async () => {
  let writes: ReturnType<typeof recordKvWrites> | undefined;
  await using w = await storefrontWorld({ wrapKv: (kv) => (writes = recordKvWrites(kv)).kv });
  const { refreshTokenTtlS, assertionTtlS } = w.deps.config.storefront;
  // The seller, the signing key (made on first use) and the world's own records are the operator's:
  // only the flow is under test.
  await (await w.app.request(`${SF}/.well-known/jwks.json`)).body?.cancel();
  writes!.reset();

  const reg = await w.post("/oauth2/register", { redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" });
  assert.equal(reg.status, 201);
  const clientId = (await reg.json()).client_id as string;
  const verifier = "v".repeat(64);
  const url = new URL(`${SF}/oauth2/authorize`);
  for (
    const [k, v] of Object.entries({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: await s256(verifier),
      code_challenge_method: "S256",
      state: "s1",
      resource: `${SF}/mcp`,
    })
  ) url.searchParams.set(k, v);
  const back = await consent(w, url.href, "anonymous");
  const code = back.searchParams.get("code");
  assert.ok(code, back.href);
  const granted = await w.form("/oauth2/token", {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    client_id: clientId,
    code_verifier: verifier,
    resource: `${SF}/mcp`,
  });
  assert.equal(granted.status, 200, await granted.clone().text());
  let refreshToken = (await granted.json()).refresh_token as string;
  for (let i = 0; i < 2; i++) {
    const refreshed = await w.form("/oauth2/token", {
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: clientId,
    });
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    refreshToken = (await refreshed.json()).refresh_token;
  }

  assert.deepEqual(keptForGood(writes!.writes()), [], "records of the flow that KV keeps for good");
  // A family outlives its newest refresh token and the assertions minted with it, then goes.
  const families = writes!.writes().filter((x) => String(x.key[0]).endsWith("refresh_family"));
  assert.equal(families.length, 2);
  const longest = Math.max(refreshTokenTtlS, assertionTtlS) * 1000;
  for (const f of families) assert.ok(f.expireIn! > longest && f.expireIn! <= longest + DAY_MS, String(f.key[0]));
});
