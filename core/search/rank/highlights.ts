/**
 * Highlights: the passages of an article body that best answer a query, as windows of whole
 * sentences, chosen within a character budget and returned in document order.
 *
 * Scoring is in two steps so the engine can embed the shortlisted windows of a whole page in one
 * call: {@link shortlistWindows} scores every window by the query's terms (idf-weighted,
 * saturating), {@link pickHighlights} blends in the windows' cosine with the query vector and
 * chooses non-overlapping windows within the budget.
 */
import { boundedCache } from "../../bounded_cache.ts";
import { timeSlicer } from "../../timers.ts";
import { stem } from "../text/stemmer.ts";
import { QUESTION_WORDS, splitSentences } from "../../text/mod.ts";
import { foldText, termsWithWords } from "../text/tokenizer.ts";

/** Most characters a result's highlights take (request bound). */
export const MAX_HIGHLIGHT_CHARACTERS = 10_000;
/** Most highlights per result (request bound). */
export const MAX_HIGHLIGHTS_PER_RESULT = 10;
export const DEFAULT_HIGHLIGHT_CHARACTERS = 1000;
/** Most characters of a result's highlights for a caller not licensed for the full text. */
export const SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS = DEFAULT_HIGHLIGHT_CHARACTERS;
export const DEFAULT_HIGHLIGHTS_PER_RESULT = 3;
/**
 * Weight of the vector side in a window's score (lexical side 1). Chosen on CISI
 * (`bench/highlights_quality.ts`, docs/relevance.md).
 */
export const HIGHLIGHT_VECTOR_WEIGHT = 0.3;
// Term-frequency saturation inside a window (BM25's k1).
const K1 = 1.2;
// Windows kept per result for the vector side: enough to swap the lexical order, few to embed.
const SHORTLIST_PER_HIGHLIGHT = 2;
const SHORTLIST_EXTRA = 2;
// A window this far below the best by terms is not embedded: the vector side cannot lift it.
const VECTOR_MARGIN = 0.1;
/**
 * Most windows embedded for one page of results (one batch of a remote provider): a page of 1,000
 * results with 10 highlights each would otherwise embed 11,000 windows, one cheap request making
 * the service call its embedding provider over a hundred times. The top results are served first;
 * the rest are scored by terms alone.
 */
export const MAX_EMBEDDED_WINDOWS = 64;
// Sentences scanned per body: a 20k-character body has a few hundred.
const MAX_SENTENCES = 400;

/** The highlight budget of a request. */
export interface HighlightOptions {
  /** Most characters of all of a result's highlights together. */
  maxCharacters: number;
  /** Most highlights of a result. */
  perResult: number;
}

/** One highlight as results carry it. */
export interface Highlight {
  text: string;
  /** In [0, 1]: share of the query's term weight the passage covers, blended with its cosine. */
  score: number;
}

/** A query as highlighting sees it: stemmed terms with their weight (idf). */
export interface HighlightQuery {
  weights: Map<string, number>;
  /** Sum of the weights. */
  total: number;
  /** Longest common prefix of each term's surface forms, for a fast first scan (lowercase). */
  prefixes: RegExp | null;
}

/** A window of consecutive sentences of one body. */
export interface HighlightWindow {
  /** Index of its first and one past its last sentence. */
  from: number;
  to: number;
  text: string;
  lexical: number;
}

/**
 * The query form of a bag of stemmed terms and their idf.
 * @param idf the weight of a term (e.g. the index's BM25 idf); terms of weight 0 are dropped
 */
export function highlightQuery(queryTerms: Iterable<string>, idf: (term: string) => number): HighlightQuery {
  const weights = new Map<string, number>();
  for (const t of queryTerms) {
    const w = idf(t);
    if (w > 0) weights.set(t, w);
  }
  let total = 0;
  for (const w of weights.values()) total += w;
  // A stem is the start of (almost) every word it comes from; its first 3 letters always are
  // for the stems Porter2 makes of English words, so a cheap scan finds the candidate words.
  const heads = [...new Set([...weights.keys()].map((t) => t.slice(0, Math.min(3, t.length))))];
  const prefixes = heads.length
    ? new RegExp(`(?<![\\p{L}\\p{N}])(?:${heads.map(escapeRegExp).join("|")})[\\p{L}\\p{N}'’]*`, "gu")
    : null;
  return { weights, total, prefixes };
}

