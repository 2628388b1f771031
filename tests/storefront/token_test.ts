import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from "jose";
import * as oauth from "oauth4webapi";
import { ISSUER, json, SF, storefrontWorld } from "./_world.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

async function anonymousAssertion(w: Awaited<ReturnType<typeof storefrontWorld>>): Promise<string> {
  const r = await json(await w.post("/agent/identity", { type: "anonymous" }));
  return (r.body.identity as { assertion: string }).assertion;
}

Deno.test("oauth4webapi discovers the authorization server and runs the jwt-bearer grant", async (t) => {
  await using w = await storefrontWorld();
  const opts = {
    [oauth.customFetch]: (url: string, init: RequestInit) => Promise.resolve(w.app.request(url, init)),
    [oauth.allowInsecureRequests]: true,
  };
  const issuer = new URL(ISSUER);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }),
  );
  assert.equal(as.issuer, ISSUER);
  assert.equal(as.token_endpoint, `${SF}/oauth2/token`);
  assert.equal(as.jwks_uri, `${SF}/.well-known/jwks.json`);
  assert.ok(as.grant_types_supported?.includes(JWT_BEARER));
  assert.deepEqual(as.authorization_grant_profiles_supported, ["urn:ietf:params:oauth:grant-profile:id-jag"]);
  assert.ok(Array.isArray(as.response_types_supported));
  const agentAuth = as.agent_auth as Record<string, string>;
  assert.equal(agentAuth.registration_endpoint, `${SF}/agent/identity`);
  assert.equal(agentAuth.claim_endpoint, `${SF}/agent/identity/claim`);
  assert.equal(agentAuth.entitlements_endpoint, `${SF}/agent/entitlements`);

  await t.step("the protected resource metadata (RFC 9728) names the authorization server", async () => {
    const resource = new URL(SF);
    const rs = await oauth.processResourceDiscoveryResponse(
      resource,
      await oauth.resourceDiscoveryRequest(resource, opts),
    );
    assert.deepEqual(rs.authorization_servers, [ISSUER]);
    assert.deepEqual(rs.bearer_methods_supported, ["header"]);
    assert.equal(rs.jwks_uri, `${SF}/.well-known/jwks.json`);
  });

  await t.step("the grant returns a 5-minute Bearer token verifiable with the published JWKS", async () => {
    const client = { client_id: "agent" };
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      JWT_BEARER,
      new URLSearchParams({ assertion: await anonymousAssertion(w) }),
      opts,
    );
    assert.equal(res.headers.get("cache-control"), "no-store");
    const tokens = await oauth.processGenericTokenEndpointResponse(as, client, res);
    assert.equal(tokens.token_type, "bearer");
    assert.equal(tokens.expires_in, 300);
    const jwks = await (await w.app.request(as.jwks_uri!)).json();
    const header = decodeProtectedHeader(tokens.access_token);
    assert.equal(header.typ, "at+jwt");
    const key = jwks.keys.find((k: { kid: string }) => k.kid === header.kid);
    const { payload } = await jwtVerify(tokens.access_token, await importJWK(key, "EdDSA"), {
      issuer: ISSUER,
      audience: SF,
      currentDate: w.clock.now(),
    });
    assert.equal(payload.exp! - payload.iat!, 300);
    assert.equal(typeof payload.jti, "string");
    assert.equal(payload.claimed, false);
  });

  await t.step("errors come back in the RFC 6749 shape oauth4webapi reads", async () => {
    const client = { client_id: "agent" };
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      JWT_BEARER,
      new URLSearchParams({ assertion: "junk" }),
      opts,
    );
    await assert.rejects(() => oauth.processGenericTokenEndpointResponse(as, client, res), (e: unknown) => {
      assert.ok(e instanceof oauth.ResponseBodyError);
      assert.equal(e.error, "invalid_grant");
      return true;
    });
  });
});

