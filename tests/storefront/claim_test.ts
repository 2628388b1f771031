import assert from "node:assert/strict";
import { decideOnPage, json, mailCodeIn, SF, startServiceAuthClaim, storefrontWorld } from "./_world.ts";
import { startLocalSmtp } from "./_smtp.ts";
import { kvFaults } from "../_kv_faults.ts";

const complete = (claimToken: string, userCode: string) => ({ claim_token: claimToken, user_code: userCode });

Deno.test("claim: e-mail over real SMTP, confirm on the page, complete with the code -> claimed credential", async (t) => {
  await using smtp = await startLocalSmtp();
  await using w = await storefrontWorld({ env: { SMTP_URL: smtp.url, MAIL_FROM: "Shop <shop@example.com>" } });
  const { claimToken, verificationUri } = await startServiceAuthClaim(w, "grace@example.com");
  assert.ok(verificationUri.startsWith(`${SF}/claim/`), verificationUri);

  let mailCode = "";
  await t.step("the e-mail reaches the SMTP server and carries the link and the verification code", async () => {
    const [mail] = await smtp.waitFor(1);
    assert.deepEqual(mail!.to, ["grace@example.com"]);
    assert.equal(mail!.from, "shop@example.com");
    assert.ok(mail!.raw.replace(/=\r\n/g, "").includes(verificationUri), "link in the message");
    mailCode = mailCodeIn(mail!.raw)!;
    assert.match(mailCode, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  });
  await t.step("the outbox page does not exist while SMTP is configured", async () => {
    assert.equal((await w.app.request(`${SF}/dev/outbox`)).status, 404);
  });
  await t.step("completing before the human confirmed is claim_not_confirmed", async () => {
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, "BCDF-GHJK")));
    assert.equal(r.status, 409);
    assert.equal(r.body.error, "claim_not_confirmed");
  });

  const { userCode } = await decideOnPage(w, verificationUri, "confirm", { mailCode });
  assert.match(userCode!, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  assert.notEqual(userCode, mailCode, "the agent's code is not the e-mailed one");

  await t.step("the code is case-insensitive and the dash optional", async () => {
    const r = await json(
      await w.post("/agent/identity/claim/complete", complete(claimToken, userCode!.replace("-", "").toLowerCase())),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = r.body.identity as Record<string, unknown>;
    assert.equal(id.claimed, true);
    assert.equal(id.type, "service_auth");
    assert.equal((id.account as { email: string }).email, "grace@example.com");
    assert.match((id.refresh_token as { value: string }).value, /^rt_/);
    const account = await w.deps.storefront.accounts.account((id.account as { account_id: string }).account_id);
    assert.equal(account?.includedUnitsUnlockedAt, w.clock.now().toISOString(), "free included units unlock");
  });
  await t.step("the verified identity is returned once: a second completion is already_claimed", async () => {
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, userCode!)));
    assert.equal(r.status, 409);
    assert.equal(r.body.error, "already_claimed");
  });
  await t.step("the claim page now says the claim is confirmed", async () => {
    const page = await w.app.request(verificationUri);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Already confirmed|All done/);
  });
});