/**
 * The query form of query text: terms as the index tokenises them, without the words that only
 * frame a question ("what did they say", "how much").
 */
export function highlightQueryOfText(text: string, idf: (term: string) => number): HighlightQuery {
  const out = new Set<string>();
  termsWithWords(text, (term, word) => {
    if (!QUESTION_WORDS.has(word)) out.add(term);
  });
  return highlightQuery(out, idf);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// The sentences of recently highlighted bodies: popular articles are highlighted again and again,
// and splitting is a large share of the work. Keyed by the body string (V8 keeps a string's hash).
const sentenceCache = boundedCache<string, Sentences>({
  max: 4096,
  maxSize: 24 * 1024 * 1024,
  sizeOf: (_, body) => 4 * body.length + 64,
});

/** A body's sentences as written and folded for matching (at most {@link MAX_SENTENCES}). */
interface Sentences {
  raw: string[];
  folded: string[];
}

/** A body's sentences, split and folded once while cached. */
function sentencesOf(body: string): Sentences {
  let list = sentenceCache.get(body);
  if (!list) {
    const raw = splitSentences(body).slice(0, MAX_SENTENCES);
    list = { raw, folded: raw.map(foldText) };
    sentenceCache.set(body, list);
  }
  return list;
}

/** Stems memoised per call: a page's bodies repeat their words. */
export type StemCache = Map<string, string>;

/** The query terms a sentence holds, with their counts. */
function sentenceMatches(folded: string, q: HighlightQuery, cache: StemCache): Map<string, number> | null {
  if (!q.prefixes) return null;
  let found: Map<string, number> | null = null;
  for (const word of folded.match(q.prefixes) ?? []) {
    const w = word.replaceAll("’", "'");
    let s = cache.get(w);
    if (s === undefined) {
      s = stem(w);
      cache.set(w, s);
    }
    if (q.weights.has(s)) {
      found ??= new Map();
      found.set(s, (found.get(s) ?? 0) + 1);
    }
  }
  return found;
}

/**
 * Cuts a text to at most `max` characters at a word boundary, with an ellipsis when cut (counted).
 * Empty when not even one word fits.
 */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max < 2) return "";
  const head = text.slice(0, max); // the ellipsis takes the last place
  const at = head.search(/\s\S*$/);
  if (at <= 0) return "";
  return `${head.slice(0, at).replace(/[\s,;:(-]+$/, "")}…`;
}

/**
 * Every window of a body (from each sentence, as many following sentences as fit the per-highlight
 * budget), scored by the query's terms; the best few, best first.
 */
export function shortlistWindows(
  body: string,
  q: HighlightQuery,
  options: HighlightOptions,
  cache: StemCache = new Map(),
  keep = options.perResult * SHORTLIST_PER_HIGHLIGHT + SHORTLIST_EXTRA,
): HighlightWindow[] {
  const cap = Math.floor(options.maxCharacters / options.perResult);
  if (cap < 1 || body.length === 0) return [];
  const { raw: sentences, folded } = sentencesOf(body);
  const matches = folded.map((s) => sentenceMatches(s, q, cache));
  // Windows are bounds and a score; only the shortlisted ones get their text (fewer strings made).
  const spans: { from: number; to: number; lexical: number }[] = [];
  for (let i = 0; i < sentences.length; i++) {
    let to = i + 1;
    let length = sentences[i]!.length;
    if (length <= cap) {
      while (to < sentences.length && length + 1 + sentences[to]!.length <= cap) length += 1 + sentences[to++]!.length;
    }
    spans.push({ from: i, to, lexical: lexicalScore(matches, i, to, q) });
  }
  // Ties keep document order: with no term matched, the opening of the article comes first.
  spans.sort((a, b) => b.lexical - a.lexical || a.from - b.from);
  const out: HighlightWindow[] = [];
  for (const span of spans) {
    if (out.length >= keep) break;
    const joined = span.to - span.from === 1 ? sentences[span.from]! : sentences.slice(span.from, span.to).join(" ");
    const text = joined.length > cap ? cutAtWord(joined, cap) : joined;
    if (text) out.push({ ...span, text });
  }
  return out;
}

function lexicalScore(matches: (Map<string, number> | null)[], from: number, to: number, q: HighlightQuery): number {
  if (q.total === 0) return 0;
  const tf = new Map<string, number>();
  for (let i = from; i < to; i++) {
    for (const [t, n] of matches[i] ?? []) tf.set(t, (tf.get(t) ?? 0) + n);
  }
  let score = 0;
  for (const [t, n] of tf) score += q.weights.get(t)! * (n * (K1 + 1)) / (n + K1);
  // Saturation lets one term count at most (k1 + 1) times its weight: scale back into [0, 1].
  return Math.min(1, score / (q.total * (K1 + 1)) * 1.5);
}

