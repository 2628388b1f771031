import assert from "node:assert/strict";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("poller: an item dated years ahead is refused, the others are stored", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/feed.xml", () =>
    xml(rss([
      {
        link: feed.url("/a/pinned"),
        title: "Pinned forever",
        content: LONG("pin"),
        pubDate: "Fri, 01 Jan 2100 00:00:00 GMT",
      },
      {
        link: feed.url("/a/today"),
        title: "Today's story",
        content: LONG("today"),
        pubDate: "Sun, 22 Nov 2026 10:00:00 GMT",
      },
    ])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  const [o] = await w.poller().tick();
  assert.equal(o!.itemsNew, 1);
  assert.equal(await w.deps.search.articleByUrl(w.dm.id, feed.url("/a/pinned")), null);
  assert.ok(await w.deps.search.articleByUrl(w.dm.id, feed.url("/a/today")));
});
