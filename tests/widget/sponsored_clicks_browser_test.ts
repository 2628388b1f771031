/**
 * Sponsored impressions in headless Chromium: `sponsored_impression` says a sponsored conversation
 * started, and the sponsored-conversations figures count one impression per event. A click the
 * widget ignores (an answer is still coming) starts nothing, so it must send nothing.
 */
import assert from "node:assert/strict";
import { answerTo, openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";
const inWidget = (sel: string) => `${W} >>> ${sel}`;

Deno.test({
  name: "widget in Chromium: a double click on a sponsored prompt is one sponsored impression and one conversation",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget sponsored double click");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    const chip = await page.waitForSelector(inWidget(".chips button:has(.badge)"));
    await chip!.scrollIntoView();
    // The second click lands while the first one's answer is still coming: the widget ignores it.
    await answerTo(page, () => chip!.click({ count: 2 }));
    await world.until("the sponsored answer's query event", () => world.events.some((e) => e.event_type === "query"));
    // The chip was scrolled into the window: the first screen shows it and its answer.
    await b.screen("sponsored answered");
    const sent = (type: string) => world.events.filter((e) => e.event_type === type).length;
    assert.equal(await page.$$eval(inWidget(".turn"), (t) => t.length), 1, "one sponsored conversation");
    assert.equal(world.seen.filter((s) => s.method === "POST" && s.path.endsWith("/ask")).length, 1);
    assert.equal(sent("sponsored_impression"), 1);
    assert.equal(sent("query"), 1);
  },
});

Deno.test({
  name:
    "widget in Chromium: a sponsored prompt whose question is refused (daily cap) starts no conversation and sends no sponsored impression",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is answered (the cap refuses it): the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    const patched = await world.w.app.request(`${world.serviceUrl}/v1/widgets/${world.widgetId}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${world.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ daily_answer_cap: 0 }),
    });
    assert.equal(patched.status, 200);
    await using b = await openSharedBrowser("widget sponsored refused");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    const chip = await page.waitForSelector(inWidget(".chips button:has(.badge)"));
    const text = await chip!.evaluate((e) => e.lastChild?.textContent ?? "");
    await answerTo(page, () => chip!.click());
    const status = await page.$eval(inWidget(".status"), (e) => e.hasAttribute("data-error") ? e.textContent : "");
    assert.ok(status, "the refusal shows");
    // The chip was seen (it was clicked): its prompt_impression goes, in the batch any impression would share.
    await world.until(
      "the chosen chip's prompt impression",
      () => world.events.some((e) => e.event_type === "prompt_impression" && e.prompt_text === text),
    );
    // The click scrolled the chip into the window: the first screen shows the refusal.
    await b.screen("sponsored refused");
    assert.deepEqual(world.seen.filter((s) => s.method === "POST" && s.path.endsWith("/ask")).map((s) => s.status), [
      429,
    ]);
    assert.equal(world.events.filter((e) => e.event_type === "sponsored_impression").length, 0);
  },
});
