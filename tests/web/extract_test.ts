import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { clipText, decodeHtml, WebPageAnalyzer } from "../../core/extract/analyzer.ts";
import { extractArticle, READABILITY_LIMITS } from "../../core/extract/article.ts";
import { ExtractionTimeoutError, inlineExtractor, WorkerExtractor } from "../../core/extract/extractor.ts";
import { splitSentences, summarize } from "../../core/extract/summarize.ts";
import { SafeFetcher } from "../../core/net/safe_fetch.ts";
import { UrlAnalysisError } from "../../core/search/url_analyzer.ts";
import { startServer } from "../../routes/server.ts";
import { ARTICLE_PAGE, LATIN1_PAGE_TEXT, TINY_PAGE } from "./_pages.ts";
import { httpStatus } from "../../routes/error_status.ts";

Deno.test("extractArticle() keeps the story and drops navigation, ads and footer", () => {
  const a = extractArticle(ARTICLE_PAGE);
  assert.equal(a.title, "City council approves riverside flood barrier");
  assert.equal(a.siteName, "The Harbor Ledger");
  assert.equal(a.publishedTime, "2026-11-18T06:30:00.000Z");
  assert.match(a.byline ?? "", /Maria Keller/);
  assert.match(a.text, /^The city council voted on Tuesday/m);
  assert.match(a.text, /public meetings about the construction schedule in December\.$/);
  for (
    const noise of [
      "Subscribe",
      "winter tyres",
      "Dream holidays",
      "Most read",
      "newsletter",
      "All rights reserved",
      "cookies",
    ]
  ) {
    assert.ok(!a.text.includes(noise), `text should not contain ${noise}`);
  }
  // Paragraphs stay separate: no "floods.The" run-ons.
  assert.ok(a.text.split("\n\n").length >= 6);
});

Deno.test("extractArticle() falls back to body text on a page without an article", () => {
  const a = extractArticle(TINY_PAGE);
  assert.equal(a.title, "Tiny");
  assert.equal(a.text, "Just one short line here.");
});

Deno.test("decodeHtml() honours a charset declared in a meta tag", () => {
  const bytes = Uint8Array.from(LATIN1_PAGE_TEXT, (c) => c.charCodeAt(0));
  assert.match(decodeHtml(bytes), /Café crème brûlée/);
  assert.match(decodeHtml(new TextEncoder().encode("<p>naïve</p>"), "no-such-charset"), /naïve/);
});

Deno.test("splitSentences() does not split at abbreviations, initials or decimals", () => {
  assert.deepEqual(
    splitSentences("Dr. Smith met J. R. Doe at 3.5 p.m. on Friday. U.S. officials agreed! Was it late? Yes."),
    ["Dr. Smith met J. R. Doe at 3.5 p.m. on Friday.", "U.S. officials agreed!", "Was it late?", "Yes."],
  );
  assert.deepEqual(splitSentences("First paragraph without stop\n\nSecond one."), [
    "First paragraph without stop",
    "Second one.",
  ]);
});

Deno.test("summarize() picks central sentences in document order, deterministically and bounded", () => {
  const text = extractArticle(ARTICLE_PAGE).text;
  const a = summarize(text, { maxSentences: 3 });
  assert.equal(a, summarize(text, { maxSentences: 3 }), "same input, same summary");
  const sentences = splitSentences(text);
  const picked = splitSentences(a);
  assert.equal(picked.length, 3);
  const positions = picked.map((s) => sentences.indexOf(s));
  assert.ok(positions.every((p) => p >= 0), "summary sentences are verbatim");
  assert.deepEqual([...positions].sort((x, y) => x - y), positions, "original order");
  assert.match(a, /flood barrier/);
  assert.ok(summarize(text, { maxSentences: 3, maxChars: 200 }).length <= 200);
  const one = summarize("word ".repeat(400).trim() + ".", { maxChars: 100 });
  assert.ok(one.length <= 100 && one.endsWith("…"));
  assert.equal(summarize("", {}), "");
  assert.equal(summarize("Only one sentence.", { maxSentences: 3 }), "Only one sentence.");
});

