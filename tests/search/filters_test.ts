/**
 * Search filters (include/exclude domains, publication-date window) and `explain`, on the bearer
 * route with every algorithm and the `ref` quota, and on the payproxy route.
 */
import assert from "node:assert/strict";
import { SEARCH_ALGORITHMS } from "../../core/search/types.ts";
import { signedInit, startAllowancePeer } from "../payproxy/_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

const TOPICS = [
  ["Storm floods the coastal town", "The storm surge flooded the harbour and the coastal streets overnight."],
  ["Storm warning for the coast", "Forecasters warned of a storm with high winds along the coast."],
  ["Council budget vote delayed", "The city council delayed its budget vote after a long debate."],
  ["Storm damage repairs begin", "Crews began repairing storm damage to roofs and power lines."],
];
const SITES = ["alpha.example", "news.beta.example", "gamma.example"];

/** 36 articles: every topic on every site, at three ages (1, 10 and 40 days). */
async function seed(w: W) {
  const items = [];
  for (const [t, [title, body]] of TOPICS.entries()) {
    for (const site of SITES) {
      for (const days of [1, 10, 40]) {
        items.push({ url: `https://${site}/${t}-${days}`, title, body, pubdate: hoursAgo(w, days * 24 + t) });
      }
    }
  }
  const r = await w.deps.search.ingest(w.dm, items);
  assert.equal(r.failed, 0);
}

import type { SearchResult } from "../../core/search/types.ts";

// deno-lint-ignore no-explicit-any
const results = (r: { json: any }) =>
  r.json.response.results as (SearchResult & { url: string; site_domain: string })[];

Deno.test("exclude_domains: an excluded domain never appears, with every algorithm, and top-k is still filled", async () => {
  await using w = await searchWorld();
  await seed(w);
  for (const algorithm of SEARCH_ALGORITHMS) {
    const r = await search(w, {
      query: "storm",
      search_algorithm: algorithm,
      similarity_top_k: 12,
      num_results: 12,
      exclude_domains: ["alpha.example"],
    });
    assert.equal(r.status, 200, r.text);
    const got = results(r);
    assert.ok(got.every((x) => x.site_domain !== "alpha.example"), algorithm);
    // 24 articles remain: retrieval filtered before top-k, so the page is full.
    assert.equal(got.length, 12, `${algorithm}: ${got.length}`);
  }
});

Deno.test("exclude_domains wins over the ref quota, even when ref names the excluded domain", async () => {
  await using w = await searchWorld();
  await seed(w);
  for (const algorithm of SEARCH_ALGORITHMS) {
    const r = await search(w, {
      query: "storm",
      search_algorithm: algorithm,
      similarity_top_k: 6,
      ref: "https://gamma.example/",
      num_articles_ref: 4,
      exclude_domains: ["gamma.example", "https://www.alpha.example/anything"],
    });
    assert.equal(r.status, 200, r.text);
    const got = results(r);
    assert.equal(got.length, 6);
    assert.ok(got.every((x) => x.site_domain === "news.beta.example"), algorithm);
  }
});

Deno.test("include_domains keeps only those domains and their subdomains; the ref quota works inside it", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, {
    query: "storm",
    similarity_top_k: 8,
    num_results: 8,
    include_domains: ["beta.example", "gamma.example"],
    ref: "gamma.example",
    num_articles_ref: 5,
    explain: true,
  });
  assert.equal(r.status, 200, r.text);
  const got = results(r);
  assert.equal(got.length, 8);
  assert.ok(got.every((x) => x.site_domain === "news.beta.example" || x.site_domain === "gamma.example"));
  const placed = got.filter((x) => x.explain!.ref_quota);
  assert.equal(placed.length, 5);
  assert.ok(placed.every((x) => x.site_domain === "gamma.example"));
});

Deno.test("start_date and end_date bound the publication date (dates are whole UTC days, date-times exact)", async () => {
  await using w = await searchWorld();
  await seed(w);
  const now = w.clock.now().getTime();
  const day = (d: number) => new Date(now - d * 86_400_000).toISOString().slice(0, 10);
  for (const algorithm of SEARCH_ALGORITHMS) {
    const r = await search(w, {
      query: "storm",
      search_algorithm: algorithm,
      similarity_top_k: 20,
      num_results: 20,
      start_date: day(15),
      end_date: day(5),
    });
    assert.equal(r.status, 200, r.text);
    const got = results(r);
    assert.equal(got.length, 9, algorithm); // the 10-day-old article of each storm topic on each site
    assert.ok(got.every((x) => x.url.endsWith("-10")));
  }
  const since = new Date(now - 2 * 86_400_000).toISOString();
  const r = await search(w, { query: "council budget", similarity_top_k: 20, num_results: 20, start_date: since });
  assert.ok(results(r).length > 0);
  assert.ok(results(r).every((x) => x.url.endsWith("-1")));
  const offset = await search(w, { query: "storm", start_date: "2026-11-20T00:00:00+01:00", end_date: "2026-11-22" });
  assert.equal(offset.status, 200);
  assert.ok(results(offset).every((x) => x.url.endsWith("-1")));
});

