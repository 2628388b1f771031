/**
 * Finding 1 (critical): an agent claimed any e-mail address by opening the verification_uri the
 * API gave it, pressing Confirm and reading the user code. These tests play that agent with every
 * response it can get, and check that only the mailbox holder reaches a user code.
 */
import assert from "node:assert/strict";
import { MAX_CLAIM_EMAILS, MAX_WRONG_MAIL_CODES } from "../../core/identity/claims.ts";
import { formatUserCode, newUserCode } from "../../core/identity/user_code.ts";
import {
  decideOnPage,
  json,
  mailCodeFromOutbox,
  startServiceAuthClaim,
  storefrontWorld,
  userCodeIn,
} from "../storefront/_world.ts";

const FORM = "application/x-www-form-urlencoded";

/** The agent's browser: one cookie jar, every page body kept. */
function agentBrowser(w: Awaited<ReturnType<typeof storefrontWorld>>, uri: string, seen: string[]) {
  let cookie = "";
  let csrf = "";
  return {
    async open() {
      const res = await w.app.request(uri);
      const html = await res.text();
      seen.push(html);
      cookie = res.headers.get("set-cookie")?.split(";")[0] ?? cookie;
      csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? csrf;
      return { status: res.status, html };
    },
    async post(fields: Record<string, string>) {
      const res = await w.app.request(uri, {
        method: "POST",
        headers: { "content-type": FORM, cookie, origin: new URL(uri).origin },
        body: new URLSearchParams({ csrf, ...fields }).toString(),
      });
      const html = await res.text();
      seen.push(html);
      return { status: res.status, html };
    },
  };
}

Deno.test("security: an agent holding every API response and the claim page never obtains a user code", async (t) => {
  await using w = await storefrontWorld();
  const seen: string[] = [];
  const reg = await w.post("/agent/identity", { type: "service_auth", login_hint: "victim@example.com" });
  const regText = await reg.text();
  seen.push(regText);
  const claimToken = JSON.parse(regText).claim.token as string;
  const userCodes: string[] = [];
  let attempts = 0;
  let completed = 0;

  for (let mail = 1; mail <= MAX_CLAIM_EMAILS; mail++) {
    const req = await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "victim@example.com",
    });
    const reqText = await req.text();
    seen.push(reqText);
    assert.equal(req.status, 200, reqText);
    const uri = JSON.parse(reqText).claim.attempt.verification_uri as string;
    const agent = agentBrowser(w, uri, seen);
    const opened = await agent.open();
    assert.equal(opened.status, 200);
    assert.doesNotMatch(opened.html, /name="decision"/, "no Confirm button before the mailbox is proven");

    // The original exploit: press Confirm straight away, with and without a made-up proof.
    for (const proof of ["", "A".repeat(43)]) {
      attempts++;
      const r = await agent.post({ decision: "confirm", proof });
      assert.equal(r.status, 403);
      const code = userCodeIn(r.html);
      if (code) userCodes.push(code);
    }
    // Guessing the e-mailed code: a few tries, then the link locks.
    for (let i = 0; i < MAX_WRONG_MAIL_CODES + 2; i++) {
      attempts++;
      const r = await agent.post({ mail_code: formatUserCode(newUserCode()) });
      assert.ok(r.status === 400 || r.status === 403, String(r.status));
      assert.doesNotMatch(r.html, /name="proof"/);
    }
    assert.equal((await agent.open()).status, 403, "locked after too many wrong codes");
    // Guessing the user code at the API.
    for (let i = 0; i < 3; i++) {
      attempts++;
      const r = await json(
        await w.post("/agent/identity/claim/complete", {
          claim_token: claimToken,
          user_code: formatUserCode(newUserCode()),
        }),
      );
      seen.push(JSON.stringify(r.body));
      if (r.status === 200) completed++;
    }
  }

  await t.step(`${attempts} attempts: no user code shown, no claim completed`, () => {
    assert.deepEqual(userCodes, []);
    assert.equal(completed, 0);
  });
  await t.step("a further e-mail is refused: the guesses per claim are bounded", async () => {
    const r = await json(
      await w.post("/agent/identity/claim", {
        type: "service_auth",
        claim_token: claimToken,
        login_hint: "victim@example.com",
      }),
    );
    assert.equal(r.status, 403);
    assert.equal(r.body.error, "too_many_attempts");
  });
  await t.step("no response the agent saw carries an e-mailed code, and neither does the log", async () => {
    const mailer = w.deps.mailer as unknown as { list(n: number): Promise<{ text: string }[]> };
    const mails = await mailer.list(100);
    assert.equal(mails.length, MAX_CLAIM_EMAILS);
    const logText = JSON.stringify(w.log.lines);
    for (const m of mails) {
      const code = /verification code: ([A-Z]{4}-[A-Z]{4})/.exec(m.text)![1]!;
      for (const form of [code, code.replace("-", "")]) {
        assert.ok(!seen.some((s) => s.includes(form)), "code in a response");
        assert.ok(!logText.includes(form), "code in the log");
      }
    }
  });
});

Deno.test("security: after the human proves the mailbox, the agent still cannot confirm on the same link", async () => {
  await using w = await storefrontWorld();
  const { claimToken, verificationUri } = await startServiceAuthClaim(w, "alice@example.com");
  const seen: string[] = [];
  const agent = agentBrowser(w, verificationUri, seen);
  await agent.open();

  // The human enters the code from the mail in their own browser and holds the page open.
  const mailCode = await mailCodeFromOutbox(w, verificationUri);
  const human = agentBrowser(w, verificationUri, []);
  await human.open();
  const proven = await human.post({ mail_code: mailCode });
  assert.equal(proven.status, 200);
  const proof = /name="proof" value="([^"]+)"/.exec(proven.html)![1]!;

  // The agent races: reopens the page, replays the mail code, confirms without the proof.
  assert.equal((await agent.open()).status, 409, "the page offers the agent nothing once the code is used");
  assert.equal((await agent.post({ mail_code: mailCode })).status, 409, "the mail code is single-use");
  for (const p of ["", "B".repeat(43)]) {
    const r = await agent.post({ decision: "confirm", proof: p });
    assert.equal(r.status, 403);
    assert.equal(userCodeIn(r.html), null);
  }
  // The human's confirmation still works and is the only place the user code appears.
  const confirmed = await human.post({ decision: "confirm", proof });
  const userCode = userCodeIn(confirmed.html);
  assert.ok(userCode);
  assert.ok(!seen.some((s) => s.includes(userCode)));
  const done = await json(
    await w.post("/agent/identity/claim/complete", { claim_token: claimToken, user_code: userCode }),
  );
  assert.equal(done.status, 200);
});

Deno.test("security: the e-mailed code dies with its claim link", async () => {
  await using w = await storefrontWorld();
  const { verificationUri } = await startServiceAuthClaim(w, "late@example.com");
  const mailCode = await mailCodeFromOutbox(w, verificationUri);
  w.clock.advance(w.deps.config.storefront.claimTtlS * 1000);
  const r = await decideOnPage(w, verificationUri, "confirm", { mailCode }).catch((e: Error) => e);
  // The page no longer offers a form at all once the link has expired.
  assert.ok(r instanceof Error && /status 410/.test(r.message), String(r));
});
