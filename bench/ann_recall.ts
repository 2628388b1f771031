/**
 * The ANN's recall and speed against the exact scan on the bench corpus: N generated articles
 * prepared as ingest prepares them (summary, local word vectors stored as int8, the common
 * direction removed as the service does), one index with the IVF and one without. For each
 * number of probed lists: recall@50 of the vector side (the candidates a ranking takes), overlap
 * of the `semantic` top 10 (the v2 ranking, vector feedback included), and the vector side's p50.
 *
 *   BENCH_ARTICLES=200000 deno run -A bench/ann_recall.ts
 */
import { FixedClock } from "../core/clock.ts";
import { type Article, embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { DataModelIndex } from "../core/search/index/index.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { dequantize, quantize } from "../core/search/index/vector_index.ts";
import { FUSION_V2 } from "../core/search/rank/retrieval_mode.ts";
import { terms } from "../core/search/text/tokenizer.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 200_000);
const PROBES = (Deno.env.get("BENCH_PROBES") ?? "4,8,12,16,24,32,48").split(",").map(Number);
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const clock = new FixedClock("2026-11-22T12:00:00Z");
const dm: DataModel = {
  id: "dm_ann",
  tenantId: "tn_ann",
  name: "ANN",
  sites: [...NEWS_SITES, ...TECH_SITES],
  marketplace: false,
  createdAt: clock.now().toISOString(),
};
const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();
const exact = new DataModelIndex(dm.id, embeddings.dims, { removeCommonDirection: true, ann: null });
const approx = new DataModelIndex(dm.id, embeddings.dims, { removeCommonDirection: true, ann: { minRows: 0 } });
const BATCH = 10_000;
for (const index of [exact, approx]) {
  await index.bulkLoad(() => {
    for (let b = 0; b * BATCH < N; b++) {
      const items = generateArticles({ count: Math.min(BATCH, N - b * BATCH), now: clock.now(), seed: 2026 + b });
      items.forEach((item, i) => {
        const f = normalizeArticle(dm, { ...item, url: `${item.url}-${b}` }, clock);
        const { q, scale } = quantize(embeddings.embedOne(embeddingText(f)));
        index.upsert({ ...f, id: `ar_${b}_${i}`, createdAt: "", updatedAt: "" } as Article, dequantize(q, scale));
      });
    }
    return Promise.resolve();
  });
}
const t = performance.now();
await approx.annReady();
const built = approx.annStatus!;
console.log(
  `articles: ${N}; IVF ${built.lists} lists built in ${(approx.annBuildMs / 1000).toFixed(1)} s (waited ${
    ((performance.now() - t) / 1000).toFixed(1)
  } s), ${(built.bytes / 2 ** 20).toFixed(0)} MiB; load average ${Deno.loadavg()[0].toFixed(1)}`,
);

const texts = [
  "coastal storm flooding",
  "interest rates inflation",
  "election results council",
  "new smartphone battery",
  "football transfer window",
  "wildfire evacuation",
  "vaccine trial results",
  "electric cars charging",
  "housing prices rent",
  "space telescope images",
  "central bank",
  "port strike",
  "ai chip",
  "data breach passwords",
  "heatwave drought",
  "marathon record",
  "mars rover",
  "film festival",
  "budget airlines",
  "museum exhibition",
];
const queries = texts.flatMap((q) => [q, `${q} latest`]).map((q) => {
  const rep = { bag: Bm25Index.bag(terms(q)), vector: embeddings.embedOne(q) };
  return exact.withFeedback(rep, FUSION_V2.feedbackDocs, FUSION_V2.feedbackWeight, { pool: 50 });
});
const ivf = approx.ivf!;
for (const probes of PROBES) {
  ivf.probes = probes;
  let hit = 0, asked = 0, same = 0, shown = 0;
  const annMs: number[] = [], exactMs: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (const q of queries) {
      let s = performance.now();
      const cos = exact.cosines(q.vector);
      const want = exact.vectors.best(cos, 50)!;
      exactMs.push(performance.now() - s);
      s = performance.now();
      const got = ivf.search(q.vector!, 50)!;
      annMs.push(performance.now() - s);
      if (round > 0) continue;
      const w = new Set(want.map((e) => e.id));
      hit += got.filter((e) => w.has(e.id)).length;
      asked += want.length;
      const top = new Set(exact.hybrid(q, { k: 10 }).map((c) => c.slot));
      const a = approx.hybrid(q, { k: 10 });
      same += a.filter((c) => top.has(c.slot)).length;
      shown += top.size;
    }
  }
  console.log(
    `probes ${probes} of ${ivf.lists}: vector side recall@50 ${(hit / asked).toFixed(3)}, semantic top-10 overlap ${
      (same / shown).toFixed(3)
    }; vector side p50 ${pct(annMs, 0.5).toFixed(2)} ms (exact scan + top 50: ${pct(exactMs, 0.5).toFixed(2)} ms)`,
  );
}
