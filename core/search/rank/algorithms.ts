import type { SearchAlgorithm } from "../types.ts";
import type { Candidate, DataModelIndex, QueryRep } from "../index/index.ts";
import type { Fusion } from "./retrieval_mode.ts";
import type { TrendingKeyword } from "./trending.ts";

/** One ranked article: `order` decides the position (higher first), `score` is its relevance. */
export interface Ranked {
  slot: number;
  score: number;
  order: number;
}

/** Everything an algorithm needs for one query. */
export interface RankInput {
  index: DataModelIndex;
  query: QueryRep;
  /** Cosines of the query with every slot (computed once per request). */
  cos: Float32Array;
  /** How many to return. */
  k: number;
  allow?: (slot: number) => boolean;
  nowUnix: number;
  /** Trending keywords (trending only). */
  trends?: TrendingKeyword[];
  /** How the hybrid ranking blends its sides (see retrieval_mode.ts); the default version when absent. */
  fusion?: Fusion;
}

/** Relevance pool of `most_recent`: at least this many candidates are considered. */
export const RECENT_POOL_MIN = 100;
/** A candidate is "relevant" for `most_recent` when its score is at least this share of the best. */
export const RELEVANCE_SHARE = 0.5;
/** `trending` considers articles of this many days first (falls back to all when too few). */
export const TRENDING_WINDOW_DAYS = 7;
/** Share of the trending score that comes from the user's query. */
export const TRENDING_QUERY_SHARE = 0.3;
/** `trending` blends in the query's hybrid scores of at least this many candidates. */
export const TRENDING_POOL_MIN = 200;

/** How many hybrid candidates an algorithm asks for when it returns `k`. */
export function candidatePool(algorithm: SearchAlgorithm, k: number): number {
  if (algorithm === "most_recent") return Math.max(RECENT_POOL_MIN, k * 10);
  if (algorithm === "trending") return Math.max(TRENDING_POOL_MIN, k * 10);
  return k;
}

const byOrder = (a: Ranked, b: Ranked) => b.order - a.order || b.score - a.score || a.slot - b.slot;

/** `semantic`: the hybrid relevance ranking of the query (or the analysed page). */
export function semantic(input: RankInput): Ranked[] {
  return input.index.hybrid(input.query, { k: input.k, allow: input.allow, cos: input.cos, fusion: input.fusion })
    .map((c) => ({ slot: c.slot, score: c.score, order: c.score }));
}

/**
 * `most_recent`: the newest articles among those relevant to the query. Relevant = in the hybrid
 * top max(100, 10 x k) with a score of at least half the best one; then newest first.
 */
export function mostRecent(input: RankInput): Ranked[] {
  const pool = input.index.hybrid(input.query, {
    k: candidatePool("most_recent", input.k),
    allow: input.allow,
    cos: input.cos,
    fusion: input.fusion,
  });
  const best = pool[0]?.score ?? 0;
  return byDate(input.index, pool.filter((c) => c.score >= best * RELEVANCE_SHARE)).slice(0, input.k);
}

/** `most_recent_semantic`: the semantic top k, then ordered newest first. */
export function mostRecentSemantic(input: RankInput): Ranked[] {
  return byDate(
    input.index,
    input.index.hybrid(input.query, { k: input.k, allow: input.allow, cos: input.cos, fusion: input.fusion }),
  );
}

/**
 * `trending`: articles most relevant to the trending keywords (BM25 with the keyword weights),
 * preferring the last 7 days, with 30% of the score from the user's query so it still steers.
 * Without trending keywords this is `most_recent` (the caller says so in the message).
 */
export function trending(input: RankInput): Ranked[] {
  const trends = input.trends ?? [];
  if (trends.length === 0) return mostRecent(input);
  const { index, nowUnix, allow } = input;
  const bag = new Map(trends.map((t) => [t.term, t.weight]));
  const since = nowUnix - TRENDING_WINDOW_DAYS * 86_400;
  const fresh = (s: number) => index.pubdates[s]! >= since && (!allow || allow(s));
  let hits = index.bm25.score(bag, fresh);
  if (hits.slots.length < input.k) hits = index.bm25.score(bag, allow);
  let max = 0;
  for (const x of hits.scores) max = Math.max(max, x);
  if (max === 0) return mostRecent(input);
  const queryScores = new Map<number, number>();
  for (
    const c of index.hybrid(input.query, {
      k: candidatePool("trending", input.k),
      allow,
      cos: input.cos,
      fusion: input.fusion,
    })
  ) {
    queryScores.set(c.slot, c.score);
  }
  const out: Ranked[] = [];
  for (let i = 0; i < hits.slots.length; i++) {
    const slot = hits.slots[i]!;
    const score = (1 - TRENDING_QUERY_SHARE) * (hits.scores[i]! / max) +
      TRENDING_QUERY_SHARE * (queryScores.get(slot) ?? 0);
    out.push({ slot, score, order: score });
  }
  return out.sort(byOrder).slice(0, input.k);
}

function byDate(index: DataModelIndex, list: Candidate[]): Ranked[] {
  return list.map((c) => ({ slot: c.slot, score: c.score, order: index.pubdates[c.slot]! })).sort(byOrder);
}

/** The ranking function of each algorithm. */
export const ALGORITHMS: Record<SearchAlgorithm, (input: RankInput) => Ranked[]> = {
  semantic,
  most_recent: mostRecent,
  most_recent_semantic: mostRecentSemantic,
  trending,
};

/** Merges two ranked lists in algorithm order (for the `ref` quota). */
export function mergeRanked(a: Ranked[], b: Ranked[]): Ranked[] {
  return [...a, ...b].sort(byOrder);
}
