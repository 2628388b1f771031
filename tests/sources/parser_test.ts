import assert from "node:assert/strict";
import { htmlToText } from "../../core/sources/feeds.ts";
import { guardMarkup, MAX_DOCUMENT_ENTRIES, MAX_MARKUP_DEPTH } from "../../core/sources/markup_guard.ts";
import { parseSourceDocument, SourceFormatError } from "../../core/sources/parse.ts";
import { inlineSourceParser, WorkerSourceParser } from "../../core/sources/parser.ts";
import { LONG, rss } from "./_feed_server.ts";

const nest = (tag: string, depth: number) => `<${tag}>`.repeat(depth) + "x" + `</${tag}>`.repeat(depth);

Deno.test("guardMarkup() refuses nesting past the limit, and only past it", () => {
  assert.equal(guardMarkup(`<urlset>${nest("a", MAX_MARKUP_DEPTH - 1)}</urlset>`).maxDepth, MAX_MARKUP_DEPTH);
  assert.throws(
    () => guardMarkup(`<urlset>${nest("a", MAX_MARKUP_DEPTH)}</urlset>`),
    (err: unknown) =>
      err instanceof SourceFormatError && err.message === "the document is nested deeper than 256 levels",
  );
  // Siblings, self-closing tags, comments, CDATA and processing instructions do not nest.
  const flat = `<?xml version="1.0"?><rss><!-- <a><a> --><![CDATA[<a><a><a>]]>${
    "<b/><c x='>'></c>".repeat(5000)
  }</rss>`;
  assert.equal(guardMarkup(flat).maxDepth, 2);
});

Deno.test("guardMarkup() in HTML mode: void, optional-end and raw-text elements do not count as depth", () => {
  const html = "<p>one<p>two<br><img src=x>" + "<li>item".repeat(1000) + "<script>" + "<div>".repeat(1000) +
    "</script><div><span>deep enough</span></div>";
  assert.equal(guardMarkup(html, { html: true }).maxDepth, 2);
  assert.throws(() => htmlToText(nest("span", 300)), /an item's HTML is nested deeper than 256 levels/);
  assert.equal(htmlToText("<p>Hello <b>world</b></p>"), "Hello world");
});

Deno.test("guardMarkup() refuses entity declarations (billion laughs) and more entries than a sitemap may hold", () => {
  const laughs = `<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><rss>&b;</rss>`;
  assert.throws(() => guardMarkup(laughs), /the document declares entities, which sources may not/);
  // A DOCTYPE without an internal subset is fine.
  assert.doesNotThrow(() => guardMarkup(`<!DOCTYPE rss><rss><item/></rss>`));
  const many = `<urlset>${"<url><loc>https://a.example/</loc></url>".repeat(MAX_DOCUMENT_ENTRIES + 1)}</urlset>`;
  assert.throws(() => guardMarkup(many), /the document has more than 50000 entries/);
  const json = JSON.stringify({
    version: "https://jsonfeed.org/version/1.1",
    items: Array.from({ length: MAX_DOCUMENT_ENTRIES + 1 }, (_, i) => ({ id: String(i) })),
  });
  assert.throws(() => parseSourceDocument("jsonfeed", json, 10), /the document has more than 50000 entries/);
});

Deno.test("WorkerSourceParser reads what the inline parser reads, refuses hostile documents, and stops one past its deadline", async () => {
  const feed = rss([
    {
      link: "https://alpha.example/a/1",
      title: "Rail strike ends",
      content: LONG("rail"),
      pubDate: "Fri, 20 Nov 2026 10:00:00 GMT",
    },
    { link: "https://alpha.example/a/2", title: "Tram line extended", description: "Short" },
  ]);
  const parser = new WorkerSourceParser({ timeoutMs: 5000 });
  try {
    assert.deepEqual(
      await parser.document("t", "rss", feed, 10),
      await inlineSourceParser.document("t", "rss", feed, 10),
    );
    await assert.rejects(
      parser.document("t", "sitemap", `<urlset><url>${nest("x", 60_000)}</url></urlset>`, 10),
      (err: unknown) => err instanceof SourceFormatError && /nested deeper than 256 levels/.test(err.message),
    );
  } finally {
    parser.close();
  }
  // Within the guard's limits but slow to read: 45,000 entries (seconds) against a 300 ms deadline.
  const tiny = `<urlset><url><loc>https://a.example/1</loc></url></urlset>`;
  const slow = new WorkerSourceParser({ timeoutMs: 300 });
  try {
    await slow.document("t", "sitemap", tiny, 10); // the worker is up (start-up is not parse time)
    const big = `<urlset>${
      "<url><loc>https://a.example/p</loc><lastmod>2026-11-20</lastmod></url>".repeat(45_000)
    }</urlset>`;
    await assert.rejects(
      slow.document("t", "sitemap", big, 10),
      (err: unknown) =>
        err instanceof SourceFormatError && err.message === "the document took longer than 300 ms to read",
    );
    // The stuck worker was replaced: the next document is read.
    assert.equal((await slow.document("t", "sitemap", tiny, 10)).length, 1);
  } finally {
    slow.close();
  }
});
