import assert from "node:assert/strict";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { openBrowser, serveLocal } from "../_browser.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "./_helpers.ts";

Deno.test({
  name: "checkout page in Chromium: a decline, then the human pays, and the agent's purchase completes",
  // puppeteer keeps its own timers and pipes until the browser exits.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using w = await createCommerceWorld();
    await using server = serveLocal();
    server.setHandler(w.app.fetch);
    const { token } = await w.agents.issue();
    const body = { amountUsd: "3.000000", checkout: true };
    const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
    assert.equal(first.status, 402);
    const challenge = challengesOf(first)[0]!;
    const json = await first.json();
    const url = json.card.checkout.url as string;
    assert.match(url, /^http:\/\/store\.test\/checkout\//);

    // The browser reaches store.test at the local server, Host header and URL unchanged.
    await using b = await openBrowser("checkout page", { hosts: { "store.test": new URL(server.url).host } });
    const state = () => b.page.$eval("#state", (e) => e.getAttribute("data-state"));
    await t.step("the page shows the amount and the card form", async () => {
      const res = await b.page.goto(url);
      assert.equal(res?.status(), 200);
      await b.shot("open");
      assert.equal(await state(), "open");
      assert.match(await b.page.$eval("#amount", (e) => e.textContent ?? ""), /3\.000000 USD/);
    });
    await t.step("a declined card says so and ends this checkout", async () => {
      await b.page.type("#token", SANDBOX_TOKENS.card.insufficientFunds);
      await Promise.all([b.page.waitForNavigation(), b.page.click("#pay-button")]);
      await b.shot("declined");
      assert.equal(await state(), "failed");
      assert.match(await b.page.$eval("#message", (e) => e.textContent ?? ""), /insufficient_funds/);
    });

    const second = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
    const challenge2 = challengesOf(second)[0]!;
    const url2 = (await second.json()).card.checkout.url as string;
    await t.step("a new checkout paid with the good card is paid", async () => {
      await b.page.goto(url2);
      await b.page.type("#token", SANDBOX_TOKENS.card.success);
      await Promise.all([b.page.waitForNavigation(), b.page.click("#pay-button")]);
      await b.shot("paid");
      assert.equal(await state(), "paid");
    });
    await t.step("the agent's retry completes the purchase", async () => {
      const ok = await w.req(`/plans/${w.plan.id}/purchase`, {
        ...postJson(body, {
          authorization: paymentAuthorization(challenge2, { checkout: true }),
          "zc-agent-authorization": `Bearer ${token}`,
        }),
      });
      assert.equal(ok.status, 200, await ok.clone().text());
      const failed = await w.req(`/plans/${w.plan.id}/purchase`, {
        ...postJson(body, {
          authorization: paymentAuthorization(challenge, { checkout: true }),
          "zc-agent-authorization": `Bearer ${token}`,
        }),
      });
      assert.equal((await failed.json()).error, "payment_failed");
    });
    assert.equal(b.shots.length, 3);
    console.log(`screenshots: ${b.shotsDir}`);
  },
});