Deno.test("claim: every claim error code", async (t) => {
  await using w = await storefrontWorld();

  await t.step("invalid_claim_token: unknown or malformed claim token", async () => {
    for (const token of ["clt_" + "A".repeat(43), "nope"]) {
      const a = await json(
        await w.post("/agent/identity/claim", {
          type: "service_auth",
          claim_token: token,
          login_hint: "a@example.com",
        }),
      );
      assert.equal(a.status, 401);
      assert.equal(a.body.error, "invalid_claim_token");
      const b = await json(await w.post("/agent/identity/claim/complete", complete(token, "BCDFGHJK")));
      assert.equal(b.body.error, "invalid_claim_token");
    }
  });
  await t.step("invalid_login_hint: plus-aliased, malformed, or not the address the claim was opened for", async () => {
    const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "ann@example.com" }));
    const token = (reg.body.claim as { token: string }).token;
    for (const hint of ["ann+agents@example.com", "nope", "bob@example.com", 7]) {
      const r = await json(
        await w.post("/agent/identity/claim", { type: "service_auth", claim_token: token, login_hint: hint }),
      );
      assert.equal(r.status, 400, String(hint));
      assert.equal(r.body.error, "invalid_login_hint");
    }
  });
  await t.step("invalid_request: type other than service_auth, or claim_token missing", async () => {
    const a = await json(
      await w.post("/agent/identity/claim", { type: "anonymous", claim_token: "x", login_hint: "a@example.com" }),
    );
    assert.equal(a.body.error, "invalid_request");
    const b = await json(await w.post("/agent/identity/claim/complete", { user_code: "BCDFGHJK" }));
    assert.equal(b.body.error, "invalid_request");
  });
  await t.step("claim_denied: the human pressed deny", async () => {
    const { claimToken, verificationUri } = await startServiceAuthClaim(w, "deny@example.com");
    const page = await decideOnPage(w, verificationUri, "deny");
    assert.match(page.html, /denied/i);
    assert.equal(page.userCode, null);
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, "BCDFGHJK")));
    assert.equal(r.status, 403);
    assert.equal(r.body.error, "claim_denied");
  });
  await t.step("claim_expired: the link lives 10 minutes", async () => {
    const { claimToken, verificationUri } = await startServiceAuthClaim(w, "slow@example.com");
    w.clock.advance(600_000);
    const page = await w.app.request(verificationUri);
    assert.equal(page.status, 410);
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, "BCDFGHJK")));
    assert.equal(r.status, 410);
    assert.equal(r.body.error, "claim_expired");
  });
  await t.step("invalid_user_code x5, then too_many_attempts even with the right code", async () => {
    const { claimToken, verificationUri } = await startServiceAuthClaim(w, "typo@example.com");
    const { userCode } = await decideOnPage(w, verificationUri, "confirm");
    const wrong = userCode === "BBBB-BBBB" ? "CCCC-CCCC" : "BBBB-BBBB";
    for (const bad of [wrong, "AEIO-UAEI", "short", wrong, wrong]) {
      const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, bad)));
      assert.equal(r.status, 400);
      assert.equal(r.body.error, "invalid_user_code");
    }
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, userCode!)));
    assert.equal(r.status, 403);
    assert.equal(r.body.error, "too_many_attempts");
  });
  await t.step("user_code_expired: a code not used within CLAIM_TTL_S", async () => {
    const { claimToken, verificationUri } = await startServiceAuthClaim(w, "later@example.com");
    w.clock.advance(300_000);
    const { userCode } = await decideOnPage(w, verificationUri, "confirm");
    w.clock.advance(600_000);
    const r = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, userCode!)));
    assert.equal(r.status, 410);
    assert.equal(r.body.error, "user_code_expired");
  });
  await t.step("a newer claim e-mail replaces the older link", async () => {
    const { claimToken, verificationUri } = await startServiceAuthClaim(w, "twice@example.com");
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "twice@example.com",
    });
    assert.equal((await w.app.request(verificationUri)).status, 404);
  });
});

Deno.test("claim: two concurrent completions with the right code, exactly one wins", async () => {
  await using w = await storefrontWorld();
  const { claimToken, verificationUri } = await startServiceAuthClaim(w, "race@example.com");
  const { userCode } = await decideOnPage(w, verificationUri, "confirm");
  const results = await Promise.all(
    Array.from(
      { length: 4 },
      () => w.post("/agent/identity/claim/complete", complete(claimToken, userCode!)).then(json),
    ),
  );
  assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body.error)));
  assert.deepEqual(results.filter((r) => r.status !== 200).map((r) => r.body.error), [
    "already_claimed",
    "already_claimed",
    "already_claimed",
  ]);
  let creds = 0;
  for await (const _ of w.deps.kv.list({ prefix: ["credential"] })) creds++;
  assert.equal(creds, 1, "one credential exists");
});

