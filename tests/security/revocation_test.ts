/**
 * Finding 3: revoking a refresh family (reuse detected) left that family's identity assertions
 * exchanging for access tokens. Revocation must bite at /oauth2/token at once.
 */
import assert from "node:assert/strict";
import { runAdmin } from "../../cli/commands.ts";
import { json, storefrontWorld } from "../storefront/_world.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

async function claimedIdentity(w: Awaited<ReturnType<typeof storefrontWorld>>, email: string) {
  const reg = await json(
    await w.post("/agent/identity", {
      type: "identity_assertion",
      assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
      assertion: await w.idp.mint({ email }),
    }),
  );
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const id = reg.body.identity as { credential_id: string; assertion: string; refresh_token: { value: string } };
  return { credentialId: id.credential_id, assertion: id.assertion, refreshToken: id.refresh_token.value };
}

Deno.test("security: a revoked refresh family stops every assertion issued with it at /oauth2/token", async () => {
  await using w = await storefrontWorld();
  const exchange = async (assertion: string) =>
    json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion }));
  const first = await claimedIdentity(w, "reuse@example.com");
  const rotated = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: first.refreshToken }));
  assert.equal(rotated.status, 200);
  const second = (rotated.body.identity as { assertion: string }).assertion;
  assert.equal((await exchange(first.assertion)).status, 200, "before the reuse both exchange");
  assert.equal((await exchange(second)).status, 200);

  // A leaked, already-rotated refresh token is presented again: the family is revoked.
  const reuse = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: first.refreshToken }));
  assert.equal(reuse.body.error, "invalid_refresh_token");

  let accepted = 0;
  for (const assertion of [first.assertion, second]) {
    const r = await exchange(assertion);
    if (r.status === 200) accepted++;
    assert.equal(r.status, 400);
    assert.equal(r.body.error, "invalid_grant");
  }
  assert.equal(accepted, 0);
});

Deno.test("security: a revoked credential stops its assertions and refresh tokens at once; access tokens end within their TTL", async () => {
  await using w = await storefrontWorld();
  const id = await claimedIdentity(w, "gone@example.com");
  const token = await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: id.assertion }));
  const accessToken = token.body.access_token as string;

  const out = await runAdmin(w.deps, ["storefront", "revoke-credential", "--id", id.credentialId]) as {
    revoked: boolean;
    refreshFamiliesRevoked: number;
  };
  assert.equal(out.revoked, true);
  assert.equal(out.refreshFamiliesRevoked, 1);

  const ex = await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: id.assertion }));
  assert.equal(ex.status, 400);
  assert.equal(ex.body.error, "invalid_grant");
  const rf = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: id.refreshToken }));
  assert.equal(rf.body.error, "invalid_refresh_token");

  // The documented bound: an access token issued before the revocation lives out ACCESS_TOKEN_TTL_S, no longer.
  const ttlMs = w.deps.config.storefront.accessTokenTtlS * 1000;
  w.clock.advance(ttlMs - 1000);
  await w.deps.storefront.tokens.verifyAccessToken(accessToken);
  w.clock.advance(2000);
  await assert.rejects(() => w.deps.storefront.tokens.verifyAccessToken(accessToken));
});
