/**
 * What highlights and full text add to a 10-result `semantic` search at 100,000 articles
 * (issue 27: at most +1 ms p50 for highlights, +2 ms for the full text of 10 results).
 *
 * The index holds all articles (as at start-up); KV (`:memory:`) holds the bodies of the articles
 * the queries return, which is all a page reads (one `getMany` of 10 keys). Each query runs the
 * three variants in rotating order, so the machine's load drifts over all three alike; the
 * figures include the load average.
 *
 *   deno run -A bench/highlights_100k.ts            (BENCH_ARTICLES=20000 for a quicker run)
 */
import { cpuUsage } from "node:process";
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
import type { Article } from "../core/search/store/articles.ts";
import { embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { DataModelIndex } from "../core/search/index/index.ts";
import type { SearchRequest } from "../core/search/types.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";
import { prng } from "../fixtures/prng.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 100_000);
const QUERIES = Number(Deno.env.get("BENCH_QUERIES") ?? 300);
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const clock = new FixedClock("2026-11-22T12:00:00Z");
const dm: DataModel = {
  id: "dm_bench",
  tenantId: "tn_bench",
  name: "Bench",
  sites: [...NEWS_SITES, ...TECH_SITES],
  marketplace: false,
  createdAt: clock.now().toISOString(),
};
const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();
console.log(`articles: ${N}, queries: ${QUERIES}, cores: ${navigator.hardwareConcurrency}`);

const fixtures = generateArticles({ count: N, now: clock.now(), seed: 2026 });
const articles: Article[] = [];
const index = new DataModelIndex(dm.id, embeddings.dims);
for (let i = 0; i < fixtures.length; i++) {
  const f = normalizeArticle(dm, fixtures[i]!, clock);
  const a = { ...f, id: `ar_${i}`, createdAt: "", updatedAt: "" } as Article;
  articles.push(a);
  index.upsert(a, embeddings.embedOne(embeddingText(a)));
}
const kv = await Deno.openKv(":memory:");
const engine = new SearchEngine({ kv, clock, log: memoryLogger(), embeddings });
engine.registry.adoptIndex(index);

const rand = prng(99);
const words = [
  "interest rates",
  "central bank inflation",
  "coastal storm flooding",
  "port strike",
  "ai chip",
  "data breach passwords",
  "smartphone battery",
  "solar farm",
  "heatwave drought",
  "flu vaccine",
  "cup final",
  "housing bill",
  "mayor election",
  "mars rover",
  "fusion energy",
  "coffee prices",
  "film festival",
  "unemployment jobs report",
  "hurricane",
  "renewable energy",
];
const queries = Array.from({ length: QUERIES + 30 }, () => {
  const a = words[Math.floor(rand() * words.length)]!;
  return rand() < 0.3 ? `${a} ${words[Math.floor(rand() * words.length)]!.split(" ")[0]}` : a;
});

// The bodies the pages read, in KV as the service stores them.
const page = { similarity_top_k: 10, num_results: 10 };
const served = new Set<string>();
for (const q of queries) {
  for (const r of (await engine.recommend(dm, { query: q, ...page }, {})).response.results) served.add(r.url!);
}
const byUrl = new Map(articles.map((a) => [a.url, a]));
for (const url of served) {
  const a = byUrl.get(url)!;
  await kv.set(["article", dm.id, a.id], a);
}
const bodyChars = [...served].map((u) => byUrl.get(u)!.body.length);
console.log(`bodies in KV: ${served.size}, body length p50 ${pct(bodyChars, 0.5)} chars`);

const variants: [string, Partial<SearchRequest>][] = [
  ["semantic top 10", {}],
  ["+ highlights (1000 chars, 3 per result)", { highlights: { max_characters: 1000, per_result: 3 } }],
  ["+ full text of 10 results", { contents: { text: true } }],
];
const times = variants.map(() => [] as number[]);
const cpu = variants.map(() => [] as number[]);
for (let i = 0; i < queries.length; i++) {
  for (let k = 0; k < variants.length; k++) {
    const v = (i + k) % variants.length;
    const s = performance.now(), c = cpuUsage();
    await engine.recommend(dm, { query: queries[i]!, ...page, ...variants[v]![1] } as SearchRequest, {
      tenantId: dm.tenantId,
    });
    if (i < 30) continue; // warm-up
    times[v]!.push(performance.now() - s);
    const used = cpuUsage(c);
    cpu[v]!.push((used.user + used.system) / 1000);
  }
}
const base = pct(times[0]!, 0.5);
for (let v = 0; v < variants.length; v++) {
  const p50 = pct(times[v]!, 0.5);
  console.log(
    `${variants[v]![0]}: p50 ${p50.toFixed(2)} ms (${v ? `+${(p50 - base).toFixed(2)} ms` : "base"}), p99 ${
      pct(times[v]!, 0.99).toFixed(2)
    } ms; CPU per query p50 ${pct(cpu[v]!, 0.5).toFixed(2)} ms`,
  );
}
console.log(`load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
kv.close();
