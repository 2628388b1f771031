import type { DataModelIndex } from "../index/index.ts";
import type { QueryCount, TrendChannel } from "../ports.ts";
import { stem } from "../text/stemmer.ts";
import { termsWithWords } from "../text/tokenizer.ts";

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

/**
 * How much each channel weighs in the query side of trending, once each is normalised to its own
 * strongest keyword. Queries this service answered (bearer, payproxy, MCP, widget answers) cannot
 * be sent by an outsider without an answer being produced; widget queries arrive on a public route
 * (bounded per address and widget, but forgeable); clicks are deduped and bot-filtered but cheap.
 */
export const CHANNEL_WEIGHTS: Readonly<Record<TrendChannel, number>> = { server: 0.5, widget: 0.3, click: 0.2 };
/** A keyword needs this many distinct senders (and sessions) in its channel to count at all. */
export const MIN_SENDERS = 2;

/**
 * Keywords of recent signals, per channel, combined by {@link CHANNEL_WEIGHTS}. Within a channel a
 * keyword's score is the number of distinct senders that used it, capped by the number of distinct
 * sessions (entries with a `sender`), plus the plain counts of entries without one. So one
 * sender, session or batch adds at most 1 to any keyword however many events it sends, and a
 * keyword used by fewer than {@link MIN_SENDERS} is noise, not a trend.
 * @param titleOf the title of a clicked article (by URL), for the `click` channel
 */
export function signalKeywords(
  signals: QueryCount[],
  surface?: Map<string, string>,
  titleOf: (articleUrl: string) => string | undefined = () => undefined,
): Map<string, number> {
  const channels = new Map<TrendChannel, Map<string, { senders: Set<string>; sessions: Set<string>; plain: number }>>();
  for (const signal of signals) {
    const channel = signal.channel ?? "server";
    const text = channel === "click" ? (signal.articleUrl ? titleOf(signal.articleUrl) : undefined) : signal.query;
    if (!text || (channel !== "click" && /^https?:\/\//i.test(text))) continue;
    let terms = channels.get(channel);
    if (!terms) channels.set(channel, terms = new Map());
    const seen = new Set<string>();
    termsWithWords(text, (term, word) => {
      if (seen.has(term) || QUERY_FILLER.has(term)) return;
      seen.add(term);
      let t = terms.get(term);
      if (!t) terms.set(term, t = { senders: new Set(), sessions: new Set(), plain: 0 });
      if (signal.sender !== undefined) {
        t.senders.add(signal.sender);
        t.sessions.add(signal.session ?? signal.sender);
      } else t.plain += signal.count;
      if (surface && !surface.has(term)) surface.set(term, word);
    });
  }
  const combined = new Map<string, number>();
  for (const [channel, terms] of channels) {
    const scores = new Map<string, number>();
    for (const [term, t] of terms) {
      const score = Math.min(t.senders.size, t.sessions.size) + t.plain;
      if (score >= MIN_SENDERS) scores.set(term, score);
    }
    for (const [term, w] of normalizeTop(scores)) {
      combined.set(term, (combined.get(term) ?? 0) + CHANNEL_WEIGHTS[channel] * w);
    }
  }
  return normalizeTop(combined);
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
