/**
 * `widget_viewable` in headless Chromium: 50 % of the widget in view for 1 s without a break. A
 * hidden page is a break; when the reader comes back to the page with the widget still in view,
 * the second starts again (the IntersectionObserver reports nothing then: nothing moved).
 * The page's visibility is stood in for in the page (headless has no other tab to switch to).
 */
import assert from "node:assert/strict";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";

Deno.test({
  name: "widget in Chromium: a reader who leaves the tab within the viewable second and comes back is counted viewable",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is asked here: the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    await using b = await openSharedBrowser("widget viewable after a hidden tab");
    const page = b.page;
    await page.evaluateOnNewDocument(`
      globalThis.fakeVisibility = "visible";
      Object.defineProperty(Document.prototype, "visibilityState", { get: () => globalThis.fakeVisibility });
      globalThis.setVisibility = (v) => {
        globalThis.fakeVisibility = v;
        document.dispatchEvent(new Event("visibilitychange"));
      };`);
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    // In view, then the tab is left at once: the second is broken.
    await page.$eval(W, (e) => e.scrollIntoView({ block: "center" }));
    await page.evaluate(() => (globalThis as unknown as { setVisibility(v: string): void }).setVisibility("hidden"));
    // Longer than the viewable second while hidden: nothing is counted.
    const hiddenSince = performance.now();
    await world.until("1.5 s hidden", () => performance.now() - hiddenSince > 1500);
    assert.equal(world.events.filter((e) => e.event_type === "widget_viewable").length, 0);
    // Back to the tab, the widget where it was: a full second in view counts.
    await page.evaluate(() => (globalThis as unknown as { setVisibility(v: string): void }).setVisibility("visible"));
    await world.until("widget_viewable", () => world.events.some((e) => e.event_type === "widget_viewable"), 6000);
    // The widget was scrolled into the window: the first screen shows it.
    await b.screen("viewable after coming back");
    const viewable = world.events.filter((e) => e.event_type === "widget_viewable");
    assert.equal(viewable.length, 1);
    assert.ok(Number(viewable[0]!.in_view_ms) >= 1000);
  },
});
