import assert from "node:assert/strict";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { MAX_CHECKOUT_DECLINES } from "../../core/commerce/service.ts";
import { openBrowser, serveLocal } from "../_browser.ts";
import { pageFaults } from "../_axe.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "./_helpers.ts";

Deno.test({
  name: "checkout page in Chromium: a decline, then the human pays on the same checkout, and the purchase completes",
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
    const fits = async (width: number) => {
      await b.page.setViewport({ width, height: 800 });
      // Nothing is wider than the card it sits in, and the page does not scroll sideways.
      const over = await b.page.evaluate(() => {
        const card = document.querySelector("main")!.getBoundingClientRect();
        const out = [...document.querySelectorAll("main *:not([type=hidden])")]
          .filter((e) =>
            e.getBoundingClientRect().right > card.right + 0.5 || e.getBoundingClientRect().left < card.left - 0.5
          )
          .map((e) => e.id || e.tagName);
        if (document.documentElement.scrollWidth > innerWidth) out.push("page");
        return out;
      });
      assert.deepEqual(over, [], `at ${width} px`);
    };
    await t.step("the page shows the amount as currency and the card form, fitting 360 and 1280 px", async () => {
      const res = await b.page.goto(url);
      assert.equal(res?.status(), 200);
      assert.equal(await state(), "open");
      assert.equal(await b.page.$eval("#amount", (e) => e.textContent), "$3.00");
      assert.equal(await b.page.$eval("#pay-button", (e) => e.textContent), "Pay $3.00");
      for (const width of [360, 1280]) {
        await fits(width);
        await b.shot(`open ${width}`);
        assert.deepEqual(await pageFaults(b.page), [], `open at ${width} px`);
      }
    });
    await t.step("a declined card says so, and the same checkout takes another card", async () => {
      await b.page.type("#token", SANDBOX_TOKENS.card.insufficientFunds);
      await Promise.all([b.page.waitForNavigation(), b.page.click("#pay-button")]);
      await b.shot("declined");
      assert.equal(await state(), "open");
      assert.match(
        await b.page.$eval("#message", (e) => e.textContent ?? ""),
        /^Declined: insufficient_funds\. Try another card \(4 tries left\)\.$/,
      );
      assert.deepEqual(await pageFaults(b.page), [], "declined");
      await fits(360);
    });
    await t.step("keyboard only: the good card pays on the same checkout", async () => {
      await b.page.focus("#token");
      await b.page.keyboard.type(SANDBOX_TOKENS.card.success);
      await Promise.all([b.page.waitForNavigation(), b.page.keyboard.press("Enter")]);
      await b.shot("paid");
      assert.equal(await state(), "paid");
      assert.deepEqual(await pageFaults(b.page), [], "paid");
    });
    await t.step("the agent's retry completes the purchase, once", async () => {
      const ok = await w.req(`/plans/${w.plan.id}/purchase`, {
        ...postJson(body, {
          authorization: paymentAuthorization(challenge, { checkout: true }),
          "zc-agent-authorization": `Bearer ${token}`,
        }),
      });
      assert.equal(ok.status, 200, await ok.clone().text());
      const again = await w.req(`/plans/${w.plan.id}/purchase`, {
        ...postJson(body, {
          authorization: paymentAuthorization(challenge, { checkout: true }),
          "zc-agent-authorization": `Bearer ${token}`,
        }),
      });
      assert.equal((await again.json()).error, "payment_consumed");
    });
    await t.step("a cancelled checkout, and one ended by repeated declines, read clearly", async () => {
      const open = async () =>
        (await (await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token })).json()).card.checkout
          .url as string;
      await b.page.goto(await open());
      await Promise.all([b.page.waitForNavigation(), b.page.click("#cancel-button")]);
      assert.equal(await state(), "released");
      await b.shot("cancelled");
      assert.deepEqual(await pageFaults(b.page), [], "cancelled");
      await b.page.goto(await open());
      for (let i = 0; i < MAX_CHECKOUT_DECLINES; i++) {
        await b.page.type("#token", SANDBOX_TOKENS.card.insufficientFunds);
        await Promise.all([b.page.waitForNavigation(), b.page.click("#pay-button")]);
      }
      assert.equal(await state(), "failed");
      assert.match(await b.page.$eval("#state", (e) => e.textContent ?? ""), /ended after repeated declines/);
      await b.shot("ended");
      assert.deepEqual(await pageFaults(b.page), [], "ended");
    });
    await t.step("a charge stuck past its grace period: the page offers paying again or cancelling", async () => {
      const url = (await (await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token })).json()).card
        .checkout.url as string;
      // The processor holds the first charge (a process slow or dead mid-charge).
      const processor = w.deps.commerce.processor as SandboxProcessor;
      const charge = processor.charge.bind(processor);
      let release!: () => void, started!: () => void;
      const gate = new Promise<void>((r) => release = r), began = new Promise<void>((r) => started = r);
      processor.charge = async (input) => {
        processor.charge = charge;
        started();
        await gate;
        return await charge(input);
      };
      await b.page.goto(url);
      await b.page.type("#token", SANDBOX_TOKENS.card.success);
      const paying = Promise.all([b.page.waitForNavigation(), b.page.click("#pay-button")]);
      await began;
      w.clock.advance(31_000);
      const tab = await b.context.newPage();
      try {
        await tab.goto(url);
        assert.equal(await tab.$eval("#state", (e) => e.getAttribute("data-state")), "processing");
        assert.match(await tab.$eval("#state", (e) => e.textContent ?? ""), /did not finish/);
        assert.ok(await tab.$("#pay-button") && await tab.$("#cancel-button"), "both forms are offered");
        await tab.setViewport({ width: 360, height: 800 });
        const shot = `${b.shotsDir}/07-stuck-retry.png`;
        await tab.screenshot({ path: shot, fullPage: true });
        b.shots.push(shot);
        assert.deepEqual(await pageFaults(tab), [], "stuck charge, retry offered");
      } finally {
        await tab.close();
      }
      release();
      await paying;
      assert.equal(await state(), "paid");
    });
    assert.equal(b.shots.length, 7);
    console.log(`screenshots: ${b.shotsDir}`);
  },
});
