import assert from "node:assert/strict";
import { gzipSync as nodeGzip } from "node:zlib";
import { parseSourceDocument } from "../../core/sources/parse.ts";
import { gunzipCapped, parseSitemapIndex } from "../../core/sources/sitemap_index.ts";
import { search } from "../search/_world.ts";
import { feedServer, LONG } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

const gzipSync = (data: string | Uint8Array) => new Uint8Array(nodeGzip(data));

const urlset = (entries: { loc: string; title?: string; date?: string }[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
${
    entries.map((e) =>
      `<url><loc>${e.loc}</loc>${e.date ? `<lastmod>${e.date}</lastmod>` : ""}${
        e.title ? `<news:news><news:title>${e.title}</news:title></news:news>` : ""
      }</url>`
    ).join("\n")
  }
</urlset>`;

const sitemapIndex = (children: { loc: string; lastmod?: string }[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${
    children.map((c) => `<sitemap><loc>${c.loc}</loc>${c.lastmod ? `<lastmod>${c.lastmod}</lastmod>` : ""}</sitemap>`)
      .join("\n")
  }
</sitemapindex>`;

const xmlResponse = (body: string) => new Response(body, { headers: { "content-type": "application/xml" } });
const page = (title: string, topic: string) =>
  new Response(
    `<!doctype html><html><head><title>${title}</title></head><body><article><h1>${title}</h1><p>${LONG(topic)}</p><p>${
      LONG(topic + " follow-up")
    }</p></article></body></html>`,
    { headers: { "content-type": "text/html; charset=utf-8" } },
  );

Deno.test("parseSitemapIndex() keeps children of its own site, newest lastmod first, undated after in order", () => {
  const got = parseSitemapIndex(
    sitemapIndex([
      { loc: "https://news.example/s/undated-1.xml" },
      { loc: "https://www.news.example/s/2026-10.xml", lastmod: "2026-10-31" },
      { loc: "https://evil.example/s/2026-11.xml", lastmod: "2026-11-30" },
      { loc: "https://news.example/s/2026-11.xml.gz", lastmod: "2026-11-22T10:00:00Z" },
      { loc: "https://news.example/s/undated-2.xml" },
      { loc: "https://news.example/s/2026-11.xml.gz", lastmod: "2026-11-22T10:00:00Z" },
      { loc: "ftp://news.example/s/x.xml" },
      { loc: "/s/relative.xml", lastmod: "not a date" },
    ]),
    "https://news.example/sitemap_index.xml",
  );
  assert.deepEqual(got.map((c) => c.url), [
    "https://news.example/s/2026-11.xml.gz",
    "https://www.news.example/s/2026-10.xml",
    "https://news.example/s/undated-1.xml",
    "https://news.example/s/undated-2.xml",
    "https://news.example/s/relative.xml",
  ]);
});

Deno.test("parseSitemapIndex() refuses an index that lists no sitemap of its own site", () => {
  assert.throws(
    () => parseSitemapIndex(sitemapIndex([{ loc: "https://evil.example/a.xml" }]), "https://news.example/i.xml"),
    /lists no sitemap of its own site/,
  );
});

Deno.test("parseSourceDocument(sitemap) reads urlset entries with the news title and date, newest first", () => {
  const items = parseSourceDocument(
    "sitemap",
    urlset([
      { loc: "https://news.example/old", date: "2026-01-01" },
      { loc: "https://news.example/new", title: "New bridge", date: "2026-11-20" },
    ]),
    10,
  );
  assert.deepEqual(items.map((i) => [i.url, i.title]), [
    ["https://news.example/new", "New bridge"],
    ["https://news.example/old", undefined],
  ]);
});

Deno.test("gunzipCapped() inflates a sitemap and refuses one that inflates past the cap", async () => {
  const text = urlset([{ loc: "https://news.example/a" }]);
  assert.equal(new TextDecoder().decode(await gunzipCapped(gzipSync(text), 1024 * 1024)), text);
  const bomb = gzipSync(new Uint8Array(2 * 1024 * 1024)); // about 2 KiB that inflate to 2 MiB
  await assert.rejects(() => gunzipCapped(bomb, 1024 * 1024), /inflates past 1048576 bytes/);
  await assert.rejects(() => gunzipCapped(new Uint8Array([0x1f, 0x8b, 1, 2, 3]), 1024), /could not be inflated/);
});

Deno.test("poller: a sitemap index is registered and polled through its newest child sitemaps of the same site", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/sitemap_index.xml", () =>
    xmlResponse(sitemapIndex([
      { loc: feed.url("/maps/oldest.xml"), lastmod: "2026-09-01" },
      { loc: feed.url("/maps/nested.xml"), lastmod: "2026-11-21" },
      { loc: feed.url("/maps/november.xml.gz"), lastmod: "2026-11-22" },
      { loc: feed.url("/maps/october.xml"), lastmod: "2026-10-31" },
      { loc: "http://other.example/maps/foreign.xml", lastmod: "2026-11-23" },
    ])));
  feed.route("/maps/november.xml.gz", () =>
    new Response(
      gzipSync(urlset([{ loc: feed.url("/2026/lighthouse"), title: "Lighthouse restored", date: "2026-11-22" }])),
      { headers: { "content-type": "application/x-gzip" } },
    ));
  feed.route(
    "/maps/october.xml",
    () =>
      xmlResponse(urlset([{ loc: feed.url("/2026/glacier"), title: "Glacier retreat measured", date: "2026-10-30" }])),
  );
  // An index inside an index is not followed (the protocol allows one level).
  feed.route("/maps/nested.xml", () => xmlResponse(sitemapIndex([{ loc: feed.url("/maps/deeper.xml") }])));
  feed.route("/maps/oldest.xml", () => xmlResponse(urlset([{ loc: feed.url("/2026/old"), title: "Old story" }])));
  feed.route("/2026/lighthouse", () => page("Lighthouse restored", "lighthouse"));
  feed.route("/2026/glacier", () => page("Glacier retreat measured", "glacier"));

  const added = await w.addSource({ type: "sitemap", url: feed.url("/sitemap_index.xml") });
  assert.equal(added.status, 201, JSON.stringify(added.json));

  const [outcome] = await w.poller().tick();
  assert.equal(outcome!.status, "ok", outcome!.error);
  assert.equal(outcome!.sitemapsRead, 2, "the gzipped and the plain child; the nested index is skipped");
  assert.equal(outcome!.itemsNew, 2);
  assert.equal(feed.hits("/maps/oldest.xml"), 0, "only the newest SOURCE_CHILD_SITEMAPS children are read");
  assert.equal(feed.hits("/maps/deeper.xml"), 0);
  const found = await search(w, { query: "lighthouse restored" });
  assert.equal(found.json.response.results[0].title, "Lighthouse restored");
  assert.match(found.json.response.results[0].summary, /lighthouse/i);
  const line = w.log.lines.find((l) => l.msg === "source polled");
  assert.equal(line?.sitemaps_read, 2);
});

Deno.test("poller: an index whose children cannot be read fails the poll with our own message", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/sitemap_index.xml", () =>
    xmlResponse(sitemapIndex([
      { loc: feed.url("/maps/missing.xml") },
      { loc: feed.url("/maps/bomb.xml.gz") },
    ])));
  feed.route(
    "/maps/bomb.xml.gz",
    () => new Response(gzipSync(new Uint8Array(4 * 1024 * 1024)), { headers: { "content-type": "application/gzip" } }),
  );
  assert.equal((await w.addSource({ type: "sitemap", url: feed.url("/sitemap_index.xml") })).status, 201);
  const [outcome] = await w.poller().tick();
  assert.equal(outcome!.status, "error");
  assert.equal(outcome!.error, "no sitemap listed by the index could be read");
  const listed = (await (await w.api("/sources")).json()).data[0];
  assert.equal(listed.last_error, "no sitemap listed by the index could be read");
});
