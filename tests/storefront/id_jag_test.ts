import assert from "node:assert/strict";
import { base64url } from "../../core/crypto.ts";
import { generateKeyPair, SignJWT } from "jose";
import { ISSUER, json, SF, storefrontWorld } from "./_world.ts";
import { ID_JAG_CLOCK_SKEW_S } from "../../core/identity/id_jag.ts";

const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";
const register = (assertion: string) => ({ type: "identity_assertion", assertion_type: ID_JAG, assertion });
const enc = (v: unknown) => base64url(new TextEncoder().encode(JSON.stringify(v)));

Deno.test("identity_assertion: a valid ID-JAG registers a credential born claimed", async (t) => {
  await using w = await storefrontWorld();
  const r = await json(await w.post("/agent/identity", register(await w.idp.mint({ email: "Ada@Example.com" }))));
  assert.equal(r.status, 201);
  const id = r.body.identity as Record<string, unknown>;
  assert.equal(id.claimed, true);
  assert.equal(id.type, "identity_assertion");
  assert.equal((id.account as { email: string }).email, "ada@example.com");
  assert.match((id.refresh_token as { value: string }).value, /^rt_/);
  assert.equal(typeof id.assertion, "string");

  await t.step("the storefront's own resource address is also an accepted audience", async () => {
    const r2 = await json(
      await w.post("/agent/identity", register(await w.idp.mint({ aud: SF, email: "x@example.com" }))),
    );
    assert.equal(r2.status, 201);
  });
  await t.step("an aud array holding only the issuer is accepted", async () => {
    const r3 = await json(
      await w.post("/agent/identity", register(await w.idp.mint({ aud: [ISSUER], email: "y@example.com" }))),
    );
    assert.equal(r3.status, 201);
  });
  await t.step("the same e-mail again answers 401 interaction_required with a claim block", async () => {
    const again = await json(await w.post("/agent/identity", register(await w.idp.mint({ email: "ada@example.com" }))));
    assert.equal(again.status, 401);
    assert.equal(again.body.error, "interaction_required");
    const claim = again.body.claim as { token: string; login_hint: string };
    assert.match(claim.token, /^clt_/);
    assert.equal(claim.login_hint, "ada@example.com");
  });
});

