import assert from "node:assert/strict";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("poller: an item whose page names another canonical URL is not fetched again at every poll", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const page = () =>
    new Response(
      `<!doctype html><html><head><title>Lighthouse restored</title><link rel="canonical" href="${
        feed.url("/story")
      }"></head><body><article><h1>Lighthouse restored</h1><p>${LONG("lighthouse")}</p></article></body></html>`,
      { headers: { "content-type": "text/html; charset=utf-8" } },
    );
  // A feed of AMP (or redirecting) links: each names the story's own URL as canonical.
  feed.route("/amp/story", page);
  feed.route("/feed.xml", () =>
    xml(rss([{
      link: feed.url("/amp/story"),
      title: "Lighthouse restored",
      description: "Short teaser.",
      pubDate: "Sun, 22 Nov 2026 10:00:00 GMT",
    }])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), fetch_pages: true, interval_s: 300 });
  const p = w.poller();
  assert.equal((await p.tick())[0]!.itemsNew, 1);
  for (let i = 0; i < 3; i++) {
    w.clock.advance(300_000);
    const [o] = await p.tick();
    assert.equal(o!.pagesFetched, 0, "the page was read and the source dates the item as before");
  }
  assert.equal(feed.hits("/amp/story"), 1);
});