Deno.test("WebPageAnalyzer.analyze() fetches, extracts and summarises a page, and caches it", async () => {
  let hits = 0;
  const server = startServer((req) => {
    const path = new URL(req.url).pathname;
    hits++;
    if (path === "/story") {
      return new Response(ARTICLE_PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (path === "/image") return new Response(new Uint8Array(10), { headers: { "content-type": "image/png" } });
    if (path === "/to-metadata") return Response.redirect("http://169.254.169.254/latest/meta-data/", 302);
    if (path === "/empty") {
      return new Response("<html><body></body></html>", { headers: { "content-type": "text/html" } });
    }
    return new Response("gone", { status: 410, headers: { "content-type": "text/html" } });
  });
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  const analyzer = new WebPageAnalyzer({ fetcher: new SafeFetcher({ allowPrivate: true }), clock });
  const blocked = new WebPageAnalyzer({ fetcher: new SafeFetcher(), clock });
  try {
    const page = await analyzer.analyze(`${server.url}/story`);
    assert.equal(page.url, `${server.url}/story`);
    assert.equal(page.title, "City council approves riverside flood barrier");
    assert.equal(page.siteName, "The Harbor Ledger");
    assert.equal(page.publishedTime, "2026-11-18T06:30:00.000Z");
    assert.match(page.text, /regional government will pay half/);
    assert.ok(page.summary.length > 50 && page.summary.length <= 600);
    await analyzer.analyze(`${server.url}/story`);
    assert.equal(hits, 1, "second analysis came from the cache");
    clock.advance(601_000);
    for (
      const [path, code] of [
        ["/image", "unsupported_content_type"],
        ["/gone", "bad_status"],
        ["/empty", "no_content"],
        ["/to-metadata", "blocked_address"],
      ]
    ) {
      await assert.rejects(analyzer.analyze(`${server.url}${path}`), (err: unknown) => {
        assert.ok(err instanceof UrlAnalysisError);
        assert.equal(err.code, code);
        assert.equal(httpStatus(err), 422);
        assert.match(err.message, /^query: the URL could not be analysed: /);
        return true;
      });
    }
    await assert.rejects(
      blocked.analyze(`${server.url}/story`),
      (err: unknown) => err instanceof UrlAnalysisError && err.code === "blocked_address",
    );
  } finally {
    analyzer.close();
    blocked.close();
    await server.shutdown();
  }
});

Deno.test("extractArticle() reads pathologically deep or large markup as plain text, quickly", () => {
  const deep = "<html><body>" + "<div><span>x</span>".repeat(20_000) + "</div>".repeat(20_000) + "</body></html>";
  const a = extractArticle(deep);
  assert.ok(a.text.startsWith("x"));
  const flat = "<html><body>" + "<div class='c'><a href='/x'>link</a> text</div>".repeat(30_000) + "</body></html>";
  assert.ok(extractArticle(flat).text.length > 0);
  assert.ok(READABILITY_LIMITS.maxDepth >= 40, "real pages (depth 20-40) still get Readability");
});

Deno.test("WorkerExtractor gives the same article as inline extraction, and stops a page past its deadline", async () => {
  const extractor = new WorkerExtractor({ timeoutMs: 2000 });
  try {
    assert.deepEqual(await extractor.extract(ARTICLE_PAGE), await inlineExtractor.extract(ARTICLE_PAGE));
    // Within the depth limit Readability runs, and at this depth it is slow: the deadline stops it.
    const slow = new WorkerExtractor({ timeoutMs: 50 });
    try {
      const deep = "<html><body>" + "<div><span>x</span>".repeat(75) + "</div>".repeat(75) + "</body></html>";
      await assert.rejects(slow.extract(deep.repeat(20)), ExtractionTimeoutError);
      // The worker was replaced: the next page works.
      const again = new WorkerExtractor({ timeoutMs: 5000 });
      try {
        assert.equal((await again.extract(TINY_PAGE)).text, "Just one short line here.");
      } finally {
        again.close();
      }
    } finally {
      slow.close();
    }
    assert.equal((await extractor.extract(TINY_PAGE)).title, "Tiny");
  } finally {
    extractor.close();
  }
});

Deno.test("clipText() keeps whole paragraphs under the cap", () => {
  const text = ["a".repeat(60), "b".repeat(60), "c".repeat(60)].join("\n\n");
  assert.equal(clipText(text, 1000), text);
  assert.equal(clipText(text, 130), "a".repeat(60) + "\n\n" + "b".repeat(60));
  assert.equal(clipText("x".repeat(200), 50), "x".repeat(50));
});
