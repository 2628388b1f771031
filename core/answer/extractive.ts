/**
 * The embedded `extractive` provider: no network, deterministic. It splits the retrieved passages
 * into sentences, scores each against the query (IDF-weighted term coverage, with query terms the
 * article's headline names counting half; proximity of the matched terms; a recency boost; a small
 * lead-sentence and headline bonus), keeps the few that answer it by maximal marginal relevance
 * (near-duplicates and publisher self-promotion left out; ties go to the newer article), and composes them verbatim under attributions naming the site and
 * date, ending with the links used. The only words it adds are the attributions: it never states what the passages
 * do not say. Below a minimum relevance it says plainly that nothing relevant was found.
 */
import { answerErrors } from "./errors.ts";
import type { RetrievedArticle } from "../search/mod.ts";
import type { AnswerProvider, GroundedRequest } from "./provider.ts";
import type { SchemaValidator } from "./schema.ts";
import { isStopword, splitSentences, terms } from "./text.ts";

/** Tuning of the extractive provider; the defaults are what the service runs with. */
export interface ExtractiveOptions {
  /** Passages to retrieve per answer. */
  passages: number;
  /** Most sentences in an answer. */
  maxSentences: number;
  /** Most sentences taken from one article. */
  maxPerArticle: number;
  /** Least share of the query's (present) IDF weight a sentence must match to count as relevant. */
  minCoverage: number;
  /** Least share of the query's content words that must occur somewhere in the passages. */
  minQueryCoverage: number;
  /** A sentence scoring under this share of the best one is left out (no padding). */
  relativeCutoff: number;
  /** Age at which an article's recency boost halves. */
  halfLifeDays: number;
  /** Characters of an article body considered (long bodies are cut: the lead carries the news). */
  maxBodyChars: number;
}

export const DEFAULT_EXTRACTIVE_OPTIONS: ExtractiveOptions = {
  passages: 8,
  maxSentences: 3,
  maxPerArticle: 2,
  minCoverage: 0.4,
  minQueryCoverage: 0.5,
  relativeCutoff: 0.5,
  halfLifeDays: 7,
  maxBodyChars: 12_000,
};

/** Term overlap (Jaccard) at which a sentence counts as a restatement of one already kept. */
const NEAR_DUPLICATE = 0.5;
/** How much of the best score a full overlap with a kept sentence costs in the MMR choice. */
const MMR_PENALTY = 0.3;

/** The answer's text when nothing relevant was found. */
export const NOTHING_FOUND = "I could not find anything in the available articles that answers this question.";

/** A sentence chosen for the answer. */
export interface PickedSentence {
  text: string;
  /** Position of the passage in the retrieval order. */
  passage: number;
  /** Position of the sentence in its article. */
  index: number;
  score: number;
  /** Share of the query's weight it matches, 0..1. */
  coverage: number;
}

/** A source cited by the answer: its citation number and the article. */
export interface CitedSource {
  n: number;
  article: RetrievedArticle;
  /** The picked sentences of this article, in article order. */
  sentences: PickedSentence[];
}

/** What the extractive provider found: the sources in citation order (empty when nothing relevant). */
export interface Extraction {
  query: string;
  found: boolean;
  sources: CitedSource[];
  /** The best sentence score, 0 when nothing was found. */
  topScore: number;
  /** The best sentence's query coverage, 0..1. */
  confidence: number;
}

