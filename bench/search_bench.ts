/**
 * `deno bench` view of the search hot paths over 10,000 generated articles (quick to set up;
 * the 100k figures come from bench/search_100k.ts). Set BENCH_ARTICLES to change the size.
 */
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
import type { Article } from "../core/search/store/articles.ts";
import { embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { DataModelIndex } from "../core/search/index/index.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 10_000);
const clock = new FixedClock("2026-11-22T12:00:00Z");
const dm: DataModel = {
  id: "dm_bench",
  tenantId: "tn_bench",
  name: "Bench",
  sites: [...NEWS_SITES, ...TECH_SITES],
  marketplace: false,
  createdAt: clock.now().toISOString(),
};
const embeddings = new LocalEmbeddings({
  cachePath: Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin",
});
await embeddings.init();
const index = new DataModelIndex(dm.id, embeddings.dims);
for (const f of generateArticles({ count: N, now: clock.now(), seed: 2026 })) {
  const a = { ...normalizeArticle(dm, f, clock), id: "ar_x", createdAt: "", updatedAt: "" } as Article;
  index.upsert(a, embeddings.embedOne(embeddingText(a)));
}
const engine = new SearchEngine({ kv: undefined as unknown as Deno.Kv, clock, log: memoryLogger(), embeddings });
engine.registry.adoptIndex(index);
const rep = await engine.queryRep(index, "coastal storm flooding");

Deno.bench(`semantic recommend, ${N} articles`, async () => {
  await engine.recommend(dm, { query: "coastal storm flooding" }, {});
});
Deno.bench(`most_recent recommend, ${N} articles`, async () => {
  await engine.recommend(dm, { query: "interest rates", search_algorithm: "most_recent" }, {});
});
Deno.bench(`trending recommend, ${N} articles`, async () => {
  await engine.recommend(dm, { query: "news", search_algorithm: "trending" }, {});
});
Deno.bench(`ref quota recommend, ${N} articles`, async () => {
  await engine.recommend(dm, { query: "cup final", ref: "metrowire.example", num_articles_ref: 3 }, {});
});
Deno.bench(`vector scan only, ${N} x 100`, () => {
  index.cosines(rep.vector);
});
Deno.bench(`BM25 only, ${N} articles`, () => {
  index.bm25.score(rep.bag);
});
Deno.bench("query embedding (local word vectors)", () => {
  embeddings.embedOne("coastal storm flooding near the harbour");
});