/**
 * The highlights of one result: non-overlapping windows, best first by their blended score, as
 * many as the budget takes, in document order. Their characters together never pass
 * `maxCharacters`.
 * @param cosines the cosine of each shortlisted window with the query (same order), when known
 */
export function pickHighlights(
  windows: HighlightWindow[],
  options: HighlightOptions,
  cosines?: ArrayLike<number>,
  vectorWeight = HIGHLIGHT_VECTOR_WEIGHT,
): Highlight[] {
  const scored = windows.map((w, i) => {
    const cos = cosines ? Math.max(0, cosines[i] ?? 0) : undefined;
    const score = cos === undefined ? w.lexical : (w.lexical + vectorWeight * cos) / (1 + vectorWeight);
    return { w, score };
  }).sort((a, b) => b.score - a.score || a.w.from - b.w.from);
  const chosen: typeof scored = [];
  let used = 0;
  for (const c of scored) {
    if (chosen.length >= options.perResult) break;
    if (used + c.w.text.length > options.maxCharacters) continue;
    if (chosen.some((o) => c.w.from < o.w.to && o.w.from < c.w.to)) continue;
    chosen.push(c);
    used += c.w.text.length;
  }
  return chosen.sort((a, b) => a.w.from - b.w.from).map((c) => ({
    text: c.w.text,
    score: Math.round(c.score * 10_000) / 10_000,
  }));
}

/** Embeds texts (L2-normalised vectors); null when embeddings are unavailable. */
export type EmbedTexts = (texts: string[]) => Promise<Float32Array[] | null>;

/**
 * The highlights of a page of results: each body's windows shortlisted by the query's terms, the
 * shortlists of the whole page embedded in one call and scored against the query vector.
 * @param bodies one body per result (empty when unknown)
 * @param queryVector the query's L2-normalised vector; null scores by terms alone
 */
export async function highlightPage(
  bodies: string[],
  q: HighlightQuery,
  options: HighlightOptions,
  { queryVector = null, embed, vectorWeight = HIGHLIGHT_VECTOR_WEIGHT, margin = VECTOR_MARGIN }: {
    queryVector?: Float32Array | null;
    embed?: EmbedTexts;
    /** Weight of the vector side (see {@link HIGHLIGHT_VECTOR_WEIGHT}). */
    vectorWeight?: number;
    /** How far below the best by terms a window is still embedded. */
    margin?: number;
  } = {},
): Promise<Highlight[][]> {
  const cache: StemCache = new Map();
  // A page may hold 1,000 bodies of 20,000 characters: other requests are served between them.
  const slice = timeSlicer();
  const lists: HighlightWindow[][] = [];
  for (const b of bodies) {
    lists.push(shortlistWindows(b, q, options, cache));
    await slice();
  }
  // Embedding is the costly part: only the windows the vector side could still move into the
  // picks are embedded (the best few, close to the best by terms); the rest keep a cosine of 0.
  let budget = MAX_EMBEDDED_WINDOWS;
  const contenders = lists.map((list) => {
    const best = list[0]?.lexical ?? 0;
    let n = 0;
    while (n < list.length && n < options.perResult + 1 && list[n]!.lexical >= best - margin) n++;
    // A lone contender is picked first whatever its cosine: nothing for the vector side to decide.
    if (n < 2 || n > budget) return 0;
    budget -= n;
    return n;
  });
  let vectors: Float32Array[] | null = null;
  if (queryVector && embed) {
    const texts = lists.flatMap((l, r) => l.slice(0, contenders[r]).map((w) => w.text));
    if (texts.length) vectors = await embed(texts);
  }
  let at = 0;
  return lists.map((list, r) => {
    let cosines: Float32Array | undefined;
    if (vectors && queryVector && contenders[r]! > 0) {
      cosines = new Float32Array(list.length);
      for (let i = 0; i < contenders[r]!; i++) cosines[i] = dot(vectors[at + i]!, queryVector);
      at += contenders[r]!;
    }
    return pickHighlights(list, options, cosines, vectorWeight);
  });
}

function dot(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  let s = 0;
  for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
  return s;
}
