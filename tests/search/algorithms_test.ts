import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { QuerySource } from "../../core/search/ports.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

/** Hand-made articles: three about interest rates (different ages), storms, and sport. */
async function handMade(w: W) {
  const items = [
    {
      url: "https://alpha.example/rates-hold",
      title: "Central bank holds interest rates steady as inflation cools",
      body: "The central bank kept its benchmark interest rate unchanged. Inflation cooled for a third month. " +
        "Mortgage holders hope interest rates will fall next year.",
      pubdate: hoursAgo(w, 24 * 20),
    },
    {
      url: "https://beta.example/rates-mortgage",
      title: "Mortgage holders brace for high interest rates",
      body: "Households with a mortgage face higher repayments while interest rates stay high. Lenders expect cuts.",
      pubdate: hoursAgo(w, 24 * 3),
    },
    {
      url: "https://gamma.example/rates-signal",
      title: "Central bank signals interest rate cuts could come next year",
      body: "The governor said the central bank could cut interest rates next year if inflation keeps easing.",
      pubdate: hoursAgo(w, 24 * 10),
    },
    {
      url: "https://alpha.example/storm",
      title: "Coastal storm forces evacuation of low-lying streets",
      body: "Emergency crews evacuated residents as a coastal storm brought flooding and a storm surge.",
      pubdate: hoursAgo(w, 2),
    },
    {
      url: "https://beta.example/cup",
      title: "City club wins the cup final in extra time",
      body: "The striker scored the winning goal in extra time and fans celebrated the cup final victory.",
      pubdate: hoursAgo(w, 1),
    },
  ];
  const r = await w.deps.search.ingest(w.dm, items);
  assert.equal(r.failed, 0);
}

const urls = (r: { json: { response: { results: { url: string }[] } } }) => r.json.response.results.map((x) => x.url);

Deno.test("semantic ranks the articles about the query first, best match on top", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const r = await search(w, { query: "central bank interest rates", similarity_top_k: 3 });
  assert.equal(r.status, 200);
  const got = urls(r);
  assert.equal(got.length, 3);
  assert.deepEqual(
    new Set(got),
    new Set([
      "https://alpha.example/rates-hold",
      "https://beta.example/rates-mortgage",
      "https://gamma.example/rates-signal",
    ]),
  );
  assert.ok(
    got[2] === "https://beta.example/rates-mortgage",
    "the article that does not mention the central bank is last",
  );
  const scores = r.json.response.results.map((x: { score: number }) => x.score);
  assert.deepEqual([...scores].sort((a, b) => b - a), scores);
});

Deno.test("semantic matches by meaning when no query word occurs (word vectors)", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const r = await search(w, { query: "hurricane", similarity_top_k: 1 });
  assert.deepEqual(urls(r), ["https://alpha.example/storm"]);
  const r2 = await search(w, { query: "soccer", similarity_top_k: 1 });
  assert.deepEqual(urls(r2), ["https://beta.example/cup"]);
});

Deno.test("most_recent returns the newest relevant articles, not the newest overall", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const r = await search(w, { query: "interest rates", search_algorithm: "most_recent", similarity_top_k: 3 });
  assert.deepEqual(urls(r), [
    "https://beta.example/rates-mortgage", // 3 days
    "https://gamma.example/rates-signal", // 10 days
    "https://alpha.example/rates-hold", // 20 days
  ]);
});

Deno.test("most_recent_semantic takes the semantic top set, then orders it newest first", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const semantic = urls(await search(w, { query: "central bank interest rate cuts", similarity_top_k: 2 }));
  const r = await search(w, {
    query: "central bank interest rate cuts",
    search_algorithm: "most_recent_semantic",
    similarity_top_k: 2,
  });
  assert.deepEqual(new Set(urls(r)), new Set(semantic));
  const dates = r.json.response.results.map((x: { pubdate_unix: number }) => x.pubdate_unix);
  assert.ok(dates[0] >= dates[1]);
  assert.deepEqual(urls(r), ["https://gamma.example/rates-signal", "https://alpha.example/rates-hold"]);
});

Deno.test("trending favours the keywords bursting in titles of the last 24 hours", async () => {
  await using w = await searchWorld();
  await handMade(w);
  // A burst: "wildfire" in several titles today, never in the week before.
  const burst = [1, 3, 5, 7].map((h, i) => ({
    url: `https://gamma.example/wildfire-${i}`,
    title: `Wildfire spreads near the hills, update ${i}`,
    body: "Firefighters battled a wildfire as winds picked up near the hills.",
    pubdate: hoursAgo(w, h),
  }));
  const older = [30, 50, 70, 90, 110, 130].map((h, i) => ({
    url: `https://alpha.example/budget-${i}`,
    title: `City budget debate continues, part ${i}`,
    body: "Councillors debated the city budget again.",
    pubdate: hoursAgo(w, h),
  }));
  await w.deps.search.ingest(w.dm, [...burst, ...older]);
  const r = await search(w, { query: "news", search_algorithm: "trending", similarity_top_k: 4 });
  assert.equal(r.status, 200);
  assert.ok(urls(r).every((u: string) => u.includes("wildfire")), urls(r).join(" "));
  assert.match(r.json.response.message, /trending keywords: .*wildfire/);
  assert.doesNotMatch(r.json.response.message, /budget/);
});

