/**
 * The poller reads an item page's `<link rel=canonical>` on the event loop (core/sources/item_url.ts).
 * Its pattern scanned from each `<link` to the end of the page for a `>`: a page of 200 KB that
 * repeats `<link` held the loop 2.6 s in every poll that fetched it, for every tenant of the process.
 */
import assert from "node:assert/strict";
import { worstLoopGap } from "../_loop_gap.ts";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("poller: an item page of 40,000 unclosed `<link` is read without holding the event loop 1 s", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/story", () =>
    new Response(
      `<!doctype html><html><head><title>Lighthouse restored</title></head><body><article><h1>Lighthouse restored</h1>` +
        `<p>${LONG("lighthouse")}</p></article></body></html>${"<link".repeat(40_000)}`,
      { headers: { "content-type": "text/html; charset=utf-8" } },
    ));
  feed.route("/feed.xml", () =>
    xml(rss([{
      link: feed.url("/story"),
      title: "Lighthouse restored",
      description: "Short teaser.",
      pubDate: "Sun, 22 Nov 2026 10:00:00 GMT",
    }])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), fetch_pages: true, interval_s: 300 });
  const { out, worstMs } = await worstLoopGap(() => w.poller().tick());
  assert.equal(out[0]!.itemsNew, 1);
  assert.equal(out[0]!.pagesFetched, 1);
  assert.ok(worstMs < 1000, `worst event-loop gap ${Math.round(worstMs)} ms`);
});
