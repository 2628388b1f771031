/**
 * A relevance collection indexed as `deno task eval` indexes it (cli/eval.ts `evaluate`), and its
 * queries ranked by the service's own code under any fusion: shared by the ranking benches that
 * choose among fusions (bench/joint_cv.ts, bench/transfer_cv.ts, bench/term_neighbours_cv.ts).
 */
import type { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { type BeirDataset, evaluate, indexCollection, loadBeir, ndcgAt } from "../cli/eval.ts";
import type { DataModelIndex, QueryRep } from "../core/search/index/index.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { terms } from "../core/search/text/tokenizer.ts";
import type { Fusion } from "../core/search/rank/retrieval_mode.ts";

/** Candidates ranked per query, as `deno task eval` takes them. */
export const RANKED = 100;

export interface RankedCollection {
  /** The folder's last part (`cisi`, `beir-tiny`). */
  name: string;
  data: BeirDataset;
  index: DataModelIndex;
  /** Document id per slot. */
  ids: string[];
  /** Each query's representation before feedback, in `data.queries` order. */
  reps: QueryRep[];
}

/**
 * Indexes a collection with the harness's own `indexCollection` and embeds each query alone, as
 * `evaluate` does (so the shipped fusion reproduces its figures query by query).
 * @param forwardTerms terms stored per article (see `DataModelIndex`; 0: none, as the service)
 */
export async function prepareCollection(
  dir: string,
  embeddings: LocalEmbeddings,
  { forwardTerms = 0 }: { forwardTerms?: number } = {},
): Promise<RankedCollection> {
  const data = await loadBeir(dir);
  const { index, ids } = await indexCollection(data, embeddings, { forwardTerms });
  const reps: QueryRep[] = [];
  for (const q of data.queries) {
    const [vector] = await embeddings.embed([q.text]);
    reps.push({ bag: Bm25Index.bag(terms(q.text)), vector: vector! });
  }
  return { name: dir.replace(/\/+$/, "").split("/").at(-1)!, data, index, ids, reps };
}

/** {@link prepareCollection} of each folder in turn, saying how long it took. */
export async function prepareCollections(
  dirs: readonly string[],
  embeddings: LocalEmbeddings,
  options: { forwardTerms?: number } = {},
): Promise<RankedCollection[]> {
  const started = performance.now();
  const out: RankedCollection[] = [];
  for (const dir of dirs) out.push(await prepareCollection(dir, embeddings, options));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`prepared ${out.map((c) => c.name).join(", ")} in ${seconds} s`);
  return out;
}

// Per collection and vector feedback setting, each query's representation after feedback.
const fedCache = new WeakMap<RankedCollection, Map<string, QueryRep[]>>();

function fed(c: RankedCollection, f: Fusion): QueryRep[] {
  let perFeedback = fedCache.get(c);
  if (!perFeedback) fedCache.set(c, perFeedback = new Map());
  const key = `${f.feedbackDocs}/${f.feedbackWeight}`;
  let reps = perFeedback.get(key);
  if (!reps) {
    reps = c.reps.map((rep) => c.index.withFeedback(rep, f.feedbackDocs, f.feedbackWeight, { pool: RANKED }));
    perFeedback.set(key, reps);
  }
  return reps;
}

/** nDCG@10 of each query (in `data.queries` order) ranked under `fusion`. */
export function scoreFusion(c: RankedCollection, fusion: Fusion): number[] {
  return fed(c, fusion).map((rep, qi) => {
    const ranked = c.index.hybrid(rep, { k: RANKED, fusion }).map((x) => c.ids[x.slot]!);
    return ndcgAt(ranked, c.data.qrels.get(c.data.queries[qi]!.id)!, 10);
  });
}

/** A fusion's settings as one string: grids tell settings apart by it. */
export const fusionKey = (f: Fusion): string =>
  [f.vectorWeight, f.normalise, f.feedbackDocs, f.feedbackWeight, JSON.stringify(f.regularize ?? null)].join("|");

/** The axes of a grid of fusions (every combination is a setting). */
export interface FusionAxes {
  vectorWeights: readonly number[];
  normalise: readonly Fusion["normalise"][];
  feedback: readonly { docs: number; weight: number }[];
  regularize: readonly Fusion["regularize"][];
}

/** Every combination of `axes`, with `first` first (so the folds' ties go to it) and never twice. */
export function fusionGrid(first: Fusion, axes: FusionAxes): Fusion[] {
  const grid: Fusion[] = [first];
  for (const regularize of axes.regularize) {
    for (const normalise of axes.normalise) {
      for (const { docs, weight } of axes.feedback) {
        for (const vectorWeight of axes.vectorWeights) {
          const f: Fusion = { vectorWeight, normalise, feedbackDocs: docs, feedbackWeight: weight, regularize };
          if (fusionKey(f) !== fusionKey(first)) grid.push(f);
        }
      }
    }
  }
  return grid;
}

/**
 * Throws unless `shippedScores` ranks every collection as `deno task eval` does with `fusion`, query
 * by query: a bench's figures are then the service's, not a re-implementation's.
 */
export async function assertHarnessReproduced(
  collections: readonly { name: string; data: BeirDataset }[],
  embeddings: LocalEmbeddings,
  fusion: Fusion,
  shippedScores: (i: number) => number[],
): Promise<void> {
  for (const [i, c] of collections.entries()) {
    const harness = (await evaluate(c.data, embeddings, { fusion })).perQuery!.map((q) => q.hybrid);
    const here = shippedScores(i);
    if (harness.some((x, q) => x !== here[q])) {
      throw new Error(`${c.name}: the shipped setting differs from the harness`);
    }
  }
}
