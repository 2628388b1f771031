/**
 * Where a `semantic` query's time goes at scale: builds one data model's index from a KV file
 * (as `main.ts serve` does; e.g. the one `bench/scale_1m.ts --phase=seed` leaves with BENCH_KEEP=1)
 * and times each stage of the recommend path over the scale bench's queries: query embedding,
 * BM25F, vector feedback, the vector scan, and the hybrid fusion (top-k of both sides).
 *
 *   BENCH_DIR=/path/to/data BENCH_DM=dm_... deno run -A --v8-flags=--max-old-space-size=6144 bench/search_stages.ts
 */
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { FUSION_V2 } from "../core/search/rank/retrieval_mode.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { terms } from "../core/search/text/tokenizer.ts";

const dataDir = Deno.env.get("BENCH_DIR")!;
const dmId = Deno.env.get("BENCH_DM")!;
const QUERIES = Number(Deno.env.get("BENCH_QUERIES") ?? 300);
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const QUERY_TEXTS = [
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
];
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const kv = await Deno.openKv(`${dataDir}/kv.sqlite3`);
const clock = new FixedClock("2026-11-22T12:00:00Z");
const embeddings = new LocalEmbeddings({ cachePath });
const engine = new SearchEngine({ kv, clock, log: memoryLogger(), embeddings });
const t = performance.now();
const index = await engine.registry.index(dmId);
console.log(`index: ${index.size} articles built in ${((performance.now() - t) / 1000).toFixed(1)} s`);

const stages = ["embed", "bm25", "feedback", "scan", "hybrid", "total"] as const;
const times = Object.fromEntries(stages.map((s) => [s, [] as number[]])) as Record<(typeof stages)[number], number[]>;
for (let i = 0; i < QUERIES + 50; i++) {
  const q = `${QUERY_TEXTS[i % QUERY_TEXTS.length]} ${i % 7 === 0 ? "latest" : ""}`.trim();
  // The stages of engine.queryRep() and recommend(), one by one.
  const t0 = performance.now();
  const bag = Bm25Index.bag(terms(q));
  const [vector] = await embeddings.embed([q]);
  const t1 = performance.now();
  const lexical = index.lexicalTop(bag, 50); // what withFeedback() computes: the default ranking's side
  const t2 = performance.now();
  const rep = index.withFeedback({ bag, vector: vector!, lexical }, FUSION_V2.feedbackDocs, FUSION_V2.feedbackWeight);
  const t3 = performance.now();
  const cos = index.cosines(rep.vector);
  const t4 = performance.now();
  index.hybrid(rep, { k: 9, cos, fusion: FUSION_V2 });
  const t5 = performance.now();
  if (i < 50) continue;
  times.embed.push(t1 - t0);
  times.bm25.push(t2 - t1);
  times.feedback.push(t3 - t2);
  times.scan.push(t4 - t3);
  times.hybrid.push(t5 - t4);
  times.total.push(t5 - t0);
}
for (const s of stages) {
  const xs = times[s];
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `${s.padEnd(9)} p50 ${pct(xs, 0.5).toFixed(2)} ms, p99 ${pct(xs, 0.99).toFixed(2)} ms, mean ${mean.toFixed(2)} ms`,
  );
}
console.log(`load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
kv.close();
