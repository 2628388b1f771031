import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { parseConfig } from "../../core/config.ts";
import { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { readCounting } from "../_kv_proxy.ts";
import { isEmail, isPlusAliased, normalizeEmail } from "../../core/identity/emails.ts";
import { formatUserCode, newUserCode, normalizeUserCode, USER_CODE_ALPHABET } from "../../core/identity/user_code.ts";

Deno.test("newUserCode() draws 8 characters from the RFC 8628 base-20 alphabet", () => {
  assert.equal(USER_CODE_ALPHABET, "BCDFGHJKLMNPQRSTVWXZ");
  const seen = new Set<string>();
  for (let i = 0; i < 500; i++) {
    const code = newUserCode();
    assert.match(code, /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
    for (const ch of code) seen.add(ch);
  }
  assert.equal(seen.size, 20, "every letter of the alphabet appears");
  assert.equal(formatUserCode("BCDFGHJK"), "BCDF-GHJK");
});

Deno.test("normalizeUserCode() is case-insensitive, dash optional, and refuses other letters", () => {
  for (const input of ["BCDF-GHJK", "bcdf-ghjk", "bcdfghjk", " BCDF GHJK "]) {
    assert.equal(normalizeUserCode(input), "BCDFGHJK");
  }
  for (const input of ["BCDF-GHJ", "ABCD-EFGH", "BCDF-GHJK-L", "12345678", ""]) {
    assert.equal(normalizeUserCode(input), null);
  }
});

Deno.test("isEmail() and isPlusAliased()", () => {
  assert.ok(isEmail("ada.lovelace@example.co.uk"));
  for (const bad of ["a@b", "@example.com", "a@@example.com", "a b@example.com", "a@-x.com", "", null]) {
    assert.ok(!isEmail(bad));
  }
  assert.ok(isPlusAliased("ada+shop@example.com"));
  assert.ok(!isPlusAliased("ada@exa+mple.com"));
  assert.equal(normalizeEmail(" Ada@Example.COM "), "ada@example.com");
});

Deno.test("FixedWindowLimiter.hit() counts per key per window, exactly, under concurrency", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:10Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "t", limit: 5, windowS: 60 });
    const results = await Promise.all(Array.from({ length: 8 }, () => limiter.hit("1.2.3.4")));
    assert.equal(results.filter((r) => r.allowed).length, 5);
    const denied = results.find((r) => !r.allowed)!;
    assert.equal(denied.retryAfterS, 50);
    assert.ok((await limiter.hit("5.6.7.8")).allowed);
    clock.advance(50_000);
    assert.ok((await limiter.hit("1.2.3.4")).allowed, "a new window");
  } finally {
    kv.close();
  }
});

Deno.test("FixedWindowLimiter.hit(): a key this process counted last costs one commit, no read; two processes still count exactly", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:10Z");
    const reads = { n: 0 };
    const counted = readCounting(kv, reads);
    const a = new FixedWindowLimiter(counted, clock, { scope: "t", limit: 10, windowS: 60 });
    const b = new FixedWindowLimiter(kv, clock, { scope: "t", limit: 10, windowS: 60 });
    for (let i = 0; i < 4; i++) assert.ok((await a.hit("k")).allowed);
    assert.equal(reads.n, 1, "only the first hit of the window reads the count");
    // Another process counts in between: this one's kept count is stale, fails its check and is read again.
    for (let i = 0; i < 3; i++) assert.ok((await b.hit("k")).allowed);
    const after = await a.hit("k");
    assert.deepEqual([after.allowed, after.remaining, reads.n], [true, 2, 2]);
    // Two processes at once on the last two units: exactly two go through, whichever they are.
    const last = await Promise.all([a.hit("k"), b.hit("k"), a.hit("k")]);
    assert.equal(last.filter((r) => r.allowed).length, 2);
  } finally {
    kv.close();
  }
});

