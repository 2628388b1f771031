import assert from "node:assert/strict";
import { feedServer, LONG, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("poller: markup in an RSS byline, channel title or category is read as text, as the item title is", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const link = feed.url("/a/1");
  feed.route("/feed.xml", () =>
    xml(`<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
<title><![CDATA[<b>Alpha</b> News]]></title>
<item><title><![CDATA[<i>Harbour</i> reopens]]></title><link>${link}</link>
<dc:creator><![CDATA[<img src=x onerror=alert(1)>Jordan <a href="https://evil.example">Okafor</a>]]></dc:creator>
<category><![CDATA[<script>steal()</script>Local]]></category><category>Ports &amp;amp; Harbours</category>
<description><![CDATA[${LONG("harbour")}]]></description></item>
</channel></rss>`));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  assert.equal((await w.poller().tick())[0]!.itemsNew, 1);
  const a = await w.deps.search.articleByUrl(w.dm.id, link);
  assert.equal(a!.title, "Harbour reopens");
  assert.equal(a!.author, "Jordan Okafor");
  assert.equal(a!.site, "Alpha News");
  assert.deepEqual(a!.categories, ["Local", "Ports & Harbours"]);
});

Deno.test("poller: markup in a sitemap's news:title is read as text", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const link = feed.url("/a/2");
  feed.route("/sitemap.xml", () =>
    new Response(
      `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
<url><loc>${link}</loc><news:news><news:title><![CDATA[<img src=x onerror=alert(1)>Ferry <b>strike</b> ends]]></news:title></news:news></url>
</urlset>`,
      { headers: { "content-type": "application/xml" } },
    ));
  feed.route(
    "/a/2",
    () =>
      new Response(`<!doctype html><html><body><article><p>${LONG("ferry")}</p></article></body></html>`, {
        headers: { "content-type": "text/html; charset=utf-8" },
      }),
  );
  await w.addSource({ type: "sitemap", url: feed.url("/sitemap.xml"), interval_s: 300 });
  assert.equal((await w.poller().tick())[0]!.itemsNew, 1);
  assert.equal((await w.deps.search.articleByUrl(w.dm.id, link))!.title, "Ferry strike ends");
});
