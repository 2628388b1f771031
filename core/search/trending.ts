import type { DataModelIndex } from "./index.ts";
import type { QueryCount } from "./ports.ts";
import { stem } from "./stemmer.ts";
import { termsWithWords } from "./tokenizer.ts";

/** A trending keyword (a stemmed index term) and its weight in (0, 1]. */
export interface TrendingKeyword {
  term: string;
  /** A word the term was seen as, for display ("forces" for the term "forc"). */
  word: string;
  weight: number;
  /** Where it came from. */
  source: "queries" | "titles" | "both";
}

const DAY = 86_400;
// Words people put around a topic in questions ("what's the latest on ...", "any good ..."): never a trend.
const QUERY_FILLER = new Set(
  [
    "latest",
    "good",
    "best",
    "news",
    "recommend",
    "recommendation",
    "today",
    "tell",
    "know",
    "show",
    "find",
    "please",
    "update",
    "happening",
    "going",
    "think",
    "look",
    "want",
    "need",
    "help",
    "give",
    "top",
    "anything",
  ].map((w) => stem(w)),
);
const MAX_KEYWORDS = 12;

/**
 * Burst keywords of titles: terms whose share of titles published in the last 24 hours is well
 * above their share in the week before (smoothed log ratio), seen in at least two fresh titles.
 * Weight = log-ratio x log(1 + fresh count), normalised to the strongest.
 */
export function titleBursts(
  index: DataModelIndex,
  nowUnix: number,
  surface?: Map<string, string>,
): Map<string, number> {
  const fresh = new Map<string, number>(), prior = new Map<string, number>();
  let nFresh = 0, nPrior = 0;
  const from = nowUnix - 8 * DAY, cut = nowUnix - DAY;
  const pub = index.pubdates;
  for (let s = 0; s < index.size; s++) {
    const t = pub[s]!;
    if (t < from || t > nowUnix) continue;
    const isFresh = t >= cut;
    const into = isFresh ? fresh : prior;
    if (isFresh) nFresh++;
    else nPrior++;
    const seen = new Set<string>();
    termsWithWords(index.cards[s]!.title, (term, word) => {
      if (seen.has(term)) return;
      seen.add(term);
      into.set(term, (into.get(term) ?? 0) + 1);
      if (isFresh && surface && !surface.has(term)) surface.set(term, word);
    });
  }
  const out = new Map<string, number>();
  if (nFresh === 0) return out;
  for (const [term, c] of fresh) {
    if (c < 2) continue;
    const ratio = Math.log((c + 0.5) / (nFresh + 1)) - Math.log(((prior.get(term) ?? 0) + 0.5) / (nPrior + 1));
    if (ratio <= 0.5) continue;
    out.set(term, ratio * Math.log(1 + c));
  }
  return normalizeTop(out);
}

/** Keywords of recent queries: each query's terms weighted by how often it was asked. */
export function queryKeywords(queries: QueryCount[], surface?: Map<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const { query, count } of queries) {
    if (/^https?:\/\//i.test(query)) continue;
    const seen = new Set<string>();
    termsWithWords(query, (term, word) => {
      if (seen.has(term) || QUERY_FILLER.has(term)) return;
      seen.add(term);
      out.set(term, (out.get(term) ?? 0) + count);
      if (surface && !surface.has(term)) surface.set(term, word);
    });
  }
  // A term asked once is noise, not a trend.
  for (const [t, c] of out) if (c < 2) out.delete(t);
  return normalizeTop(out);
}

/** Merges both sources (each normalised to 1) into the final keyword list, strongest first. */
export function mergeTrends(
  fromQueries: Map<string, number>,
  fromTitles: Map<string, number>,
  surface = new Map<string, string>(),
): TrendingKeyword[] {
  const all = new Map<string, TrendingKeyword>();
  const word = (term: string) => surface.get(term) ?? term;
  for (const [term, w] of fromQueries) all.set(term, { term, word: word(term), weight: w, source: "queries" });
  for (const [term, w] of fromTitles) {
    const cur = all.get(term);
    all.set(
      term,
      cur
        ? { ...cur, weight: cur.weight + w, source: "both" }
        : { term, word: word(term), weight: w, source: "titles" },
    );
  }
  const list = [...all.values()].sort((a, b) => b.weight - a.weight || a.term.localeCompare(b.term)).slice(
    0,
    MAX_KEYWORDS,
  );
  const max = list[0]?.weight ?? 1;
  return list.map((k) => ({ ...k, weight: k.weight / max }));
}

function normalizeTop(m: Map<string, number>): Map<string, number> {
  const top = [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, MAX_KEYWORDS);
  const max = top[0]?.[1] ?? 1;
  return new Map(top.map(([t, w]) => [t, w / max]));
}