Deno.test("FixedWindowLimiter.peek() counts nothing, and the hit after it reads the count no second time", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:10Z");
    const reads = { n: 0 };
    const a = new FixedWindowLimiter(readCounting(kv, reads), clock, { scope: "t", limit: 3, windowS: 60 });
    const b = new FixedWindowLimiter(kv, clock, { scope: "t", limit: 3, windowS: 60 });
    assert.deepEqual(await a.peek("k"), { allowed: true, limit: 3, remaining: 3, retryAfterS: 50 });
    assert.equal((await a.hit("k")).remaining, 2);
    assert.equal(reads.n, 1, "a new sender's peek and hit read its count once");
    assert.equal((await a.peek("k")).remaining, 2, "a peek counts nothing");
    // Another process counts the rest: the kept count is stale; the hit finds out and refuses.
    await b.hit("k", 2);
    const refused = await a.hit("k");
    assert.deepEqual([refused.allowed, refused.remaining, reads.n], [false, 0, 2]);
    assert.deepEqual(await a.peek("k"), { allowed: false, limit: 3, remaining: 0, retryAfterS: 50 });
    clock.advance(50_000);
    assert.equal((await a.peek("k")).remaining, 3, "a new window");
  } finally {
    kv.close();
  }
});

Deno.test("parseConfig() storefront settings: defaults, TRUSTED_ISSUERS, the default seller", () => {
  const d = parseConfig({});
  assert.equal(d.storefront.defaultSellerId, "demo", "the embedded default serves the demo seller on any host");
  assert.equal(d.storefront.anonymousTtlS, 259200);
  assert.equal(d.storefront.accessTokenTtlS, 300);
  assert.equal(d.storefront.claimTtlS, 600);
  assert.deepEqual(d.storefront.trustedIssuers, []);
  assert.equal(d.mail.smtpUrl, null);
  assert.equal(parseConfig({ AGENT_AUTH_URL: "https://shop.example" }).storefront.defaultSellerId, null);
  assert.equal(parseConfig({ STOREFRONT_DEFAULT_SELLER: "none" }).storefront.defaultSellerId, null);
  const c = parseConfig({
    TRUSTED_ISSUERS: '[{"issuer":"https://idp.example","jwks_url":"https://idp.example/jwks"}]',
  });
  assert.deepEqual(c.storefront.trustedIssuers, [{
    issuer: "https://idp.example",
    jwksUrl: "https://idp.example/jwks",
  }]);
  for (const bad of ["nope", '{"issuer":"x"}', '[{"issuer":"x","jwks_url":"ftp://x"}]']) {
    assert.throws(() => parseConfig({ TRUSTED_ISSUERS: bad }), /TRUSTED_ISSUERS/);
  }
  assert.throws(() => parseConfig({ SMTP_URL: "http://mail" }), /SMTP_URL/);
  assert.throws(() => parseConfig({ ACCESS_TOKEN_TTL_S: "5" }), /ACCESS_TOKEN_TTL_S/);
});

Deno.test("admin: seller create/list and storefront rotate-key", async () => {
  const { runAdmin } = await import("../../cli/commands.ts");
  const { createTestWorld } = await import("../_helpers.ts");
  await using w = await createTestWorld();
  const { tenantId } = await w.tenantWithKey();
  const seller = await runAdmin(w.deps, [
    "seller",
    "create",
    "--id",
    "acme",
    "--tenant",
    tenantId,
    "--name",
    "Acme",
    "--host",
    "Shop.Acme.test",
    "--host",
    "acme.test:8443",
  ]) as { hosts: string[] };
  assert.deepEqual(seller.hosts, ["shop.acme.test", "acme.test:8443"]);
  assert.equal((await runAdmin(w.deps, ["seller", "list"]) as unknown[]).length, 1);
  await assert.rejects(
    () =>
      runAdmin(w.deps, [
        "seller",
        "create",
        "--id",
        "other",
        "--tenant",
        tenantId,
        "--name",
        "X",
        "--host",
        "acme.test:8443",
      ]),
    /already exists/,
  );
  const before = (await w.deps.storefront.keys.current()).kid;
  const { kid } = await runAdmin(w.deps, ["storefront", "rotate-key"]) as { kid: string };
  assert.notEqual(kid, before);
  assert.equal((await w.deps.storefront.keys.current()).kid, kid);
});
