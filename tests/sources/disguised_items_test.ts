import assert from "node:assert/strict";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("poller: a title with bidi or zero-width characters is stored clean and not rewritten at every poll", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const title = "Harbour\u200B bridge \u202Eserutcip\u202C reopens";
  feed.route("/feed.xml", () => xml(rss([{ link: feed.url("/a/1"), title, content: LONG("bridge") }])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  const p = w.poller();
  assert.equal((await p.tick())[0]!.itemsNew, 1);
  const stored = await w.deps.search.articleByUrl(w.dm.id, feed.url("/a/1"));
  assert.equal(stored!.title, "Harbour bridge serutcip reopens");
  w.clock.advance(300_000);
  const [again] = await p.tick();
  assert.equal(again!.status, "ok");
  assert.equal(again!.itemsUpdated, 0, "the unchanged item is not rewritten");
});