interface Candidate {
  text: string;
  passage: number;
  index: number;
  terms: Map<string, number[]>;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `20 Nov 2026` from a UNIX timestamp, in UTC (no locale, no time zone: deterministic). */
export function formatDate(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  if (Number.isNaN(d.getTime())) return "undated";
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

const siteName = (a: RetrievedArticle) => a.site || a.siteDomain || new URL(a.url).hostname;

/** Smallest window (in words) holding one occurrence of every matched term: for the proximity score. */
function minimalSpan(positions: number[][]): number {
  const events: [number, number][] = [];
  positions.forEach((ps, t) => ps.forEach((p) => events.push([p, t])));
  events.sort((a, b) => a[0] - b[0]);
  const need = positions.length;
  const count = new Array(need).fill(0);
  let have = 0;
  let best = Infinity;
  let lo = 0;
  for (let hi = 0; hi < events.length; hi++) {
    if (count[events[hi]![1]]++ === 0) have++;
    while (have === need) {
      best = Math.min(best, events[hi]![0] - events[lo]![0] + 1);
      if (--count[events[lo]![1]] === 0) have--;
      lo++;
    }
  }
  return best;
}

function candidatesOf(passages: RetrievedArticle[], maxBodyChars: number): Candidate[] {
  const out: Candidate[] = [];
  passages.forEach((article, passage) => {
    const seen = new Set<string>();
    const text = `${article.summary ?? ""}\n\n${(article.body ?? "").slice(0, maxBodyChars)}`;
    // A sentence naming its own publisher is promotion ("More coverage on The Daily Ledger"), not news.
    const self = (article.site ?? "").trim().toLowerCase();
    let index = 0;
    for (const sentence of splitSentences(text)) {
      // Fragments and run-on blobs (tables, link lists) do not read as answers.
      if (sentence.length < 25 || sentence.length > 500 || !/[\p{L}]{2}/u.test(sentence)) continue;
      if (seen.has(sentence)) continue; // the summary often repeats the lead sentence
      if (self.length >= 4 && sentence.toLowerCase().includes(self)) continue;
      seen.add(sentence);
      const map = new Map<string, number[]>();
      for (const { term, pos } of terms(sentence)) {
        const list = map.get(term);
        if (list) list.push(pos);
        else map.set(term, [pos]);
      }
      out.push({ text: sentence, passage, index: index++, terms: map });
    }
  });
  return out;
}

/**
 * Chooses the sentences of `passages` that answer `query`.
 * @param now the time of asking, for the recency boost.
 */
export function extract(
  query: string,
  passages: RetrievedArticle[],
  now: Date,
  options: Partial<ExtractiveOptions> = {},
): Extraction {
  const o = { ...DEFAULT_EXTRACTIVE_OPTIONS, ...options };
  const nothing: Extraction = { query, found: false, sources: [], topScore: 0, confidence: 0 };
  const queryTerms = [...new Set(terms(query).map((t) => t.term))];
  if (queryTerms.length === 0 || passages.length === 0) return nothing;

  const candidates = candidatesOf(passages, o.maxBodyChars);
  const n = candidates.length;
  const df = new Map<string, number>(queryTerms.map((t) => [t, 0]));
  for (const c of candidates) for (const t of queryTerms) if (c.terms.has(t)) df.set(t, df.get(t)! + 1);
  const titleTerms = passages.map((a) => new Set(terms(a.title ?? "").map((t) => t.term)));
  // A term no passage contains (in a sentence or its headline) cannot be answered from them; when
  // too much of the question is missing, the passages are about something else.
  const present = queryTerms.filter((t) => df.get(t)! > 0 || titleTerms.some((title) => title.has(t)));
  if (present.length === 0 || present.length / queryTerms.length < o.minQueryCoverage) return nothing;
  const idf = new Map(present.map((t) => [t, Math.log(1 + (n - df.get(t)! + 0.5) / (df.get(t)! + 0.5))]));
  const totalWeight = present.reduce((s, t) => s + idf.get(t)!, 0);

  const nowS = now.getTime() / 1000;
  const articleBoost = passages.map((a, i) => {
    const ageDays = Math.max(0, (nowS - a.pubdateUnix) / 86_400);
    const recency = Number.isFinite(ageDays) ? Math.pow(0.5, ageDays / o.halfLifeDays) : 0;
    const titleCoverage = present.reduce((s, t) => s + (titleTerms[i]!.has(t) ? idf.get(t)! : 0), 0) / totalWeight;
    return (1 + 0.2 * recency) * (1 + 0.15 * titleCoverage);
  });

  const scored: (PickedSentence & { termSet: Set<string> })[] = [];
  for (const c of candidates) {
    const matched = present.filter((t) => c.terms.has(t));
    if (matched.length === 0) continue;
    const title = titleTerms[c.passage]!;
    // Sharing one word with the question is incidental unless that word is what the article is
    // about ("long" in a quote about "long-term effects" does not answer "how long does it last").
    if (matched.length === 1 && present.length > 1 && !title.has(matched[0]!)) continue;
    // A sentence is read in its article's context: a query term the headline names counts half
    // ("Is fusion energy any closer?" is answered by "plants are decades away" under "How close
    // are we to fusion energy"). The sentence itself must still match a term.
    const coverage = present.reduce(
      (s, t) => s + (c.terms.has(t) ? idf.get(t)! : title.has(t) ? 0.5 * idf.get(t)! : 0),
      0,
    ) / totalWeight;
    if (coverage < o.minCoverage) continue;
    const proximity = matched.length < 2 ? 0.5 : matched.length / minimalSpan(matched.map((t) => c.terms.get(t)!));
    const lead = 1 + 0.1 / (1 + c.index);
    const score = coverage * (0.8 + 0.2 * proximity) * lead * articleBoost[c.passage]!;
    scored.push({
      text: c.text,
      passage: c.passage,
      index: c.index,
      score,
      coverage,
      termSet: new Set(c.terms.keys()),
    });
  }
  if (scored.length === 0) return nothing;
  // Relevance first; between equally relevant sentences the newer article's comes first.
  const pub = (s: { passage: number }) => passages[s.passage]!.pubdateUnix || 0;
  scored.sort((a, b) => b.score - a.score || pub(b) - pub(a) || a.passage - b.passage || a.index - b.index);

  const best = scored[0]!.score;
  const pool = scored.filter((s) => s.score >= best * o.relativeCutoff);
  const picked: typeof scored = [];
  const perArticle = new Map<number, number>();
  // Maximal marginal relevance: each next sentence is the most relevant one once its overlap
  // with those already kept is charged; syndicated copies and restatements (overlap >= 0.5) are
  // dropped outright.
  while (picked.length < o.maxSentences) {
    let choice = -1, choiceValue = -Infinity;
    for (let i = 0; i < pool.length; i++) {
      const s = pool[i]!;
      if ((perArticle.get(s.passage) ?? 0) >= o.maxPerArticle) continue;
      let overlap = 0;
      for (const p of picked) overlap = Math.max(overlap, p.text === s.text ? 1 : jaccard(p.termSet, s.termSet));
      if (overlap >= NEAR_DUPLICATE) continue;
      const value = s.score - MMR_PENALTY * best * overlap;
      if (value > choiceValue) choice = i, choiceValue = value;
    }
    if (choice < 0) break;
    const s = pool.splice(choice, 1)[0]!;
    picked.push(s);
    perArticle.set(s.passage, (perArticle.get(s.passage) ?? 0) + 1);
  }

  // Sources in order of their best sentence; sentences within a source in reading order.
  const sources: CitedSource[] = [];
  for (const p of picked) {
    let src = sources.find((s) => s.article === passages[p.passage]);
    if (!src) {
      src = { n: sources.length + 1, article: passages[p.passage]!, sentences: [] };
      sources.push(src);
    }
    src.sentences.push({ text: p.text, passage: p.passage, index: p.index, score: p.score, coverage: p.coverage });
  }
  for (const s of sources) s.sentences.sort((a, b) => a.index - b.index);
  return { query, found: true, sources, topScore: best, confidence: scored[0]!.coverage };
}

function jaccard(a: Set<string>, b: Set<string>): number {
  let inter = 0;
  for (const t of a) if (b.has(t)) inter++;
  const union = a.size + b.size - inter;
  return union === 0 ? 0 : inter / union;
}

/**
 * The sentence with its first letter lowercased when its first word is a function word ("The",
 * "A", "In"), so it can follow "According to X,"; null when that is not safe (it may be a name).
 */
function lowercaseable(sentence: string): string | null {
  const first = sentence.match(/^[\p{L}']+/u)?.[0] ?? "";
  if (!first || first === "I" || !isStopword(first.toLowerCase())) return null;
  return first[0]!.toLowerCase() + sentence.slice(1);
}

/**
 * The answer as the pieces it is streamed in: one per sentence (with its attribution), then the
 * sources block. Joined, they are the whole answer.
 */
export function composeSegments(extraction: Extraction): string[] {
  if (!extraction.found) return [NOTHING_FOUND];
  const segments: string[] = [];
  extraction.sources.forEach((src, g) => {
    const who = `${siteName(src.article)} (${formatDate(src.article.pubdateUnix)})`;
    src.sentences.forEach((s, i) => {
      const cite = i === src.sentences.length - 1 ? ` [${src.n}]` : "";
      if (i > 0) {
        segments.push(` ${s.text}${cite}`);
      } else if (g > 0) {
        segments.push(`\n\n${who} also reports: ${s.text}${cite}`);
      } else {
        const lowered = lowercaseable(s.text);
        segments.push(lowered ? `According to ${who}, ${lowered}${cite}` : `${who} reports: ${s.text}${cite}`);
      }
    });
  });
  segments.push(`\n\n${sourcesBlock(extraction.sources.map((s) => ({ n: s.n, article: s.article })))}`);
  return segments;
}

/** `Sources:` then one line per cited article: number, site, date, title and link. */
export function sourcesBlock(sources: { n: number; article: RetrievedArticle }[]): string {
  const lines = sources.map(({ n, article: a }) =>
    `[${n}] ${siteName(a)} (${formatDate(a.pubdateUnix)}): ${a.title.trim() || "untitled"} — ${a.url}`
  );
  return ["Sources:", ...lines].join("\n");
}

/** The whole answer text. */
export function composeText(extraction: Extraction): string {
  return composeSegments(extraction).join("");
}

/** Raised when a required schema field has nothing the extraction can fill it with. */
export class UnfillableSchemaError extends Error {
  constructor(readonly fields: string[]) {
    super(`the extractive provider cannot fill the required field(s) ${fields.join(", ")}`);
    this.name = "UnfillableSchemaError";
  }
}

type JsonSchema = Record<string, unknown>;

const norm = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
const ANSWER_NAMES = new Set([
  "answer",
  "message",
  "text",
  "response",
  "summary",
  "content",
  "output",
  "result",
  "reply",
]);
const QUERY_NAMES = new Set(["query", "question", "prompt"]);
const FOUND_NAMES = new Set(["found", "answered", "hasanswer", "relevant", "grounded", "success"]);
const SCORE_NAMES = new Set(["confidence", "score", "relevance"]);
const COUNT_NAMES = new Set(["count", "numsources", "sourcecount", "sourcescount"]);
const SOURCE_LIST_NAMES = new Set(["sources", "citations", "references", "links", "articles", "urls", "documents"]);
const SENTENCE_LIST_NAMES = new Set(["sentences", "quotes", "evidence", "keypoints", "points", "highlights", "facts"]);

function typeOf(schema: JsonSchema): string | undefined {
  const t = schema.type;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) return t.find((x) => x !== "null") as string | undefined;
  if (schema.properties) return "object";
  if (schema.items) return "array";
  if (Array.isArray(schema.enum) || "const" in schema) return "literal";
  return undefined;
}

/** Field values of one cited source, by normalised field name. */
function sourceFields(src: CitedSource): Record<string, unknown> {
  const a = src.article;
  const quote = src.sentences.map((s) => s.text).join(" ");
  return {
    n: src.n,
    number: src.n,
    index: src.n,
    citation: src.n,
    id: a.id,
    title: a.title,
    url: a.url,
    link: a.url,
    href: a.url,
    site: siteName(a),
    sitename: siteName(a),
    source: siteName(a),
    publisher: siteName(a),
    sitedomain: a.siteDomain,
    domain: a.siteDomain,
    pubdate: a.pubdate,
    date: a.pubdate,
    published: a.pubdate,
    publishedat: a.pubdate,
    publicationdate: a.pubdate,
    pubdateunix: a.pubdateUnix,
    author: a.author,
    summary: a.summary,
    score: a.score,
    quote,
    text: quote,
    excerpt: quote,
    snippet: quote,
  };
}

/**
 * Builds a structured payload from an extraction by field names the schema uses: answer-like
 * strings (`answer`, `message`, `summary`, ...) get the answer text, `sources`-like arrays the
 * cited articles (as URLs for string items, or objects with `title`, `url`, `site`, `pubdate`,
 * ...), `sentences`/`quotes` the picked sentences, `found` whether anything relevant was found,
 * `confidence` the best coverage (0..1), `query` the question. Optional fields it cannot fill are
 * left out.
 * @throws {UnfillableSchemaError} when a required field has no such meaning.
 */
export function buildPayload(extraction: Extraction, schema: JsonSchema): unknown {
  const answerText = extraction.found
    ? composeSegments(extraction).slice(0, -1).join("").trim() // without the sources block
    : NOTHING_FOUND;
  const missing: string[] = [];

  // Only a fixed value is safe to fill: picking one of several enum values would be a claim.
  const fillLiteral = (s: JsonSchema): unknown =>
    "const" in s ? s.const : Array.isArray(s.enum) && s.enum.length === 1 ? s.enum[0] : undefined;

  const fill = (s: JsonSchema, name: string, path: string, ctx?: Record<string, unknown>): unknown => {
    const key = norm(name);
    const type = typeOf(s);
    if (ctx && key in ctx && ctx[key] !== undefined && type !== "object" && type !== "array") {
      const v = ctx[key];
      if (type === "string") return String(v);
      if ((type === "number" || type === "integer") && typeof v === "number") return v;
      if (type === undefined) return v;
    }
    switch (type) {
      case "string":
        if (ANSWER_NAMES.has(key) || (!ctx && name === "")) return answerText;
        if (QUERY_NAMES.has(key)) return extraction.query;
        return undefined;
      case "boolean":
        return FOUND_NAMES.has(key) ? extraction.found : undefined;
      case "number":
      case "integer":
        if (SCORE_NAMES.has(key)) {
          return type === "integer" ? Math.round(extraction.confidence * 100) : round(extraction.confidence);
        }
        if (COUNT_NAMES.has(key)) return extraction.sources.length;
        return undefined;
      case "array": {
        const items = (s.items ?? {}) as JsonSchema;
        const itemType = typeOf(items);
        if (SOURCE_LIST_NAMES.has(key)) {
          return extraction.sources.map((src, i) =>
            itemType === "object"
              ? fill(items, "", `${path}[${i}]`, sourceFields(src))
              : itemType === "string"
              ? src.article.url
              : undefined
          ).filter((v) => v !== undefined);
        }
        if (SENTENCE_LIST_NAMES.has(key) && itemType === "string") {
          return extraction.sources.flatMap((src) => src.sentences.map((x) => x.text));
        }
        return undefined;
      }
      case "object": {
        const props = (s.properties ?? {}) as Record<string, JsonSchema>;
        const required = new Set((s.required ?? []) as string[]);
        const out: Record<string, unknown> = {};
        for (const [prop, sub] of Object.entries(props)) {
          const v = fill(sub, prop, path ? `${path}.${prop}` : prop, ctx);
          if (v !== undefined) out[prop] = v;
          else if (required.has(prop)) missing.push(path ? `${path}.${prop}` : prop);
        }
        return out;
      }
      case "literal":
        return fillLiteral(s);
      default:
        return undefined;
    }
  };

  const root = fill(schema, "", "");
  if (missing.length > 0) throw new UnfillableSchemaError([...new Set(missing)]);
  if (root === undefined) throw new UnfillableSchemaError(["(root)"]);
  return root;
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** The extractive provider. */
export class ExtractiveProvider implements AnswerProvider {
  readonly passages: number;
  readonly #options: Partial<ExtractiveOptions>;

  constructor(options: Partial<ExtractiveOptions> = {}) {
    this.#options = options;
    this.passages = options.passages ?? DEFAULT_EXTRACTIVE_OPTIONS.passages;
  }

  /** The extraction behind an answer (exposed for benches and tests). */
  extract(request: GroundedRequest): Extraction {
    return extract(request.query, request.passages, request.now, this.#options);
  }

  text(request: GroundedRequest): Promise<string> {
    return Promise.resolve(composeText(this.extract(request)));
  }

  async *streamText(request: GroundedRequest): AsyncIterable<string> {
    for (const segment of composeSegments(this.extract(request))) yield segment;
  }

  structured(request: GroundedRequest, schema: Record<string, unknown>, validator: SchemaValidator): Promise<unknown> {
    const extraction = this.extract(request);
    let payload: unknown;
    try {
      payload = buildPayload(extraction, schema);
    } catch (err) {
      if (err instanceof UnfillableSchemaError) {
        return Promise.reject(
          answerErrors.schema_mismatch({ problems: [err.message] }),
        );
      }
      throw err;
    }
    const problems = validator.validate(payload);
    if (problems.length > 0) {
      return Promise.reject(
        answerErrors.schema_mismatch({ problems: problems.map((p) => p.text) }),
      );
    }
    return Promise.resolve(payload);
  }
}
