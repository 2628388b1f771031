import assert from "node:assert/strict";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";

Deno.test({
  name: "widget events: a batch refused with 429 is sent again after its Retry-After with the same event ids",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is asked here: the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    world.refuseNextEvents(() =>
      Response.json({ message: "rate limit exceeded: too many requests from this address" }, {
        status: 429,
        headers: { "retry-after": "1" },
      })
    );
    await using b = await openSharedBrowser("widget events retry");
    await b.page.goto(world.siteUrl, { waitUntil: "load" });
    await b.page.waitForSelector(`${W}[data-state=ready]`);
    await world.until("the refused batch", () => world.refused.length > 0);
    await world.until("the batch again", () => world.events.some((e) => e.event_type === "widget_load"));
    const ids = (list: Record<string, unknown>[]) => list.map((e) => e.event_id);
    // Everything refused came back with the same ids, once (the service would store an id once anyway).
    const again = world.events.filter((e) => ids(world.refused).includes(e.event_id));
    assert.deepEqual(ids(again), ids(world.refused));
    assert.equal(world.events.filter((e) => e.event_type === "widget_load").length, 1);
    await b.page.goto("about:blank");
  },
});
