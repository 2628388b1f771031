import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { json, SF, storefrontWorld } from "./_world.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

Deno.test("anonymous: an unclaimed credential at once, expiring after 3 days", async (t) => {
  await using w = await storefrontWorld();
  const r = await json(await w.post("/agent/identity", { type: "anonymous" }));
  assert.equal(r.status, 201);
  const id = r.body.identity as Record<string, unknown>;
  assert.equal(id.claimed, false);
  assert.equal(id.state, "unclaimed");
  assert.equal(id.refresh_token, undefined, "unclaimed anonymous credentials carry no refresh token");
  assert.equal(id.expires_at, "2026-11-25T12:00:00.000Z");
  assert.match((r.body.claim as { token: string }).token, /^clt_/);
  assert.equal(decodeJwt(id.assertion as string).exp, Date.parse("2026-11-25T12:00:00Z") / 1000);

  await t.step("its assertion exchanges until the credential expires, then is invalid_grant", async () => {
    const ok = await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: id.assertion as string }));
    assert.equal(ok.status, 200);
    w.clock.advance(3 * 86400_000 - 1000);
    assert.equal(
      (await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: id.assertion as string })).status,
      200,
    );
    w.clock.advance(1000);
    const gone = await json(
      await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: id.assertion as string }),
    );
    assert.equal(gone.status, 400);
    assert.equal(gone.body.error, "invalid_grant");
  });
});

Deno.test("anonymous: ANONYMOUS_TTL_S sets the lifetime; ANONYMOUS_REGISTRATION=false refuses", async () => {
  await using short = await storefrontWorld({ env: { ANONYMOUS_TTL_S: "3600" } });
  const r = await json(await short.post("/agent/identity", { type: "anonymous" }));
  assert.equal((r.body.identity as { expires_at: string }).expires_at, "2026-11-22T13:00:00.000Z");

  await using off = await storefrontWorld({ env: { ANONYMOUS_REGISTRATION: "false" } });
  const refused = await json(await off.post("/agent/identity", { type: "anonymous" }));
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error, "anonymous_registration_disabled");
  assert.equal(typeof refused.body.detail, "string");
});

Deno.test("service_auth: a claim token, no credential; login_hint must be an e-mail", async (t) => {
  await using w = await storefrontWorld();
  const r = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "Grace@Example.com" }));
  assert.equal(r.status, 200);
  assert.equal(r.body.identity, undefined, "no credential exists until the claim completes");
  const claim = r.body.claim as { token: string; login_hint: string };
  assert.match(claim.token, /^clt_/);
  assert.equal(claim.login_hint, "grace@example.com");
  let credentials = 0;
  for await (const _ of w.deps.kv.list({ prefix: ["credential"] })) credentials++;
  assert.equal(credentials, 0);

  for (const bad of [undefined, "", "not-an-email", "a@b", 42, "a b@example.com", "x".repeat(250) + "@example.com"]) {
    await t.step(`login_hint ${JSON.stringify(bad)?.slice(0, 20)} -> invalid_login_hint`, async () => {
      const res = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: bad }));
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_login_hint");
    });
  }
});

Deno.test("service_auth: SERVICE_AUTH_REGISTRATION=false refuses", async () => {
  await using w = await storefrontWorld({ env: { SERVICE_AUTH_REGISTRATION: "false" } });
  const r = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "a@example.com" }));
  assert.equal(r.status, 403);
  assert.equal(r.body.error, "service_auth_registration_disabled");
});

Deno.test("POST /agent/identity: malformed bodies are 400 invalid_request", async (t) => {
  await using w = await storefrontWorld();
  const cases: [string, RequestInit][] = [
    ["not JSON", { body: "{nope", headers: { "content-type": "application/json" } }],
    ["not an object", { body: "[1]", headers: { "content-type": "application/json" } }],
    ["wrong content type", {
      body: "type=anonymous",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    }],
    ["unknown type", { body: JSON.stringify({ type: "magic" }), headers: { "content-type": "application/json" } }],
    ["type missing", { body: "{}", headers: { "content-type": "application/json" } }],
    ["refresh without refresh_token", {
      body: JSON.stringify({ type: "refresh" }),
      headers: { "content-type": "application/json" },
    }],
  ];
  for (const [name, init] of cases) {
    await t.step(name, async () => {
      const r = await json(await w.app.request(`${SF}/agent/identity`, { method: "POST", ...init }));
      assert.equal(r.status, 400);
      assert.equal(r.body.error, "invalid_request");
    });
  }
});

