import assert from "node:assert/strict";
import { feedServer, LONG } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

const page = (title: string) =>
  new Response(
    `<!doctype html><html><head><title>${title}</title></head><body><article><h1>${title}</h1><p>${
      LONG(title)
    }</p></article></body></html>`,
    { headers: { "content-type": "text/html; charset=utf-8" } },
  );

const urlset = (entries: { loc: string; title: string }[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
${
    entries.map((e) =>
      `<url><loc>${e.loc}</loc><lastmod>2026-11-22</lastmod><news:news><news:title>${e.title}</news:title></news:news></url>`
    ).join("\n")
  }
</urlset>`;

Deno.test("poller: a sitemap's entries on another site are skipped, so it cannot name or retitle that site's articles", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  // The same server under another host name: another site for the sitemap at 127.0.0.1.
  const foreign = feed.url("/2026/foreign").replace("127.0.0.1", "localhost");
  const xml = (body: string) => new Response(body, { headers: { "content-type": "application/xml" } });
  feed.route("/sitemap.xml", () =>
    xml(urlset([
      { loc: foreign, title: "Retitled by another site" },
      { loc: feed.url("/2026/own"), title: "Own story" },
    ])));
  // And through an index: its child is on the index's site, the child's entries must be too.
  feed.route("/index.xml", () =>
    xml(`<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${
      feed.url("/child.xml")
    }</loc></sitemap></sitemapindex>`));
  feed.route("/child.xml", () => xml(urlset([{ loc: foreign, title: "Retitled through an index" }])));
  feed.route("/2026/foreign", () => page("Foreign story"));
  feed.route("/2026/own", () => page("Own story"));
  assert.equal((await w.addSource({ type: "sitemap", url: feed.url("/sitemap.xml") })).status, 201);
  assert.equal((await w.addSource({ type: "sitemap", url: feed.url("/index.xml") })).status, 201);

  const outcomes = await w.poller().tick();
  assert.deepEqual(outcomes.map((o) => o.itemsNew).sort(), [0, 1]);
  assert.equal(feed.hits("/2026/foreign"), 0, "the other site's page is not fetched");
  assert.equal(await w.deps.search.articleByUrl(w.dm.id, foreign), null);
  assert.ok(await w.deps.search.articleByUrl(w.dm.id, feed.url("/2026/own")));
});
