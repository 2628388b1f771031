/**
 * Round 6, secrets and personal data where they should not be: in caches, in logs, at rest.
 * Each test fails on the code before its fix (docs/security.md, "Logic review, round 6").
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { SMTPServer } from "smtp-server";
import { startServiceAuthClaim, storefrontWorld } from "../storefront/_world.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { ClientKeys } from "../../core/client_key.ts";
import { latestMailCode, openConsent } from "../mcp/_consent.ts";
import { analyticsWorld, loadFixture } from "../analytics/_fixture.ts";

/** A response that carries a credential must not be kept by any cache (RFC 6749 5.1, RFC 9111 5.2.2.5). */
function assertNotCacheable(res: Response, label: string): void {
  assert.equal(res.headers.get("cache-control"), "no-store", `${label}: Cache-Control`);
  assert.equal(res.headers.get("pragma"), "no-cache", `${label}: Pragma`);
}

Deno.test("agent identity: every answer that carries an assertion, a refresh token or a claim token or link is no-store", async () => {
  await using w = await storefrontWorld();
  const anonymous = await w.post("/agent/identity", { type: "anonymous" });
  assert.equal(anonymous.status, 201);
  assertNotCacheable(anonymous, "anonymous (assertion)");

  const assertion = await w.post("/agent/identity", {
    type: "identity_assertion",
    assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
    assertion: await w.idp.mint({ email: "linus@example.com" }),
  });
  assert.equal(assertion.status, 201);
  assertNotCacheable(assertion, "identity_assertion (assertion, refresh token)");
  const refreshToken = (await assertion.json()).identity.refresh_token.value;

  const refreshed = await w.post("/agent/identity", { type: "refresh", refresh_token: refreshToken });
  assert.equal(refreshed.status, 200);
  assertNotCacheable(refreshed, "refresh (assertion, rotated refresh token)");

  const serviceAuth = await w.post("/agent/identity", { type: "service_auth", login_hint: "ada@example.com" });
  assert.equal(serviceAuth.status, 200);
  assertNotCacheable(serviceAuth, "service_auth (claim token)");
  const claimToken = (await serviceAuth.json()).claim.token;

  const claim = await w.post("/agent/identity/claim", {
    type: "service_auth",
    claim_token: claimToken,
    login_hint: "ada@example.com",
  });
  assert.equal(claim.status, 200);
  assertNotCacheable(claim, "claim (verification link)");

  // An error can carry a claim block too (interaction_required): the whole family is no-store.
  const again = await w.post("/agent/identity", {
    type: "identity_assertion",
    assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
    assertion: await w.idp.mint({ email: "linus@example.com" }),
  });
  const againBody = await again.json();
  assert.equal(again.status, 401, JSON.stringify(againBody));
  assert.equal(againBody.error, "interaction_required");
  assert.equal(typeof againBody.claim?.token, "string");
  assertNotCacheable(again, "interaction_required (claim token)");
});

Deno.test("access log: claim links and checkout and payment references in a path are redacted", async () => {
  await using w = await storefrontWorld();
  const { verificationUri } = await startServiceAuthClaim(w, "ada@example.com");
  const link = new URL(verificationUri).pathname.split("/").pop()!;
  assert.equal(link.length, 43);
  const page = await w.app.request(verificationUri);
  assert.equal(page.status, 200);
  await page.body?.cancel();
  // A reference has the shape of a challenge id; the page and the status route log it whether or not it is known.
  const reference = "Qm9vdHN0cmFwUmVmZXJlbmNlT2ZBQ2hlY2tvdXRYWFg";
  for (const path of [`/checkout/${reference}`, `/payments/${reference}`]) {
    const res = await w.app.request(`http://svc.test${path}`);
    await res.body?.cancel();
  }
  const requests = w.log.lines.filter((l) => l.msg === "request").map((l) => l.path);
  assert.deepEqual(requests.slice(-3), ["/claim/[redacted]", "/checkout/[redacted]", "/payments/[redacted]"]);
  assert.ok(requests.includes("/agent/identity/claim"), "a path that is no capability stays readable");
  const text = JSON.stringify(w.log.lines);
  assert.ok(!text.includes(link), "the claim link is in a log line");
  assert.ok(!text.includes(reference), "the checkout reference is in a log line");
});

Deno.test("article clicks: the reader's page is kept as origin and path, never its query or fragment", async () => {
  await using w = await createTestWorld();
  const link = w.deps.links.trackingUrl({
    id: "ar_01JX0000000000000000000000",
    url: "https://news.example.com/2026/11/flood-barrier",
    dataModelId: "dm_01JX0000000000000000000000",
  }, { tenantId: "tn_01JX0000000000000000000000", position: 1 });
  // A page whose Referrer-Policy sends its whole address (no-referrer-when-downgrade, unsafe-url): a magic link.
  const referer = "https://mail.example.net/login?token=ml_3f9c2a7b1e&email=ada%40example.com#inbox";
  const res = await w.app.request(new URL(link).pathname, { headers: { referer } });
  assert.equal(res.status, 302);
  const chunks = await w.deps.events.wal.take(1000);
  const rows = chunks.flatMap((c) => new TextDecoder().decode(c.bytes).split("\n").filter(Boolean))
    .map((line) => JSON.parse(line));
  assert.equal(rows.length, 1);
  assert.equal(rows[0].referring_url, "https://mail.example.net/login");
  assert.ok(!JSON.stringify(rows).includes("ml_3f9c2a7b1e"), "the page's token is stored");
});

