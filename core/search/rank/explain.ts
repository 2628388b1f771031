/**
 * The `explain` object of search results: which query terms an article matched, its lexical and
 * semantic scores, its age, the trending keyword it matched and whether the `ref` quota placed it.
 * Computed for the shown page only, after ranking, from the same index the ranking used.
 */
import type { DataModelIndex, QueryRep } from "../index/index.ts";
import type { TrendingKeyword } from "./trending.ts";
import type { SearchExplain } from "../types.ts";

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Explains the given slots. Synchronous on purpose: `cos` is the index's shared scratch array,
 * valid only until the next await.
 */
export function explainSlots(
  index: DataModelIndex,
  slots: number[],
  input: {
    query: QueryRep;
    cos: Float32Array;
    nowUnix: number;
    trends?: TrendingKeyword[];
    /** Slots the `ref` quota placed. */
    refPlaced: Set<number>;
  },
): Map<number, SearchExplain> {
  // Where the IVF index answered the vector side, a shown slot may have no cosine yet (trending).
  index.ensureCosines(input.cos, slots, input.query.vector);
  const shown = new Set(slots);
  const allow = (s: number) => shown.has(s);
  const matched = new Map<number, string[]>(slots.map((s) => [s, []]));
  // The words asked for, not the terms feedback added (those only weigh in lexical_score).
  for (const term of (input.query.asked ?? input.query.bag).keys()) {
    const hit = index.bm25.score(new Map([[term, 1]]), allow);
    for (const s of hit.slots) matched.get(s)!.push(term);
  }
  const lexical = new Map<number, number>();
  const all = index.bm25.score(input.query.bag, allow);
  for (let i = 0; i < all.slots.length; i++) lexical.set(all.slots[i]!, all.scores[i]!);
  // The best-scoring trending keyword each article contains (trends are sorted by weight).
  const trendOf = new Map<number, string>();
  for (const t of input.trends ?? []) {
    for (const s of index.bm25.score(new Map([[t.term, 1]]), allow).slots) if (!trendOf.has(s)) trendOf.set(s, t.word);
  }
  const out = new Map<number, SearchExplain>();
  for (const s of slots) {
    out.set(s, {
      matched_terms: matched.get(s)!,
      lexical_score: round(lexical.get(s) ?? 0),
      semantic_score: input.query.vector ? round(input.cos[s] ?? 0) : 0,
      age_days: round(Math.max(0, input.nowUnix - index.pubdates[s]!) / 86_400, 2),
      trending_keyword: input.trends ? trendOf.get(s) ?? null : null,
      ref_quota: input.refPlaced.has(s),
    });
  }
  return out;
}
