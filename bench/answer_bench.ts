/**
 * Extractive answer composition: sentence scoring and composition over the passages retrieval
 * hands over (8 articles of 30 sentences). `bench/answer_p50.ts` prints the percentiles.
 */
import { composeText, extract } from "../core/answer/extractive.ts";
import { benchArticles, benchQueries } from "./answer_corpus.ts";

const now = new Date("2026-11-22T12:00:00Z");
const pool = benchArticles(400);
const queries = benchQueries();
let i = 0;

Deno.bench("extractive answer over 8 retrieved passages (30 sentences each)", () => {
  const q = queries[i % queries.length]!;
  const start = (i * 8) % (pool.length - 8);
  i++;
  composeText(extract(q, pool.slice(start, start + 8), now));
});