Deno.test("analytics: answers with readers' prompts, answers and pages are no-store, as the dashboard expects", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  for (
    const path of [
      "/v1/analytics/ask-ai/logs",
      "/v1/analytics/realtime",
      "/v1/analytics/ask-ai",
      "/v1/analytics/ask-ai/logs?start_date=2026-11-20&end_date=2026-11-01",
    ]
  ) {
    const res = await world.w.app.request(path, { headers: bearer(world.key) });
    await res.body?.cancel();
    assert.ok(res.status === 200 || res.status === 400, `${path}: ${res.status}`);
    assert.equal(res.headers.get("cache-control"), "no-store", path);
  }
});

Deno.test("sender keys: a stored client_key cannot be turned back into the reader's address without the server's key", async () => {
  await using w = await createTestWorld({ env: { TRUST_PROXY: "1" } });
  const link = w.deps.links.trackingUrl({
    id: "ar_01JX0000000000000000000000",
    url: "https://news.example.com/2026/11/flood-barrier",
    dataModelId: "dm_01JX0000000000000000000000",
  }, { tenantId: "tn_01JX0000000000000000000000", position: 1 });
  const res = await w.app.request(new URL(link).pathname, { headers: { "x-forwarded-for": "198.51.100.23" } });
  assert.equal(res.status, 302);
  const chunks = await w.deps.events.wal.take(1000);
  const [row] = chunks.flatMap((c) => new TextDecoder().decode(c.bytes).split("\n").filter(Boolean))
    .map((line) => JSON.parse(line));
  const stored = String(row.client_key);
  assert.match(stored, /^[0-9a-f]{16}$/);
  // Whoever reads the events (a Parquet file, a backup) tries every IPv4 address: one unkeyed hash each.
  const unkeyed = (address: string) => createHash("sha256").update(`sender:${address}`).digest("hex").slice(0, 16);
  assert.notEqual(stored, unkeyed("198.51.100.23"), "the key is an unkeyed hash of the address");
  // The same network still gets the same key (trending counts one sender per key), in another process too.
  assert.equal(await w.deps.clientKeys.of("198.51.100.23"), stored);
  assert.equal(await new ClientKeys(w.deps.kv).of("198.51.100.23"), stored);
  await using other = await createTestWorld();
  assert.notEqual(await other.deps.clientKeys.of("198.51.100.23"), stored, "another store has its own key");
});

Deno.test("claim mail refused by the relay: the log names the claim, not the human's e-mail address", async () => {
  // A relay that refuses the recipient as Postfix does, quoting the address in its reply.
  const relay = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    // deno-lint-ignore no-explicit-any
    onRcptTo(address: any, _session: unknown, callback: (err?: Error | null) => void) {
      const err = new Error(`5.1.1 <${address.address}>: Recipient address rejected: User unknown`);
      (err as Error & { responseCode: number }).responseCode = 550;
      callback(err);
    },
  });
  const port = await new Promise<number>((resolve) =>
    relay.listen(0, "127.0.0.1", () => resolve((relay.server.address() as { port: number }).port))
  );
  try {
    await using w = await storefrontWorld({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    const email = "ada.lovelace@example.com";
    const reg = await w.post("/agent/identity", { type: "service_auth", login_hint: email });
    const claimToken = (await reg.json()).claim.token;
    const res = await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: email,
    });
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error, "mail_unavailable");
    assert.ok(w.log.lines.some((l) => l.msg === "claim e-mail not sent"));
    const text = JSON.stringify(w.log.lines);
    assert.ok(text.includes("Recipient address rejected"), "the relay's reason is still logged");
    assert.ok(!text.includes(email), `the e-mail address is in a log line: ${text}`);
  } finally {
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  }
});

Deno.test("consent page: a KV dump holds no claim token or claim link of a human's pending consent", async () => {
  await using w = await storefrontWorld();
  const reg = await w.app.request("http://svc.test/oauth2/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:53682/callback"], client_name: "Client" }),
  });
  const { client_id } = await reg.json();
  const page = await openConsent(
    w,
    `http://svc.test/oauth2/authorize?${new URLSearchParams({
      response_type: "code",
      client_id,
      redirect_uri: "http://127.0.0.1:53682/callback",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      state: "s",
    })}`,
  );
  assert.equal(page.status, 200);
  const sent = await page.post({ action: "email", email: "ada@example.com" });
  assert.equal(sent.status, 200);
  await sent.body?.cancel();
  const mail = (await (w.deps.mailer as unknown as { list(n: number): Promise<{ text: string }[]> }).list(10))[0]!;
  const link = /\/claim\/([A-Za-z0-9_-]{43})/.exec(mail.text)![1]!;

  const dump: string[] = [];
  for await (const e of w.deps.kv.list({ prefix: [] })) {
    if (e.key[0] !== "outbox") dump.push(JSON.stringify([e.key, e.value]));
  }
  const text = dump.join("\n");
  assert.ok(!/clt_[A-Za-z0-9_-]{43}/.test(text), "a claim token is in KV in the clear");
  assert.ok(!text.includes(link), "the claim link is in KV in the clear");

  // The page still finishes the claim with the code from the e-mail.
  const done = await page.post({ action: "code", mail_code: await latestMailCode(w, "ada@example.com") });
  assert.equal(done.status, 303, await done.clone().text());
  assert.match(done.headers.get("location") ?? "", /^http:\/\/127\.0\.0\.1:53682\/callback\?code=/);
});
