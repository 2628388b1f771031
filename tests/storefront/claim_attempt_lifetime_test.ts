/**
 * A claim of an anonymous identity dies with the credential. A verification attempt (and the user
 * code after it) lived `CLAIM_TTL_S` from the request whatever the claim had left, so the agent was
 * told `expires_in: 600`, and the e-mail and the claim page "about 10 minutes", for a claim that
 * ended in two: the page then said "expired" with minutes still shown to the agent. Both now end
 * no later than the claim.
 */
import assert from "node:assert/strict";
import { OutboxMailer } from "../../core/identity/mailer.ts";
import { decideOnPage, json, storefrontWorld } from "./_world.ts";

Deno.test("claim: the verification of an anonymous identity's claim ends when the identity does", async (t) => {
  await using w = await storefrontWorld({ env: { ANONYMOUS_TTL_S: "120", CLAIM_TTL_S: "600" } });
  const reg = await json(await w.post("/agent/identity", { type: "anonymous" }));
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const claimToken = (reg.body.claim as { token: string }).token;
  const req = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "grace@example.com",
    }),
  );
  assert.equal(req.status, 200, JSON.stringify(req.body));
  const attempt = (req.body.claim as { attempt: { verification_uri: string; expires_in: number } }).attempt;

  await t.step("the agent is told the claim's own time left", () => {
    assert.equal(attempt.expires_in, 120);
  });
  await t.step("the e-mail and the page name that time", async () => {
    const mailer = w.deps.mailer as OutboxMailer;
    const mail = (await mailer.list(10)).find((m) => m.text.includes(attempt.verification_uri))!;
    assert.doesNotMatch(mail.text, /10 minutes/);
    const page = await (await w.app.request(attempt.verification_uri)).text();
    assert.match(page, /expires in 2 minutes/);
  });
  await t.step("at its end the page says the link expired", async () => {
    w.clock.advance(120_000);
    assert.match(await (await w.app.request(attempt.verification_uri)).text(), /This link has expired/);
  });
});

Deno.test("claim: the e-mail and the pages never promise a link or code more time than it has (whole minutes rounded down, then less than a minute)", async (t) => {
  await using w = await storefrontWorld({ env: { ANONYMOUS_TTL_S: "300", CLAIM_TTL_S: "600" } });
  const reg = await json(await w.post("/agent/identity", { type: "anonymous" }));
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const claimToken = (reg.body.claim as { token: string }).token;
  const mailer = w.deps.mailer as OutboxMailer;
  /** Asks for the claim e-mail now: its link, and the mail's text. */
  const requestMail = async () => {
    const req = await json(
      await w.post("/agent/identity/claim", {
        type: "service_auth",
        claim_token: claimToken,
        login_hint: "grace@example.com",
      }),
    );
    assert.equal(req.status, 200, JSON.stringify(req.body));
    const uri = (req.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri;
    const mail = (await mailer.list(10)).find((m) => m.text.includes(uri))!;
    return { uri, text: mail.text, html: mail.html ?? "" };
  };

  await t.step("2 minutes 30 seconds left: the e-mail and the page say 2 minutes, not 3", async () => {
    w.clock.advance(150_000);
    const { uri, text, html } = await requestMail();
    assert.match(text, /works for 2 minutes\)/);
    assert.match(html, /works for 2 minutes\)/);
    assert.match(await (await w.app.request(uri)).text(), /expires in 2 minutes\./);
  });
  await t.step("in the claim's last 20 seconds: less than a minute, never 1 minute", async () => {
    w.clock.advance(130_000);
    const { uri, text } = await requestMail();
    assert.match(text, /works for less than a minute\)/);
    assert.doesNotMatch(text, /1 minute/);
    assert.match(await (await w.app.request(uri)).text(), /expires in less than a minute\./);
    // The user code ends with the claim too: its page says the time the claim has, not CLAIM_TTL_S.
    const decided = await decideOnPage(w, uri, "confirm");
    assert.ok(decided.userCode, decided.html.slice(0, 300));
    assert.match(decided.html, /expires in less than a minute\./);
    assert.doesNotMatch(decided.html, /10 minutes/);
  });
});