Deno.test("refresh: rotates; reusing a rotated-out token is invalid_refresh_token and revokes the family", async (t) => {
  await using w = await storefrontWorld();
  const reg = await json(
    await w.post("/agent/identity", {
      type: "identity_assertion",
      assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
      assertion: await w.idp.mint({ email: "linus@example.com" }),
    }),
  );
  const rt1 = ((reg.body.identity as Record<string, unknown>).refresh_token as { value: string }).value;

  const r2 = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: rt1 }));
  assert.equal(r2.status, 200);
  const id2 = r2.body.identity as Record<string, unknown>;
  const rt2 = (id2.refresh_token as { value: string }).value;
  assert.notEqual(rt2, rt1);
  assert.equal(id2.claimed, true);
  assert.equal(id2.credential_id, (reg.body.identity as Record<string, unknown>).credential_id);

  await t.step("the old token is refused and takes its successor down with it", async () => {
    const reuse = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: rt1 }));
    assert.equal(reuse.status, 401);
    assert.equal(reuse.body.error, "invalid_refresh_token");
    const successor = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: rt2 }));
    assert.equal(successor.status, 401);
    assert.equal(successor.body.error, "invalid_refresh_token");
  });
  await t.step("an unknown token is invalid_refresh_token", async () => {
    for (const token of ["rt_" + "A".repeat(43), "garbage"]) {
      const r = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: token }));
      assert.equal(r.body.error, "invalid_refresh_token");
    }
  });
  await t.step("two concurrent uses of one token: one rotation wins, the family is revoked", async () => {
    const reg2 = await json(
      await w.post("/agent/identity", {
        type: "identity_assertion",
        assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
        assertion: await w.idp.mint({ email: "twice@example.com" }),
      }),
    );
    const rt = ((reg2.body.identity as Record<string, unknown>).refresh_token as { value: string }).value;
    const both = await Promise.all(
      [1, 2].map(() => w.post("/agent/identity", { type: "refresh", refresh_token: rt }).then(json)),
    );
    assert.equal(both.filter((r) => r.status === 200).length, 1);
    assert.equal(both.filter((r) => r.body.error === "invalid_refresh_token").length, 1);
  });
  await t.step("a refresh token past REFRESH_TOKEN_TTL_S is refused", async () => {
    const reg3 = await json(
      await w.post("/agent/identity", {
        type: "identity_assertion",
        assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
        assertion: await w.idp.mint({ email: "old@example.com" }),
      }),
    );
    const rt = ((reg3.body.identity as Record<string, unknown>).refresh_token as { value: string }).value;
    w.clock.advance(90 * 86400_000);
    const r = await json(await w.post("/agent/identity", { type: "refresh", refresh_token: rt }));
    assert.equal(r.body.error, "invalid_refresh_token");
  });
});

Deno.test("sellers: an unknown host is 404 seller_not_found unless a default seller answers", async (t) => {
  await t.step("no default seller (STOREFRONT_DEFAULT_SELLER=none)", async () => {
    await using w = await storefrontWorld({ env: { STOREFRONT_DEFAULT_SELLER: "none" } });
    const known = await w.post("/agent/identity", { type: "anonymous" });
    assert.equal(known.status, 201, "the demo seller's own host answers");
    const r = await json(
      await w.app.request("http://unknown.test/agent/identity", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "anonymous" }),
      }),
    );
    assert.equal(r.status, 404);
    assert.equal(r.body.error, "seller_not_found");
  });
  await t.step("the embedded default: the demo seller answers any host", async () => {
    await using w = await storefrontWorld();
    const r = await w.app.request("http://anything.test/agent/identity", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "anonymous" }),
    });
    assert.equal(r.status, 201);
  });
  await t.step("a registered host resolves to its own seller", async () => {
    await using w = await storefrontWorld({ env: { STOREFRONT_DEFAULT_SELLER: "none" } });
    await w.deps.storefront.sellers.create({
      sellerId: "acme",
      tenantId: "tn_x",
      name: "Acme",
      hosts: ["shop.acme.test"],
    });
    const r = await json(
      await w.app.request("http://shop.acme.test/agent/identity", {
        method: "POST",
        headers: { "content-type": "application/json", host: "Shop.Acme.test" },
        body: JSON.stringify({ type: "anonymous" }),
      }),
    );
    assert.equal(r.status, 201);
    const cred = await w.deps.storefront.accounts.credential(
      (r.body.identity as { credential_id: string }).credential_id,
    );
    assert.equal(cred?.sellerId, "acme");
  });
});

Deno.test("rate limit: identity and claim routes answer 429 rate_limit_exceeded per client address", async (t) => {
  await using w = await storefrontWorld({
    env: { STOREFRONT_RATE_LIMIT: "3", STOREFRONT_RATE_WINDOW_S: "60", TRUST_PROXY: "1" },
  });
  const from = (addr: string) => ({ "x-forwarded-for": `10.9.9.9, ${addr}` });
  for (let i = 0; i < 3; i++) {
    assert.equal((await w.post("/agent/identity", { type: "anonymous" }, from("192.0.2.1"))).status, 201);
  }
  const r = await w.post(
    "/agent/identity/claim",
    { type: "service_auth", claim_token: "x", login_hint: "a@b.co" },
    from("192.0.2.1"),
  );
  assert.equal(r.status, 429);
  const body = await r.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.equal(body.retry_after, 60);
  assert.equal(r.headers.get("retry-after"), "60");

  await t.step("another address has its own window; the spoofable left entry is ignored", async () => {
    assert.equal((await w.post("/agent/identity", { type: "anonymous" }, from("192.0.2.2"))).status, 201);
  });
  await t.step("the window resets with the clock", async () => {
    w.clock.advance(60_000);
    assert.equal((await w.post("/agent/identity", { type: "anonymous" }, from("192.0.2.1"))).status, 201);
  });
  await t.step(
    "IPv6 addresses of one /64 are one client (rotating the interface id gets no fresh window)",
    async () => {
      const statuses = [];
      for (let i = 1; i <= 4; i++) {
        statuses.push((await w.post("/agent/identity", { type: "anonymous" }, from(`2001:db8:5:6::${i}`))).status);
      }
      assert.deepEqual(statuses, [201, 201, 201, 429]);
      const otherNetwork = await w.post("/agent/identity", { type: "anonymous" }, from("2001:db8:5:7::1"));
      assert.equal(otherNetwork.status, 201);
    },
  );
  await t.step("the token endpoint is not rate-limited here", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion: "x" }, from("192.0.2.1"));
      assert.equal(res.status, 400);
    }
  });
});
