/**
 * Extractive answers over a 100,000-article grounding set, in-process: the whole
 * `AnswerService.answer()` path (hybrid recency-weighted retrieval through the real search
 * engine, article bodies read from a real Deno KV file, sentence scoring, composition), without
 * HTTP and without event recording.
 *
 *   deno run -A bench/answer_100k.ts        (BENCH_ARTICLES=20000 for a quicker run)
 */
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
import { ExtractiveProvider } from "../core/answer/extractive.ts";
import { createAnswerService } from "../core/answer/service.ts";
import type { Article } from "../core/search/store/articles.ts";
import { embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { quantize } from "../core/search/index/vector_index.ts";
import type { AiModel, DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";
import { prng } from "../fixtures/prng.ts";
import { percentile } from "./answer_p50.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 100_000);
const QUERIES = Number(Deno.env.get("BENCH_QUERIES") ?? 500);
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
const model: AiModel = {
  id: "am_bench",
  tenantId: "tn_bench",
  name: "Bench assistant",
  groundingDataModelIds: [dm.id],
  provider: { kind: "extractive" },
  output: { kind: "text" },
  private: false,
  marketplace: false,
  createdAt: clock.now().toISOString(),
};
const QUESTIONS = [
  "What is the central bank doing about interest rates?",
  "How bad is the coastal storm flooding?",
  "Is the port strike over?",
  "Tell me about the new AI chip",
  "Was there a data breach with passwords?",
  "How long does the new smartphone battery last?",
  "When will the solar farm open?",
  "Is the heatwave causing a drought?",
  "Who should get the flu vaccine?",
  "Who won the cup final?",
  "What happened in the mayor election?",
  "Are budget airlines raising prices?",
  "What did the mars rover find?",
  "Is fusion energy any closer?",
  "Why are coffee prices rising?",
  "What is on at the film festival?",
  "What does the latest jobs report say about unemployment?",
  "What is in the housing bill?",
];

const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();
const dir = await Deno.makeTempDir({ prefix: "svc-answer-bench-" });
const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
try {
  console.log(`articles: ${N}, queries: ${QUERIES}, cores: ${navigator.hardwareConcurrency}`);
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
      embedding: { model: embeddings.id, dims: embeddings.dims, scale, q: new Uint8Array(q.buffer) },
    };
    batch.set(["article", dm.id, id], a).set(["article_url", dm.id, `u${i}`], id);
    if (++inBatch === 50) {
      await batch.commit();
      batch = kv.atomic();
      inBatch = 0;
    }
  }
  await batch.commit();
  console.log(`stored ${N} articles with embeddings in a KV file: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const engine = new SearchEngine({ kv, clock, log: memoryLogger(), embeddings });
  await engine.start();
  console.log(`index built: ${((performance.now() - t) / 1000).toFixed(1)} s, ${await engine.count(dm.id)} articles`);

  const extractive = new ExtractiveProvider();
  const answers = createAnswerService({
    retrieve: (ids, q, o) => engine.retrieve(ids, q, o),
    providers: { extractive },
    clock,
    log: memoryLogger(),
  });
  const rand = prng(7);
  const pick = () => QUESTIONS[Math.floor(rand() * QUESTIONS.length)]!;
  for (let i = 0; i < 50; i++) await answers.answer(model, pick(), {}); // warm-up
  const total: number[] = [];
  const retrieval: number[] = [];
  let found = 0;
  for (let i = 0; i < QUERIES; i++) {
    const q = pick();
    const t0 = performance.now();
    const passages = await engine.retrieve(model.groundingDataModelIds, q, { k: extractive.passages });
    retrieval.push(performance.now() - t0);
    const t1 = performance.now();
    const a = await answers.answer(model, q, {});
    total.push(performance.now() - t1);
    if (!a.message.startsWith("I could not find")) found++;
    if (i === 0) console.log(`sample answer (${passages.length} passages):\n${a.message}\n`);
  }
  const f = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `p50 ${percentile(s, 50).toFixed(2)} ms, p95 ${percentile(s, 95).toFixed(2)} ms, p99 ${
      percentile(s, 99).toFixed(2)
    } ms`;
  };
  console.log(`retrieve() alone, k=${extractive.passages}: ${f(retrieval)}`);
  console.log(`answer() (retrieve + extract + compose): ${f(total)}; answered ${found}/${QUERIES}`);
} finally {
  kv.close();
  await Deno.remove(dir, { recursive: true });
}
