/**
 * Start-up cost: builds a data model's index from Deno KV (what `main.ts serve` does before the
 * first request) for N stored articles with their embeddings, on a real KV file.
 *
 *   deno run -A bench/startup_kv.ts        (BENCH_ARTICLES=100000)
 */
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
import type { Article } from "../core/search/store/articles.ts";
import { embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { quantize } from "../core/search/index/vector_index.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 100_000);
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
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
const dir = await Deno.makeTempDir({ prefix: "svc-startup-" });
const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
try {
  let t = performance.now();
  let batch = kv.atomic(), inBatch = 0;
  const fixtures = generateArticles({ count: N, now: clock.now(), seed: 2026 });
  for (let i = 0; i < fixtures.length; i++) {
    const f = normalizeArticle(dm, fixtures[i]!, clock);
    const { q, scale } = quantize(embeddings.embedOne(embeddingText(f)));
    const id = `ar_${String(i).padStart(8, "0")}`;
    const a: Article = {
      ...f,
      id,
      createdAt: "",
      updatedAt: "",
      embedding: { model: embeddings.id, dims: 100, scale, q: new Uint8Array(q.buffer) },
    };
    batch.set(["article", dm.id, id], a).set(["article_url", dm.id, `u${i}`], id);
    if (++inBatch === 50) {
      await batch.commit();
      batch = kv.atomic();
      inBatch = 0;
    }
  }
  await batch.commit();
  console.log(`wrote ${N} articles to a KV file in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const rss0 = Deno.memoryUsage().rss;
  t = performance.now();
  const engine = new SearchEngine({ kv, clock, log: memoryLogger(), embeddings });
  await engine.start();
  console.log(
    `start(): index built from KV in ${((performance.now() - t) / 1000).toFixed(1)} s, ` +
      `${await engine.count(dm.id)} articles, rss ${(Deno.memoryUsage().rss / 1048576).toFixed(0)} MiB ` +
      `(before ${(rss0 / 1048576).toFixed(0)} MiB)`,
  );
} finally {
  kv.close();
  await Deno.remove(dir, { recursive: true });
}