Deno.test("identity_assertion: each failed check answers its own code", async (t) => {
  await using w = await storefrontWorld();
  const now = Math.floor(w.clock.now().getTime() / 1000);
  const cases: [string, () => Promise<unknown>, number, string][] = [
    ["issuer not trusted", () => w.idp.mint({ iss: "https://evil.example" }), 403, "issuer_not_enabled"],
    ["wrong audience", () => w.idp.mint({ aud: "https://other.example" }), 401, "invalid_audience"],
    ["aud array of two", () => w.idp.mint({ aud: [ISSUER, SF] }), 401, "invalid_audience"],
    ["email missing", () => w.idp.mint({ email: undefined }), 403, "missing_verified_email"],
    ["email_verified false", () => w.idp.mint({ email_verified: false }), 403, "missing_verified_email"],
    ["email_verified the string true", () => w.idp.mint({ email_verified: "true" }), 403, "missing_verified_email"],
    ["exp in the past", () => w.idp.mint({ iat: now - 900, exp: now - 1 }), 401, "expired"],
    ["exp 601 s ahead", () => w.idp.mint({ exp: now + 601 }), 400, "invalid_request"],
    ["auth_time missing", () => w.idp.mint({ auth_time: undefined }), 401, "login_required"],
    ["auth_time 30 days and 1 s old", () => w.idp.mint({ auth_time: now - 30 * 86400 - 1 }), 401, "login_required"],
    ["jti missing", () => w.idp.mint({ jti: undefined }), 400, "invalid_request"],
    ["not a JWT", () => Promise.resolve("not-a-jwt"), 400, "invalid_request"],
  ];
  for (const [name, make, status, code] of cases) {
    await t.step(`${name} -> ${status} ${code}`, async () => {
      const r = await json(await w.post("/agent/identity", register((await make()) as string)));
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.error, code);
    });
  }
  await t.step("auth_time exactly 30 days old is still accepted", async () => {
    const r = await json(
      await w.post(
        "/agent/identity",
        register(await w.idp.mint({ auth_time: now - 30 * 86400, email: "edge@example.com" })),
      ),
    );
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
  await t.step("exp exactly 600 s ahead is accepted", async () => {
    const r = await json(
      await w.post("/agent/identity", register(await w.idp.mint({ exp: now + 600, email: "edge2@example.com" }))),
    );
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
  await t.step("assertion_type other than id-jag is invalid_request", async () => {
    const r = await json(await w.post("/agent/identity", { ...register(await w.idp.mint()), assertion_type: "urn:x" }));
    assert.equal(r.status, 400);
    assert.equal(r.body.error, "invalid_request");
  });
  await t.step("assertion missing is invalid_request", async () => {
    const r = await json(await w.post("/agent/identity", { type: "identity_assertion", assertion_type: ID_JAG }));
    assert.equal(r.body.error, "invalid_request");
  });
});

Deno.test("identity_assertion: a jti is single-use (replay_detected), also under concurrency", async () => {
  await using w = await storefrontWorld();
  const jag = await w.idp.mint({ email: "replay@example.com" });
  const first = await json(await w.post("/agent/identity", register(jag)));
  assert.equal(first.status, 201);
  const second = await json(await w.post("/agent/identity", register(jag)));
  assert.equal(second.status, 401);
  assert.equal(second.body.error, "replay_detected");

  const racer = await w.idp.mint({ email: "race@example.com" });
  const results = await Promise.all(
    Array.from({ length: 5 }, () => w.post("/agent/identity", register(racer)).then(json)),
  );
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.equal(results.filter((r) => r.body.error === "replay_detected").length, 4);
});

Deno.test("identity_assertion: expiry follows the injected clock", async () => {
  await using w = await storefrontWorld();
  const jag = await w.idp.mint({ email: "late@example.com" });
  w.clock.advance(301_000); // the ID-JAG lived 300 s
  const r = await json(await w.post("/agent/identity", register(jag)));
  assert.equal(r.status, 401);
  assert.equal(r.body.error, "expired");
});

Deno.test("identity_assertion: forged ID-JAGs are refused", async (t) => {
  await using w = await storefrontWorld();
  const now = Math.floor(w.clock.now().getTime() / 1000);
  const payload = {
    iss: w.idp.issuer,
    aud: ISSUER,
    sub: "mallory",
    iat: now,
    exp: now + 300,
    auth_time: now,
    email: "mallory@example.com",
    email_verified: true,
  };
  const check = async (assertion: string, code: string, status = 401) => {
    const r = await json(await w.post("/agent/identity", register(assertion)));
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.equal(r.body.error, code);
  };

  await t.step("alg none", async () => {
    const token = `${enc({ alg: "none", typ: "oauth-id-jag+jwt" })}.${enc({ ...payload, jti: "n1" })}.`;
    await check(token, "invalid_signature");
  });
  await t.step("HS256 keyed with the IdP's public key", async () => {
    const secret = new TextEncoder().encode(JSON.stringify(w.idp.publicJwk));
    const token = await new SignJWT({ ...payload, jti: "h1" })
      .setProtectedHeader({ alg: "HS256", typ: "oauth-id-jag+jwt", kid: w.idp.publicJwk.kid })
      .sign(secret);
    await check(token, "invalid_signature");
  });
  await t.step("wrong typ", async () => {
    await check(await w.idp.mint({}, { typ: "JWT" }), "invalid_request", 400);
  });
  await t.step("tampered payload", async () => {
    const good = await w.idp.mint({ email: "victim@example.com" });
    const [h, , s] = good.split(".");
    const forged = `${h}.${enc({ ...payload, jti: "t1", email: "admin@example.com" })}.${s}`;
    await check(forged, "invalid_signature");
  });
  await t.step("unknown kid (signed by a key the IdP never published)", async () => {
    const { privateKey } = await generateKeyPair("RS256");
    const token = await new SignJWT({ ...payload, jti: "k1" })
      .setProtectedHeader({ alg: "RS256", typ: "oauth-id-jag+jwt", kid: "attacker-key" })
      .sign(privateKey);
    await check(token, "invalid_signature");
  });
  await t.step("own key under the IdP's kid", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const token = await new SignJWT({ ...payload, jti: "k2" })
      .setProtectedHeader({ alg: "ES256", typ: "oauth-id-jag+jwt", kid: w.idp.publicJwk.kid })
      .sign(privateKey);
    await check(token, "invalid_signature");
  });
  await t.step("aud array of two", async () => {
    await check(await w.idp.mint({ aud: [ISSUER, "https://other.example"] }), "invalid_audience");
  });
  await t.step("a key we trust is not re-fetched on every request", () => {
    assert.ok(w.idp.jwksHits() <= 3, `jwks fetched ${w.idp.jwksHits()} times`);
  });
});

Deno.test("identity_assertion: an unreachable JWKS is 503 identity_provider_unavailable, never accepted", async () => {
  await using w = await storefrontWorld({ fetch: () => Promise.reject(new TypeError("connection refused")) });
  const r = await json(await w.post("/agent/identity", register(await w.idp.mint())));
  assert.equal(r.status, 503);
  assert.equal(r.body.error, "identity_provider_unavailable");
});

Deno.test("identity_assertion: an identity provider whose clock is a little ahead (nbf, iat) is accepted; exp gets no tolerance", async (t) => {
  await using w = await storefrontWorld();
  const now = Math.floor(w.clock.now().getTime() / 1000);
  const ahead = (s: number, email: string) =>
    w.idp.mint({ iat: now + s, nbf: now + s, exp: now + s + 300, auth_time: now + s - 60, email });
  await t.step("2 s ahead: registered", async () => {
    const r = await json(await w.post("/agent/identity", register(await ahead(2, "skew2@example.com"))));
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
  await t.step(`${ID_JAG_CLOCK_SKEW_S} s ahead: registered`, async () => {
    const r = await json(
      await w.post("/agent/identity", register(await ahead(ID_JAG_CLOCK_SKEW_S, "skew60@example.com"))),
    );
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
  await t.step("more ahead: nbf fails its check", async () => {
    const r = await json(
      await w.post("/agent/identity", register(await ahead(ID_JAG_CLOCK_SKEW_S + 1, "skew61@example.com"))),
    );
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error, "invalid_request");
  });
  await t.step("expired a second ago: still expired", async () => {
    const r = await json(
      await w.post(
        "/agent/identity",
        register(await w.idp.mint({ iat: now - 300, exp: now, email: "exp0@example.com" })),
      ),
    );
    assert.equal(r.status, 401, JSON.stringify(r.body));
    assert.equal(r.body.error, "expired");
    const past = await json(
      await w.post(
        "/agent/identity",
        register(await w.idp.mint({ iat: now - 300, exp: now - 30, email: "exp30@example.com" })),
      ),
    );
    assert.equal(past.body.error, "expired");
  });
});