Deno.test("claim: an unclaimed anonymous credential is claimed the same way; old tokens keep the unclaimed state", async (t) => {
  await using w = await storefrontWorld();
  const reg = await json(await w.post("/agent/identity", { type: "anonymous" }));
  const id = reg.body.identity as { credential_id: string; assertion: string };
  const claimToken = (reg.body.claim as { token: string }).token;
  const before = await json(
    await w.form("/oauth2/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: id.assertion,
    }),
  );
  const oldAccess = before.body.access_token as string;

  const req = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "anon@example.com",
    }),
  );
  const uri = (req.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri;
  const { userCode } = await decideOnPage(w, uri, "confirm");
  const done = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, userCode!)));
  assert.equal(done.status, 200);
  const claimed = done.body.identity as Record<string, unknown>;
  assert.equal(claimed.credential_id, id.credential_id, "the same credential, now claimed");
  assert.equal(claimed.claimed, true);
  assert.equal(claimed.expires_at, undefined, "claimed credentials do not expire");

  await t.step("the access token exchanged before the claim still says unclaimed", async () => {
    const principal = await w.deps.storefront.tokens.verifyAccessToken(oldAccess);
    assert.equal(principal.claimed, false);
    assert.equal(principal.accountId, null);
  });
  await t.step("exchanging again (even the old assertion) yields a claimed token", async () => {
    const again = await json(
      await w.form("/oauth2/token", {
        grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
        assertion: id.assertion,
      }),
    );
    const principal = await w.deps.storefront.tokens.verifyAccessToken(again.body.access_token as string);
    assert.equal(principal.claimed, true);
    assert.ok(principal.accountId?.startsWith("hu_"));
  });
  await t.step("claiming it again is already_claimed", async () => {
    const r = await json(
      await w.post("/agent/identity/claim", {
        type: "service_auth",
        claim_token: claimToken,
        login_hint: "anon@example.com",
      }),
    );
    assert.equal(r.body.error, "already_claimed");
  });
  await t.step(
    "the outbox page lists the claim e-mail to an operator key only (MAIL_OUTBOX, no SMTP_URL)",
    async () => {
      assert.equal((await w.app.request(`${SF}/dev/outbox`)).status, 401);
      const { key } = await w.deps.operatorKeys.create();
      const page = await w.app.request(`${SF}/dev/outbox`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.ok(html.includes("anon@example.com"));
      assert.ok(html.includes(uri));
    },
  );
});

Deno.test("claim: interaction_required's claim attaches a new credential to the existing account", async () => {
  await using w = await storefrontWorld();
  const reg = (jag: string) => ({
    type: "identity_assertion",
    assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
    assertion: jag,
  });
  const first = await json(await w.post("/agent/identity", reg(await w.idp.mint({ email: "known@example.com" }))));
  const accountId = ((first.body.identity as Record<string, unknown>).account as { account_id: string }).account_id;
  const second = await json(await w.post("/agent/identity", reg(await w.idp.mint({ email: "known@example.com" }))));
  assert.equal(second.body.error, "interaction_required");
  const token = (second.body.claim as { token: string }).token;
  const req = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: token,
      login_hint: "known@example.com",
    }),
  );
  const { userCode } = await decideOnPage(
    w,
    (req.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri,
    "confirm",
  );
  const done = await json(await w.post("/agent/identity/claim/complete", complete(token, userCode!)));
  assert.equal(done.status, 200);
  const id = done.body.identity as Record<string, unknown>;
  assert.equal((id.account as { account_id: string }).account_id, accountId);
  assert.equal(id.type, "identity_assertion");
  assert.equal((await w.deps.storefront.accounts.credentialIds(accountId)).length, 2);
});

