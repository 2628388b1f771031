/**
 * How payproxy's `search_type` (body) and `search_version` (query) change retrieval. Both tune the
 * hybrid blend every algorithm ranks with: the weight of vector similarity against BM25.
 *
 * - `search_version`: the ranking version. `2` (the default, also what bearer search uses) blends
 *   vectors and words equally; `1` is the earlier, word-leaning blend (vectors 25 %).
 * - `search_type`: `hybrid` (default) uses the version's blend; `keyword` ranks by BM25 alone;
 *   `semantic` by vector similarity alone. Either side still stands in when the other has nothing
 *   (no word of the query in any article, or no query vector), as in every hybrid ranking.
 */
import { DEFAULT_ALPHA } from "./index.ts";

/** Accepted `search_type` values. */
export const SEARCH_TYPES = ["hybrid", "keyword", "semantic"] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

/** Vector weight of each ranking version. */
export const SEARCH_VERSIONS: Record<string, number> = { "1": 0.25, "2": DEFAULT_ALPHA };
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
 * The vector weight (`alpha`) for a request. Unknown values fall back to the defaults: the routes
 * validate what they accept; the engine never fails on them.
 */
export function retrievalAlpha(searchType?: string, searchVersion?: string): number {
  if (searchType === "keyword") return 0;
  if (searchType === "semantic") return 1;
  return SEARCH_VERSIONS[searchVersion && isSearchVersion(searchVersion) ? searchVersion : DEFAULT_SEARCH_VERSION]!;
}
