/**
 * A widget the page moves (a framework re-parenting it: the element leaves the document and comes
 * back) is still read: its engaged time goes on (`heartbeat`), and its viewable impression stays one.
 * It used to stop watching on the way out and never start again, so the reader's time read as none.
 */
import assert from "node:assert/strict";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";

Deno.test({
  name: "widget in Chromium: moved in the page, it keeps counting engaged time, and is viewable once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is asked here: the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    await using b = await openSharedBrowser("widget moved in the page");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    await page.$eval(W, (e) => e.scrollIntoView({ block: "center" }));
    await world.until("widget_viewable", () => world.events.some((e) => e.event_type === "widget_viewable"), 6000);
    // The page moves the widget to another place of the document.
    await page.$eval(W, (e) => {
      const box = document.createElement("div");
      document.body.prepend(box);
      box.append(e);
      e.scrollIntoView({ block: "center" });
    });
    await page.mouse.move(200, 200);
    // The page's clock runs ahead to the next heartbeat (5 s) and the send after it (2 s) at once:
    // virtual time advances only while no request is pending, so the batch still reaches the server.
    const cdp = await page.createCDPSession();
    await cdp.send("Emulation.setVirtualTimePolicy", {
      policy: "pauseIfNetworkFetchesPending",
      budget: 8000,
    });
    await world.until("a heartbeat", () => world.events.some((e) => e.event_type === "heartbeat"), 12_000);
    assert.equal(world.events.filter((e) => e.event_type === "widget_viewable").length, 1);
    assert.equal(world.events.filter((e) => e.event_type === "widget_load").length, 1);
  },
});
