import assert from "node:assert/strict";
import { pageFaults } from "../_axe.ts";
import { openBrowser, serveLocal } from "../_browser.ts";
import { startLocalSmtp } from "./_smtp.ts";
import { mailCodeIn, storefrontWorld } from "./_world.ts";

Deno.test({
  name:
    "claim page in Chromium: the human reads the e-mail over SMTP, enters its code, confirms, and the agent completes",
  // puppeteer keeps its own timers and pipes until the browser exits.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using server = serveLocal();
    await using smtp = await startLocalSmtp();
    await using w = await storefrontWorld({ env: { BASE_URL: server.url, SMTP_URL: smtp.url } });
    server.setHandler(w.app.fetch);
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };

    // The agent: registers for the human's address and asks for the claim e-mail.
    const reg = await api("/agent/identity", { type: "service_auth", login_hint: "maria@example.com" });
    const claimToken = reg.body.claim.token as string;
    const req = await api("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: "maria@example.com",
    });
    assert.equal(req.status, 200);
    const verificationUri = req.body.claim.attempt.verification_uri as string;

    // The human: reads the mail from the SMTP server.
    const [mail] = await smtp.waitFor(1);
    const raw = mail!.raw.replace(/=\r?\n/g, "");
    assert.ok(raw.includes(verificationUri), "the e-mail links to the claim page");
    const mailCode = mailCodeIn(raw)!;
    assert.ok(mailCode);

    await using b = await openBrowser("claim page");
    let userCode = "";
    await t.step("the link opens a page asking for the e-mailed code (no Confirm yet)", async () => {
      await b.page.setViewport({ width: 1280, height: 800 });
      const res = await b.page.goto(verificationUri);
      assert.equal(res?.status(), 200);
      await b.shot("code form");
      assert.deepEqual(await pageFaults(b.page), [], "code form");
      // The rest of the claim happens on a 360 px phone, where nothing may scroll sideways.
      await b.page.setViewport({ width: 360, height: 740 });
      await b.shot("code form 360");
      const wide = await b.page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 360, `${wide} px wide`);
      assert.equal(await b.page.$("button[name=decision], input[name=decision]"), null);
      assert.match(await b.page.$eval("h1", (e) => e.textContent ?? ""), /maria@example\.com/);
    });
    await t.step("a wrong code is refused with the tries left", async () => {
      await b.page.type("#mail-code", "BBBB-BBBB");
      await Promise.all([b.page.waitForNavigation(), b.page.click("#verify button")]);
      await b.shot("wrong code");
      assert.deepEqual(await pageFaults(b.page), [], "wrong code");
      assert.match(await b.page.$eval("#error", (e) => e.textContent ?? ""), /4 tries left/);
    });
    await t.step("keyboard only: the right code, then Enter, shows Confirm and Deny", async () => {
      await b.page.focus("#mail-code");
      await b.page.keyboard.type(mailCode.toLowerCase());
      await Promise.all([b.page.waitForNavigation(), b.page.keyboard.press("Enter")]);
      await b.shot("confirm or deny");
      assert.deepEqual(await pageFaults(b.page), [], "confirm or deny");
      assert.ok(await b.page.$("#confirm button"));
      assert.ok(await b.page.$("#deny button"));
    });
    await t.step("keyboard only: Confirm (focused, Enter) shows the user code", async () => {
      await b.page.focus("#confirm button");
      await Promise.all([b.page.waitForNavigation(), b.page.keyboard.press("Enter")]);
      await b.shot("user code");
      assert.deepEqual(await pageFaults(b.page), [], "user code");
      userCode = await b.page.$eval("#user-code", (e) => e.textContent ?? "");
      assert.match(userCode, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
      assert.notEqual(userCode, mailCode);
    });
    await t.step("the agent completes the claim with the code the human gave it", async () => {
      const done = await api("/agent/identity/claim/complete", { claim_token: claimToken, user_code: userCode });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.identity.claimed, true);
      assert.equal(done.body.identity.account.email, "maria@example.com");
    });
    await t.step("reloading the page says it is done", async () => {
      await b.page.goto(verificationUri);
      await b.shot("done");
      assert.deepEqual(await pageFaults(b.page), [], "done");
      assert.match(await b.page.$eval("h1", (e) => e.textContent ?? ""), /All done/);
    });
    assert.equal(b.shots.length, 6);
    console.log(`screenshots: ${b.shotsDir}`);
  },
});