Deno.test("POST /oauth2/token: each failure has its RFC 6749 code", async (t) => {
  await using w = await storefrontWorld();
  const good = await anonymousAssertion(w);
  const cases: [string, Record<string, string> | string, string, string?][] = [
    ["grant_type missing", { assertion: good }, "invalid_request"],
    ["assertion missing", { grant_type: JWT_BEARER }, "invalid_request"],
    ["assertion empty", { grant_type: JWT_BEARER, assertion: "" }, "invalid_request"],
    [
      "grant_type repeated",
      `grant_type=${encodeURIComponent(JWT_BEARER)}&grant_type=x&assertion=${good}`,
      "invalid_request",
    ],
    ["another grant type", { grant_type: "client_credentials", assertion: good }, "unsupported_grant_type"],
    ["an assertion that is not a JWT", { grant_type: JWT_BEARER, assertion: "junk" }, "invalid_grant"],
    ["a tampered assertion", { grant_type: JWT_BEARER, assertion: good.slice(0, -4) + "AAAA" }, "invalid_grant"],
    ["a wrong content type", "json", "invalid_request", "application/json"],
  ];
  for (const [name, fields, code, type] of cases) {
    await t.step(`${name} -> ${code}`, async () => {
      const res = await w.app.request(`${SF}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": type ?? "application/x-www-form-urlencoded" },
        body: typeof fields === "string" ? fields : new URLSearchParams(fields).toString(),
      });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.equal(body.error, code);
      assert.equal(typeof body.error_description, "string");
      assert.deepEqual(Object.keys(body).sort(), ["error", "error_description"]);
    });
  }
  await t.step("an access token presented as an assertion is invalid_grant", async () => {
    const at = (await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: good }))).body
      .access_token as string;
    const r = await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: at }));
    assert.equal(r.body.error, "invalid_grant");
  });
  await t.step("an ID-JAG presented directly is invalid_grant (it is registered at /agent/identity)", async () => {
    const r = await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: await w.idp.mint() }));
    assert.equal(r.body.error, "invalid_grant");
  });
  await t.step("access tokens are not stored", async () => {
    const keys: unknown[] = [];
    for await (const e of w.deps.kv.list({ prefix: [] })) keys.push(e.key[0]);
    assert.ok(!keys.some((k) => String(k).includes("access")), JSON.stringify([...new Set(keys)]));
  });
});

Deno.test("signing keys: kept in KV, rotatable, old key still verifies and stays in the JWKS", async () => {
  await using w = await storefrontWorld();
  const a1 = await anonymousAssertion(w);
  const kid1 = decodeProtectedHeader(a1).kid;
  const kid2 = await w.deps.storefront.keys.rotate();
  assert.notEqual(kid1, kid2);
  const jwks = await (await w.app.request(`${SF}/.well-known/jwks.json`)).json();
  assert.deepEqual(jwks.keys.map((k: { kid: string }) => k.kid).sort(), [kid1, kid2].sort());
  for (const k of jwks.keys) assert.equal(k.d, undefined, "no private part is published");
  const a2 = await anonymousAssertion(w);
  assert.equal(decodeProtectedHeader(a2).kid, kid2);
  for (const a of [a1, a2]) {
    assert.equal((await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: a })).status, 200);
  }
  assert.equal(decodeJwt(a2).iss, ISSUER);
});

Deno.test("POST /oauth2/token (jwt-bearer): an assertion with under a second left is expired (invalid_grant), never a token of 0 s", async () => {
  await using w = await storefrontWorld();
  // A start inside a second, as a real clock is: the credential then ends inside one too.
  w.clock.advance(250);
  const assertion = await anonymousAssertion(w);
  const cred = await w.deps.storefront.accounts.credential(decodeJwt(assertion).sub!);
  const endMs = Date.parse(cred!.expiresAt!);
  assert.notEqual(endMs % 1000, 0);
  const exchange = async () => await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion }));

  // A second and a bit left: a token of 1 s, which verifies until its end.
  w.clock.set(endMs - 1_200);
  const last = await exchange();
  assert.equal(last.status, 200, JSON.stringify(last.body));
  assert.equal(last.body.expires_in, 1);
  await w.deps.storefront.tokens.verifyAccessToken(last.body.access_token as string);
  // Less than a second left: the assertion (whole seconds, never past the credential) has ended.
  w.clock.set(endMs - 200);
  const refused = await exchange();
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.error, "invalid_grant");
});
