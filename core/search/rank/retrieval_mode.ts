/**
 * Ranking versions and how payproxy's `search_type` (body) and `search_version` (query, also
 * accepted on the bearer search route) change retrieval. Every algorithm ranks with the hybrid
 * fusion of BM25 and vector similarity described by a {@link Fusion}.
 *
 * - `search_version`: the ranking version. `2` (or `v2`, the default) is the calibrated fusion
 *   chosen by cross-validation (docs/relevance.md): both sides normalised, a small vector weight,
 *   the query vector refined by the best lexical matches, the best candidates' scores smoothed
 *   toward their nearest neighbours' (score regularization, the `semantic` orders only). `1` (or `v1`) is the earlier equal
 *   min-max blend, kept so an operator can compare both on live traffic.
 * - `search_type`: `hybrid` (default) uses the version's fusion; `keyword` ranks by BM25 alone;
 *   `semantic` by vector similarity alone. Either side still stands in when the other has nothing
 *   (no word of the query in any article, or no query vector), as in every hybrid ranking.
 */
import type { TermFeedback } from "./feedback.ts";
import type { ScoreRegularization } from "./regularize.ts";

/** How the two sides of a hybrid ranking are put on one scale and blended. */
export interface Fusion {
  /** Weight of vector similarity in [0, 1]; BM25 gets the rest. */
  vectorWeight: number;
  /**
   * Each side's scale over its own top candidates: `minmax` maps the best to 1 (BM25 from 0,
   * cosines from the weakest candidate), `zscore` subtracts the mean and divides by the spread.
   */
  normalise: "minmax" | "zscore";
  /**
   * Vector pseudo-relevance feedback: the query vector is moved toward the mean vector of the
   * best `feedbackDocs` BM25 matches, with weight `feedbackWeight` (0 documents: off).
   */
  feedbackDocs: number;
  feedbackWeight: number;
  /** Term pseudo-relevance feedback (RM3) on the lexical side; none when absent. */
  termFeedback?: TermFeedback;
  /**
   * Score regularization (the cluster hypothesis): the best fused candidates' scores smoothed
   * toward their nearest neighbours' (see regularize.ts); none when absent.
   */
  regularize?: ScoreRegularization;
}

/** Vector weight of the default ranking version (the `SEARCH_VECTOR_WEIGHT` setting overrides it). */
export const DEFAULT_VECTOR_WEIGHT = 0.15;

/** The earlier ranking: equal min-max blend, no feedback. */
export const FUSION_V1: Fusion = { vectorWeight: 0.5, normalise: "minmax", feedbackDocs: 0, feedbackWeight: 0 };
/**
 * The best term feedback setting found on CISI (bench/prf_cv.ts): expansion from the best 3
 * BM25F matches, 10 terms, original query 0.7, the expanded query re-scoring the first 200
 * matches. Not part of the default ranking: its held-out gain did not hold up (docs/relevance.md).
 * `deno task eval DIR --term-feedback` measures it on other collections.
 */
export const TERM_FEEDBACK_CANDIDATE: TermFeedback = { docs: 3, terms: 10, originalWeight: 0.7, rerank: 200 };
/**
 * Score regularization of the default ranking, chosen by cross-validation on CISI
 * (bench/cluster_cv.ts, docs/relevance.md): the best 50 fused candidates, each smoothed halfway
 * toward the mean score of its 10 nearest (by vector) among them.
 */
export const SCORE_REGULARIZATION: ScoreRegularization = { top: 50, neighbours: 10, weight: 0.5 };
/** The calibrated ranking chosen by cross-validation on CISI (bench/relevance_cv.ts, bench/cluster_cv.ts). */
export const FUSION_V2: Fusion = {
  vectorWeight: DEFAULT_VECTOR_WEIGHT,
  normalise: "minmax",
  feedbackDocs: 10,
  feedbackWeight: 1,
  regularize: SCORE_REGULARIZATION,
};

/** Accepted `search_type` values. */
export const SEARCH_TYPES = ["hybrid", "keyword", "semantic"] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

/** Accepted `search_version` values and the ranking each names. */
export const SEARCH_VERSIONS: Record<string, "1" | "2"> = { "1": "1", "2": "2", v1: "1", v2: "2" };
/** What `search_version` means, for the OpenAPI documents. */
export const SEARCH_VERSION_DOC =
  "Ranking version: `2` or `v2` (default) is the calibrated fusion of BM25F and vector " +
  "similarity (vectors 15 %, query vector refined by its best word matches, each of the best 50 candidates' scores " +
  "smoothed toward those of its 10 nearest neighbours among them); `1` or `v1` is the earlier equal blend, " +
  "for comparison on live traffic";
/** The version used when none is asked for. */
export const DEFAULT_SEARCH_VERSION = "2";

/** Whether `v` names a ranking version. */
export function isSearchVersion(v: string): boolean {
  return Object.hasOwn(SEARCH_VERSIONS, v);
}

/** Whether `t` is a search type. */
export function isSearchType(t: string): t is SearchType {
  return (SEARCH_TYPES as readonly string[]).includes(t);
}

/**
 * The fusion for a request. Unknown values fall back to the defaults: the routes validate what
 * they accept; the engine never fails on them.
 * @param vectorWeight the configured vector weight of version 2
 */
export function retrievalFusion(
  searchType?: string,
  searchVersion?: string,
  vectorWeight = DEFAULT_VECTOR_WEIGHT,
): Fusion {
  const version =
    SEARCH_VERSIONS[searchVersion && isSearchVersion(searchVersion) ? searchVersion : DEFAULT_SEARCH_VERSION];
  const base = version === "1" ? FUSION_V1 : { ...FUSION_V2, vectorWeight };
  // One side alone: neither side is changed by what the other finds or by the candidates' neighbours.
  if (searchType === "keyword") {
    return { ...base, vectorWeight: 0, feedbackDocs: 0, termFeedback: undefined, regularize: undefined };
  }
  if (searchType === "semantic") return { ...base, vectorWeight: 1, termFeedback: undefined, regularize: undefined };
  return base;
}

/**
 * The fusion a search algorithm builds its query with: term feedback and score regularization
 * (when a fusion has them) only where the hybrid ranking is the result order (`semantic`,
 * `most_recent_semantic`). `most_recent` keeps the articles scoring at least half the best and
 * `trending` blends query scores into keyword weights: both read the scores as "how much of what
 * was asked", which expansion terms and neighbours' scores skew.
 */
export function fusionForAlgorithm(fusion: Fusion, algorithm: string): Fusion {
  return algorithm === "semantic" || algorithm === "most_recent_semantic"
    ? fusion
    : { ...fusion, termFeedback: undefined, regularize: undefined };
}