Deno.test("filters answer 422 with a message naming the field for bad values", async (t) => {
  await using w = await searchWorld();
  const many = Array.from({ length: 101 }, (_, i) => `site${i}.example`);
  const cases: [string, Record<string, unknown>, string][] = [
    ["101 domains", { include_domains: many }, "include_domains: at most 100 domains"],
    ["a string instead of an array", { exclude_domains: "a.example" }, "exclude_domains: must be an array of domains"],
    [
      "not a domain",
      { exclude_domains: ["ok.example", "not a domain!"] },
      "exclude_domains.1: must be a domain such as example.com",
    ],
    [
      "an impossible date",
      { start_date: "2026-02-30" },
      "start_date: must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM:SSZ)",
    ],
    [
      "a US date",
      { end_date: "11/22/2026" },
      "end_date: must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM:SSZ)",
    ],
    [
      "a reversed window",
      { start_date: "2026-11-10", end_date: "2026-11-01" },
      "end_date must be on or after start_date",
    ],
    ["explain as a string", { explain: "yes" }, "explain: must be true or false"],
  ];
  for (const [name, extra, message] of cases) {
    await t.step(name, async () => {
      const r = await search(w, { query: "storm", ...extra });
      assert.equal(r.status, 422);
      assert.equal(r.json.message, message);
      assert.ok(!r.text.includes("not a domain!"), "the message never echoes the input");
    });
  }
});

Deno.test("explain: true adds matched terms, scores, age, trending keyword and ref placement to every result", async () => {
  await using w = await searchWorld();
  await seed(w);
  const plain = await search(w, { query: "storm coast", similarity_top_k: 3 });
  assert.ok(results(plain).every((x) => x.explain === undefined));
  const r = await search(w, { query: "storm coast", similarity_top_k: 3, explain: true });
  const got = results(r);
  assert.equal(got.length, 3);
  for (const x of got) {
    assert.ok(x.explain!.matched_terms.includes("storm"), JSON.stringify(x.explain));
    assert.ok(x.explain!.lexical_score > 0);
    assert.equal(typeof x.explain!.semantic_score, "number");
    assert.ok(x.explain!.age_days >= 1 && x.explain!.age_days < 41);
    assert.equal(x.explain!.trending_keyword, null);
    assert.equal(x.explain!.ref_quota, false);
  }
  // Queries served make their words trend; a trending search names the keyword each result matched.
  for (let i = 0; i < 5; i++) await search(w, { query: "council budget" });
  const trend = await search(w, { query: "news", search_algorithm: "trending", similarity_top_k: 3, explain: true });
  assert.match(trend.json.response.message, /trending keywords: .*(council|budget)/);
  for (const x of results(trend)) assert.match(x.explain!.trending_keyword ?? "", /council|budget/);
});

Deno.test("POST /payproxy/v2/search applies the same filters and explain", async () => {
  const peer = startAllowancePeer("allow");
  await using w = await searchWorld({ env: { AGENT_AUTH_URL: peer.url } });
  try {
    await w.deps.repos.dataModels.update({ ...w.dm, marketplace: true });
    await seed(w);
    const secret = await w.deps.payproxy.secrets.create("seller-a");
    const url = `/payproxy/v2/search?data_model_id=${w.dm.id}`;
    const call = async (body: unknown) => {
      const res = await w.app.request(
        url,
        await signedInit({ ...secret, clock: w.clock, url, body: JSON.stringify(body), agentId: "agent-f" }),
      );
      return { status: res.status, json: await res.json() };
    };
    const ok = await call({ query: "storm", exclude_domains: ["alpha.example"], explain: true, similarity_top_k: 10 });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.response.results.length, 10);
    // deno-lint-ignore no-explicit-any
    assert.ok(ok.json.response.results.every((x: any) => x.site_domain !== "alpha.example" && x.explain));
    const bad = await call({ query: "storm", start_date: "2026-11-10", end_date: "2026-11-01" });
    assert.equal(bad.status, 422);
    assert.equal(bad.json.message, "end_date must be on or after start_date");
    assert.equal(peer.calls.length, 1, "a refused window asks no allowance");
  } finally {
    await peer.close();
  }
});