Deno.test("claim page: the decision needs the page's CSRF token and cookie", async (t) => {
  await using w = await storefrontWorld();
  const { verificationUri } = await startServiceAuthClaim(w, "csrf@example.com");
  const page = await w.app.request(verificationUri);
  const html = await page.text();
  assert.equal(page.headers.get("cache-control"), "no-store");
  assert.equal(page.headers.get("referrer-policy"), "same-origin");
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const post = (headers: Record<string, string>, fields: Record<string, string>) =>
    w.app.request(verificationUri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  await t.step("no cookie", async () => {
    assert.equal((await post({}, { csrf, decision: "confirm" })).status, 403);
  });
  await t.step("field does not match the cookie", async () => {
    assert.equal((await post({ cookie }, { csrf: "A".repeat(43), decision: "confirm" })).status, 403);
  });
  await t.step("a cross-site Origin", async () => {
    assert.equal((await post({ cookie, origin: "https://evil.example" }, { csrf, decision: "confirm" })).status, 403);
  });
  await t.step("still pending after the refused attempts", async () => {
    assert.equal((await w.deps.storefront.claims.pageState(verificationUri.split("/").pop()!)).kind, "pending");
  });
  await t.step("an unknown link is a 404 page", async () => {
    assert.equal((await w.app.request(`${SF}/claim/${"x".repeat(43)}`)).status, 404);
  });
});

Deno.test("claim page: page loads and code submits are rate-limited per client address, like the claim API", async (t) => {
  await using w = await storefrontWorld({
    env: { STOREFRONT_RATE_LIMIT: "3", STOREFRONT_RATE_WINDOW_S: "60", TRUST_PROXY: "1" },
  });
  // The agent's two API calls come from its own address.
  const { verificationUri } = await startServiceAuthClaim(w, "flood@example.com");
  const from = (addr: string) => ({ "x-forwarded-for": `10.9.9.9, ${addr}` });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await w.app.request(verificationUri, { headers: from("192.0.2.7") });
    statuses.push(res.status);
    if (res.status === 429) {
      assert.equal(res.headers.get("retry-after"), "60");
      assert.equal((await res.json()).error, "rate_limit_exceeded");
      assert.match(res.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    } else await res.body?.cancel();
  }
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  await t.step("a code submit from the same address is refused before it counts as a try", async () => {
    const res = await w.form(
      verificationUri.slice(SF.length),
      { csrf: "x", mail_code: "BCDF-GHJK" },
      from("192.0.2.7"),
    );
    assert.equal(res.status, 429);
    await res.body?.cancel();
  });
  await t.step("another address has its own window", async () => {
    const res = await w.app.request(verificationUri, { headers: from("192.0.2.8") });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});

Deno.test("claim: a claim token sends its e-mail only from the storefront it was opened at", async () => {
  await using w = await storefrontWorld();
  await w.deps.storefront.sellers.create({
    sellerId: "acme",
    tenantId: "tn_x",
    name: "Acme",
    hosts: ["shop.acme.test"],
  });
  const mails = async () => (await (w.deps.mailer as unknown as { list(n: number): Promise<unknown[]> }).list(100));
  const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "ann@example.com" }));
  const claimToken = (reg.body.claim as { token: string }).token;
  // Another seller's host: the e-mail would name Acme and link to Acme's claim page while the page named the
  // demo seller, and it counted on the demo seller's claim e-mail budget, not Acme's.
  const elsewhere = await json(
    await w.app.request("http://shop.acme.test/agent/identity/claim", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "service_auth", claim_token: claimToken, login_hint: "ann@example.com" }),
    }),
  );
  assert.equal(elsewhere.status, 401);
  assert.equal(elsewhere.body.error, "invalid_claim_token");
  assert.ok(!JSON.stringify(elsewhere.body).includes(claimToken), "the token is not echoed");
  assert.equal((await mails()).length, 0, "no e-mail went out");
  // At its own storefront the same token still works.
  const home = await w.post("/agent/identity/claim", {
    type: "service_auth",
    claim_token: claimToken,
    login_hint: "ann@example.com",
  });
  assert.equal(home.status, 200);
  assert.equal((await mails()).length, 1);
});

Deno.test("claim: the human's deny ends the claim; the agent cannot mail them again to undo it", async () => {
  await using w = await storefrontWorld();
  const mails = async () => (await (w.deps.mailer as unknown as { list(n: number): Promise<unknown[]> }).list(100));
  const { claimToken, verificationUri } = await startServiceAuthClaim(w, "dora@example.com");
  assert.equal((await decideOnPage(w, verificationUri, "deny")).userCode, null);
  assert.equal((await mails()).length, 1);
  // Asking again replaced the denied attempt with a fresh e-mail: the "no" was erased and the human asked anew.
  const again = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "dora@example.com",
    }),
  );
  assert.equal(again.status, 403);
  assert.equal(again.body.error, "claim_denied");
  assert.equal((await mails()).length, 1, "no second e-mail");
  const done = await json(await w.post("/agent/identity/claim/complete", complete(claimToken, "BCDFGHJK")));
  assert.equal(done.status, 403);
  assert.equal(done.body.error, "claim_denied");
});

Deno.test("claim: e-mails that could not be sent do not count against the claim's five", async () => {
  const faults = kvFaults();
  await using w = await storefrontWorld({ wrapKv: faults.wrap });
  const email = "outage@example.com";
  const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: email }));
  const claimToken = (reg.body.claim as { token: string }).token;
  const ask = () =>
    w.post("/agent/identity/claim", { type: "service_auth", claim_token: claimToken, login_hint: email });
  // The mailer is down for five tries (the outbox's write fails each time).
  faults.failNext(5, { op: "set", entity: "outbox" });
  for (let i = 0; i < 5; i++) {
    const r = await json(await ask());
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error, "mail_unavailable");
  }
  assert.equal(faults.left, 0);
  // Back up: the human gets the e-mail, since none was sent.
  const sent = await json(await ask());
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
});
