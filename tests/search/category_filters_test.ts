/**
 * Filters agents ask for, as predicates inside retrieval: categories / exclude_categories,
 * authors, include_text / exclude_text; categories from ingest and from feeds; the data model's
 * top categories on REST.
 */
import assert from "node:assert/strict";
import { parseFeed } from "../../core/sources/feeds.ts";
import { parseJsonFeed, parseSitemap } from "../../core/sources/parse.ts";
import { SEARCH_ALGORITHMS } from "../../core/search/types.ts";
import { bearer } from "../_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

/** 30 storm articles: 10 in Weather (by Ann Lee), 10 in Politics (by Bo Chan), 10 without a category. */
async function seed(w: W) {
  const items = [];
  for (let i = 0; i < 30; i++) {
    const kind = i % 3;
    items.push({
      url: `https://alpha.example/storm-${i}`,
      title: `Storm report ${i}`,
      body: kind === 0
        ? "The storm brought heavy rain and flooding to the harbour district overnight."
        : kind === 1
        ? "The council argued over the storm budget and emergency funding for the harbour."
        : "A storm passed the coast; the ferry service was cancelled for the day.",
      author: kind === 0 ? "Ann Lee" : kind === 1 ? "Bo Chan" : undefined,
      categories: kind === 0 ? ["Weather", "Local News"] : kind === 1 ? ["Politics"] : undefined,
      pubdate: hoursAgo(w, i + 1),
    });
  }
  const r = await w.deps.search.ingest(w.dm, items);
  assert.equal(r.failed, 0, JSON.stringify(r.results.filter((x) => x.error)));
}

// deno-lint-ignore no-explicit-any
const urls = (r: { json: any }) => r.json.response.results.map((x: { url: string }) => x.url) as string[];
const nOf = (u: string) => Number(u.split("-").at(-1));

Deno.test("categories keeps only articles of those categories (any case), with every algorithm; pages stay full", async () => {
  await using w = await searchWorld();
  await seed(w);
  for (const algorithm of SEARCH_ALGORITHMS) {
    const r = await search(w, {
      query: "storm",
      search_algorithm: algorithm,
      similarity_top_k: 10,
      categories: ["weather"],
    });
    assert.equal(r.status, 200, r.text);
    const got = urls(r);
    assert.equal(got.length, 10, algorithm);
    assert.ok(got.every((u) => nOf(u) % 3 === 0), `${algorithm}: ${got}`);
  }
});

Deno.test("exclude_categories drops those categories and keeps articles without any", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, {
    query: "storm",
    similarity_top_k: 30,
    num_results: 30,
    exclude_categories: ["POLITICS"],
  });
  assert.equal(r.status, 200, r.text);
  const got = urls(r);
  assert.equal(got.length, 20);
  assert.ok(got.every((u) => nOf(u) % 3 !== 1));
});

Deno.test("authors keeps only articles by those authors (case-insensitive, whole name)", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, { query: "storm", similarity_top_k: 30, num_results: 30, authors: ["bo chan"] });
  assert.equal(r.status, 200, r.text);
  const got = urls(r);
  assert.equal(got.length, 10);
  assert.ok(got.every((u) => nOf(u) % 3 === 1));
  const none = await search(w, { query: "storm", authors: ["Chan"] });
  assert.equal(none.json.response.results.length, 0);
});

Deno.test("include_text needs every word of the phrase; exclude_text drops articles holding one", async () => {
  await using w = await searchWorld();
  await seed(w);
  const inc = await search(w, {
    query: "storm",
    similarity_top_k: 30,
    num_results: 30,
    include_text: ["ferry service"],
  });
  assert.equal(inc.status, 200, inc.text);
  assert.equal(urls(inc).length, 10);
  assert.ok(urls(inc).every((u) => nOf(u) % 3 === 2));
  const exc = await search(w, {
    query: "storm",
    similarity_top_k: 30,
    num_results: 30,
    exclude_text: ["heavy rain"],
  });
  assert.equal(urls(exc).length, 20);
  assert.ok(urls(exc).every((u) => nOf(u) % 3 !== 0));
  // Both, and a category: the predicates combine.
  const both = await search(w, {
    query: "harbour",
    similarity_top_k: 30,
    num_results: 30,
    include_text: ["harbour"],
    exclude_text: ["flooding"],
    categories: ["politics"],
  });
  assert.equal(urls(both).length, 10);
});

Deno.test("filter fields are validated: 422 naming the field, never echoing the value", async () => {
  await using w = await searchWorld();
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ categories: "weather" }, /^categories/],
    [{ categories: [""] }, /^categories/],
    [{ authors: Array.from({ length: 51 }, (_, i) => `a${i}`) }, /^authors/],
    [{ include_text: ["the and of"] }, /^include_text/],
    [{ exclude_text: ["x".repeat(101)] }, /^exclude_text/],
  ];
  for (const [extra, re] of cases) {
    const r = await search(w, { query: "storm", ...extra });
    assert.equal(r.status, 422, r.text);
    assert.match(r.json.message, re);
    assert.ok(!r.text.includes("x".repeat(50)));
  }
});

Deno.test("GET /v1/data-models/{id}/categories lists the top categories, most used first", async () => {
  await using w = await searchWorld();
  await seed(w);
  await w.deps.search.ingest(w.dm, [{
    url: "https://beta.example/x",
    title: "Rain again",
    body: "More rain.",
    tags: ["weather", "Sport"],
  }]);
  const res = await w.app.request(`/v1/data-models/${w.dm.id}/categories`, { headers: bearer(w.key) });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(body.categories.slice(0, 3), [
    { category: "Weather", count: 11 },
    { category: "Local News", count: 10 },
    { category: "Politics", count: 10 },
  ]);
  const one = await w.app.request(`/v1/data-models/${w.dm.id}/categories?limit=1`, { headers: bearer(w.key) });
  assert.equal((await one.json()).categories.length, 1);
  const other = await w.app.request(`/v1/data-models/dm_01aaaaaaaaaaaaaaaaaaaaaaaa/categories`, {
    headers: bearer(w.key),
  });
  assert.equal(other.status, 404);
});

Deno.test("feeds carry categories: RSS <category>, Atom term, JSON Feed tags, sitemap news:keywords", () => {
  const rss = parseFeed(`<?xml version="1.0"?><rss><channel><title>S</title><item><title>T</title>
    <link>https://a.example/1</link><category>Weather</category><category>Local</category></item></channel></rss>`);
  assert.deepEqual(rss.items[0]!.categories, ["Weather", "Local"]);
  const atom = parseFeed(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><title>T</title>
    <link href="https://a.example/2"/><category term="Politics"/></entry></feed>`);
  assert.deepEqual(atom.items[0]!.categories, ["Politics"]);
  const json = parseJsonFeed(JSON.stringify({
    version: "https://jsonfeed.org/version/1.1",
    items: [{ url: "https://a.example/3", title: "T", tags: ["Sport", 7, "Tennis"] }],
  }));
  assert.deepEqual(json[0]!.categories, ["Sport", "Tennis"]);
  const sitemap = parseSitemap(
    `<?xml version="1.0"?><urlset xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
    <url><loc>https://a.example/4</loc><news:news><news:title>T</news:title>
    <news:keywords>Economy, Trade ,  Tariffs</news:keywords></news:news></url></urlset>`,
  );
  assert.deepEqual(sitemap[0]!.categories, ["Economy", "Trade", "Tariffs"]);
});