Deno.test("trending uses recent query events from the query source when it has them", async () => {
  const asked: { dmId: string; windowMs: number }[] = [];
  const events: QuerySource = {
    recentQueries: (dmId, since, until) => {
      asked.push({ dmId, windowMs: until.getTime() - since.getTime() });
      return Promise.resolve([{ query: "cup final", count: 40 }, { query: "extra time goal", count: 12 }]);
    },
  };
  await using w = await searchWorld({ overrides: { querySource: events } });
  await handMade(w);
  const r = await search(w, { query: "today", search_algorithm: "trending", similarity_top_k: 1 });
  assert.deepEqual(urls(r), ["https://beta.example/cup"]);
  assert.match(r.json.response.message, /trending keywords: cup, final/);
  assert.ok(asked.length > 0);
  assert.ok(asked.every((a) => a.dmId === w.dm.id && a.windowMs === 86_400_000), JSON.stringify(asked));
});

Deno.test("trending without trending keywords falls back to the newest relevant articles and says so", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const r = await search(w, { query: "interest rates", search_algorithm: "trending", similarity_top_k: 2 });
  assert.equal(r.status, 200);
  assert.match(r.json.response.message, /no trending keywords/);
  assert.deepEqual(urls(r), ["https://beta.example/rates-mortgage", "https://gamma.example/rates-signal"]);
});

Deno.test("ref + num_articles_ref: that many from the ref domain, the rest from other sites", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const r = await search(w, {
    query: "interest rates",
    ref: "https://www.alpha.example/page",
    num_articles_ref: 1,
    similarity_top_k: 3,
  });
  const domains = r.json.response.results.map((x: { site_domain: string }) => x.site_domain);
  assert.equal(domains.length, 3);
  assert.equal(domains.filter((d: string) => d === "alpha.example").length, 1);
  // num_articles_ref 0 with a ref: all from other sites.
  const none = await search(w, {
    query: "interest rates",
    ref: "alpha.example",
    num_articles_ref: 0,
    similarity_top_k: 2,
  });
  assert.ok(none.json.response.results.every((x: { site_domain: string }) => x.site_domain !== "alpha.example"));
  // The ref domain has fewer than asked: all it has, the rest from others.
  const short = await search(w, {
    query: "interest rates",
    ref: "gamma.example",
    num_articles_ref: 3,
    similarity_top_k: 3,
  });
  const shortDomains = short.json.response.results.map((x: { site_domain: string }) => x.site_domain);
  assert.equal(shortDomains.length, 3);
  assert.ok(shortDomains.includes("gamma.example"));
});

Deno.test("similarity_top_k caps the ranked list (default 9) and page/num_results page through it", async () => {
  await using w = await searchWorld();
  const many = Array.from({ length: 30 }, (_, i) => ({
    url: `https://alpha.example/markets-${i}`,
    title: `Stock markets report number ${i}`,
    body: `Stock markets moved on day ${i} as investors weighed the economy.`,
    pubdate: hoursAgo(w, i + 1),
  }));
  await w.deps.search.ingest(w.dm, many);
  const def = await search(w, { query: "stock markets" });
  assert.equal(def.json.response.results.length, 9);
  const p1 = await search(w, { query: "stock markets", similarity_top_k: 25, num_results: 10, page: 1 });
  const p2 = await search(w, { query: "stock markets", similarity_top_k: 25, num_results: 10, page: 2 });
  const p3 = await search(w, { query: "stock markets", similarity_top_k: 25, num_results: 10, page: 3 });
  const p4 = await search(w, { query: "stock markets", similarity_top_k: 25, num_results: 10, page: 4 });
  assert.equal(p1.json.response.results.length, 10);
  assert.equal(p2.json.response.results.length, 10);
  assert.equal(p3.json.response.results.length, 5);
  assert.equal(p4.json.response.results.length, 0);
  const all = [...urls(p1), ...urls(p2), ...urls(p3)];
  assert.equal(new Set(all).size, 25);
  const whole = await search(w, { query: "stock markets", similarity_top_k: 25, num_results: 25 });
  assert.deepEqual(urls(whole), all);
});

Deno.test("trending falls back to the queries this process served when the query source fails", async () => {
  await using w = await searchWorld({
    overrides: { querySource: { recentQueries: () => Promise.reject(new Error("analytics down")) } },
  });
  await handMade(w);
  for (let i = 0; i < 3; i++) await search(w, { query: "marathon cup final" });
  const r = await search(w, { query: "today", search_algorithm: "trending", similarity_top_k: 1 });
  assert.equal(r.status, 200);
  assert.deepEqual(urls(r), ["https://beta.example/cup"]);
  assert.match(r.json.response.message, /trending keywords: .*cup/);
  assert.ok(w.log.lines.some((l) => l.msg === "query events unavailable for trending"));
});

Deno.test("trending reads Ask AI query events from analytics for the AI models grounded in the data model", async () => {
  await using w = await searchWorld();
  await handMade(w);
  const am = await w.deps.repos.aiModels.create({
    id: newId("am", w.clock),
    tenantId: w.tenantId,
    name: "Assistant",
    groundingDataModelIds: [w.dm.id],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  const asks = ["who won the cup final", "cup final extra time", "cup final goal"].map((prompt) => ({
    event_type: "query",
    ai_agent: am.id,
    interaction_type: "search",
    prompt,
  }));
  await w.deps.events!.record(asks);
  await w.deps.events.flush();
  const r = await search(w, { query: "today", search_algorithm: "trending", similarity_top_k: 1 });
  assert.equal(r.status, 200);
  assert.deepEqual(urls(r), ["https://beta.example/cup"]);
  assert.match(r.json.response.message, /trending keywords: (cup, final|final, cup)/);
});
