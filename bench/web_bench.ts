/**
 * Per-result and per-query costs of the web-facing parts of search: signing the two
 * links every SearchResult carries, verifying a click token, extracting and summarising a page.
 * Run: deno bench --allow-all bench/web_bench.ts
 */
import { FixedClock } from "../core/clock.ts";
import { extractArticle } from "../core/extract/article.ts";
import { summarize } from "../core/extract/summarize.ts";
import { SignedLinks } from "../core/links/tracking.ts";
import { ARTICLE_PAGE } from "../tests/web/_pages.ts";

const kv = await Deno.openKv(":memory:");
const links = new SignedLinks({ kv, clock: new FixedClock(), baseUrl: "http://127.0.0.1:8000" });
await links.init();
const article = {
  id: "ar_01JX5T3G7Q8R9S0T1U2V3W4X5Y",
  url: "https://news.example.com/2026/11/18/city-council-approves-riverside-flood-barrier",
  dataModelId: "dm_01JX5T3G7Q8R9S0T1U2V3W4X5Y",
  image: "https://cdn.example.com/images/2026/11/barrier.jpg",
};
const ctx = {
  tenantId: "tn_01JX5T3G7Q8R9S0T1U2V3W4X5Y",
  requestId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  position: 4,
};
const token = new URL(links.trackingUrl(article, ctx)).pathname.slice(3);
const text = extractArticle(ARTICLE_PAGE).text;

Deno.bench("SignedLinks.trackingUrl() + imageUrl() for one result", { group: "links", baseline: true }, () => {
  links.trackingUrl(article, ctx);
  links.imageUrl(article);
});
Deno.bench("SignedLinks.verifyClick()", { group: "links" }, async () => {
  await links.verifyClick(token);
});
Deno.bench("extractArticle() on a 7 KB news page", { group: "extract" }, () => {
  extractArticle(ARTICLE_PAGE);
});
const deep = "<html><body>" + "<div><span>x</span>".repeat(50_000) + "</div>".repeat(50_000) + "</body></html>";
Deno.bench(
  "extractArticle() on 1.25 MB of 50,000 nested divs (plain-text path)",
  { group: "extract", n: 5, warmup: 1 },
  () => {
    extractArticle(deep);
  },
);
Deno.bench("summarize() of that article (3 sentences)", { group: "extract" }, () => {
  summarize(text, { maxSentences: 3 });
});

globalThis.addEventListener("unload", () => kv.close());
