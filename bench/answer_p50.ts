/**
 * Latency percentiles of extractive answers, in-process:
 *   deno run -A bench/answer_p50.ts [iterations]
 * Passages-only mode (this file): scoring and composition over 8 retrieved passages.
 */
import { composeText, extract } from "../core/answer/extractive.ts";
import { benchArticles, benchQueries } from "./answer_corpus.ts";

/** p-th percentile (0..100) of sorted samples. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

if (import.meta.main) {
  const iterations = Number(Deno.args[0] ?? 2000);
  const now = new Date("2026-11-22T12:00:00Z");
  const pool = benchArticles(400);
  const queries = benchQueries();
  const samples: number[] = [];
  for (let i = 0; i < iterations + 100; i++) {
    const q = queries[i % queries.length]!;
    const start = (i * 8) % (pool.length - 8);
    const t0 = performance.now();
    composeText(extract(q, pool.slice(start, start + 8), now));
    if (i >= 100) samples.push(performance.now() - t0); // the first 100 warm the JIT
  }
  samples.sort((a, b) => a - b);
  const f = (x: number) => `${x.toFixed(3)} ms`;
  console.log(
    `extractive, 8 passages x 30 sentences, ${iterations} answers: p50 ${f(percentile(samples, 50))}, ` +
      `p95 ${f(percentile(samples, 95))}, p99 ${f(percentile(samples, 99))}, max ${f(samples.at(-1)!)}`,
  );
}
