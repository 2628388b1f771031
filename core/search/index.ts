import type { Article } from "./articles.ts";
import { type Bm25Field, Bm25Index } from "./bm25.ts";
import { type Fusion, FUSION_V2 } from "./retrieval_mode.ts";
import { terms } from "./tokenizer.ts";
import { TopK } from "./topk.ts";
import { l2norm, VectorIndex } from "./vector_index.ts";

/** What a search result shows of an article; kept in memory (the body stays in KV). */
export interface ArticleCard {
  id: string;
  url: string;
  title: string;
  author?: string;
  site: string;
  siteDomain: string;
  pubdate: string;
  pubdateUnix: number;
  image?: string;
  previewContent: string;
  summary: string;
}

/** A query as the index sees it: a weighted bag of terms and an optional normalised vector. */
export interface QueryRep {
  bag: Map<string, number>;
  vector: Float32Array | null;
  /**
   * The BM25F scores of `bag` over the whole index, when already computed (by
   * {@link DataModelIndex.withFeedback}); rankings filter them instead of scoring again.
   */
  lexical?: { slots: Int32Array; scores: Float32Array };
}

/** One hybrid candidate. `score` is in [0, 1]; `bm25` raw; `cosine` raw. */
export interface Candidate {
  slot: number;
  score: number;
  bm25: number;
  cosine: number;
}

/** Options of {@link DataModelIndex.hybrid}. */
export interface HybridOptions {
  /** How many candidates to return, best first. */
  k: number;
  /** Prefilter: only these slots are considered. */
  allow?: (slot: number) => boolean;
  /** How the sides are blended; the default ranking version when absent. */
  fusion?: Fusion;
  /** Cosines already computed by {@link DataModelIndex.cosines} for this query (saves a scan). */
  cos?: Float32Array;
}

/**
 * BM25F fields of an article: the title names the topic (twice the weight, light length
 * normalisation: titles are all short), the summary and the body opening count once. Chosen with
 * `bench/relevance_cv.ts` (docs/relevance.md).
 */
export const ARTICLE_FIELDS: Bm25Field[] = [{ weight: 2, b: 0.5 }, { weight: 1, b: 0.5 }, { weight: 1, b: 0.75 }];
/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
// Each side contributes at least this many candidates, so normalisation sees a stable spread.
const MIN_SIDE_CANDIDATES = 50;
const BODY_INDEX_CHARS = 6000;
// The common direction is recomputed when the index has grown by this factor since.
const DIRECTION_REGROWTH = 2;
const DIRECTION_MIN_ROWS = 16;

/** The BM25F terms of an article: frequencies in its title, summary and body opening. */
export function articleBag(a: Pick<Article, "title" | "summary" | "body">): Map<string, number[]> {
  return Bm25Index.fieldBag([terms(a.title), terms(a.summary), terms(a.body.slice(0, BODY_INDEX_CHARS))]);
}

/** The card of an article. */
export function cardOf(a: Article): ArticleCard {
  return {
    id: a.id,
    url: a.url,
    title: a.title,
    author: a.author,
    site: a.site,
    siteDomain: a.siteDomain,
    pubdate: a.pubdate,
    pubdateUnix: a.pubdateUnix,
    image: a.image,
    previewContent: a.previewContent,
    summary: a.summary,
  };
}

/**
 * The in-memory index of one data model: cards, BM25 postings, normalised vectors and
 * publication times in slot order. One slot per article URL, reused when the article changes.
 */
export class DataModelIndex {
  readonly dataModelId: string;
  readonly bm25 = new Bm25Index({ k1: BM25_K1, fields: ARTICLE_FIELDS });
  readonly vectors: VectorIndex;
  /** Whether cosines are taken with the vectors' common direction removed (see {@link cosines}). */
  readonly removeCommonDirection: boolean;
  private directionRows = 0;
  readonly cards: ArticleCard[] = [];
  /** Unix seconds per slot. */
  pubdates = new Float64Array(1024);
  /** Site-domain number per slot (see {@link domainMask}). */
  siteIds = new Int32Array(1024);
  private domains: string[] = [];
  private domainIds = new Map<string, number>();
  private slotByUrl = new Map<string, number>();
  /** Bumped on every change (caches key on it). */
  version = 0;
  /** Slots emptied by {@link removeSlots} (they stay allocated until the next rebuild). */
  private removed = 0;
  /** 1 per removed slot: {@link hybrid} never returns one, whatever the fusion makes of a zero cosine. */
  private deadSlots = new Uint8Array(0);

  /**
   * @param removeCommonDirection take the vectors' first principal component out of every
   * cosine (for averaged word vectors, which all lean one way; see {@link cosines})
   */
  constructor(dataModelId: string, dims: number, { removeCommonDirection = false } = {}) {
    this.dataModelId = dataModelId;
    this.vectors = new VectorIndex(dims);
    this.removeCommonDirection = removeCommonDirection;
  }

  /** Number of articles. */
  get size(): number {
    return this.cards.length;
  }

  /** Number of articles that are searchable (slots minus removed ones). */
  get liveCount(): number {
    return this.cards.length - this.removed;
  }

  /** Slot of an article URL (canonical form), if indexed. */
  slotOf(url: string): number | undefined {
    return this.slotByUrl.get(url);
  }

  /**
   * Adds or replaces an article. `previous` is the stored article being replaced (its terms are
   * taken out of the postings); `bag` may be passed when already computed.
   */
  upsert(article: Article, vector: Float32Array | null, previous?: Article, bag = articleBag(article)): number {
    let slot = this.slotByUrl.get(article.url);
    if (slot !== undefined) {
      if (previous) this.bm25.remove(slot, articleBag(previous));
      else throw new Error("re-indexing an article needs the previous version");
    } else {
      slot = this.cards.length;
      this.slotByUrl.set(article.url, slot);
      if (slot >= this.pubdates.length) {
        const next = new Float64Array(this.pubdates.length * 2);
        next.set(this.pubdates);
        this.pubdates = next;
        const ids = new Int32Array(this.siteIds.length * 2);
        ids.set(this.siteIds);
        this.siteIds = ids;
      }
    }
    this.cards[slot] = cardOf(article);
    this.pubdates[slot] = article.pubdateUnix;
    let siteId = this.domainIds.get(article.siteDomain);
    if (siteId === undefined) {
      siteId = this.domains.length;
      this.domains.push(article.siteDomain);
      this.domainIds.set(article.siteDomain, siteId);
    }
    this.siteIds[slot] = siteId;
    this.bm25.add(slot, bag);
    this.vectors.set(slot, vector);
    if (this.removeCommonDirection) this.trackDirection();
    this.version++;
    return slot;
  }

  // The direction is recomputed from all rows whenever the index has doubled since it was last
  // computed (amortised O(1) per article); the vector index keeps each row's component along it.
  private trackDirection(): void {
    const n = this.cards.length;
    if (n >= DIRECTION_MIN_ROWS && n >= this.directionRows * DIRECTION_REGROWTH) {
      this.vectors.setDirection(this.vectors.principalDirection(n), n);
      this.directionRows = n;
    }
  }

  /**
   * The query vector moved toward the mean vector of its best `docs` BM25 matches (vector
   * pseudo-relevance feedback): a short query borrows the vocabulary of the articles its words
   * find. Unchanged without a vector, without lexical matches or with feedback off.
   */
  withFeedback(query: QueryRep, docs: number, weight: number): QueryRep {
    if (!query.vector || docs <= 0 || weight <= 0) return query;
    const lexical = query.lexical ?? this.bm25.score(query.bag);
    const top = new TopK(docs);
    for (let i = 0; i < lexical.slots.length; i++) top.push(lexical.slots[i]!, lexical.scores[i]!);
    const best = top.drain();
    if (best.length === 0) return { ...query, lexical };
    const v = Float32Array.from(query.vector);
    for (const e of best) {
      const row = this.vectors.row(e.id);
      for (let j = 0; j < v.length; j++) v[j]! += (weight / best.length) * row[j]!;
    }
    const n = l2norm(v);
    if (n === 0) return { ...query, lexical };
    for (let j = 0; j < v.length; j++) v[j]! /= n;
    return { bag: query.bag, vector: v, lexical };
  }

  /**
   * Takes articles out of the index (retention). Their slots keep no terms, no vector and a
   * publication time of -Infinity, so no algorithm returns them; they are not reused.
   * @returns the cards removed
   */
  removeSlots(slots: Iterable<number>): ArticleCard[] {
    const dead = new Uint8Array(this.cards.length);
    const out: ArticleCard[] = [];
    for (const s of slots) {
      const card = this.cards[s];
      if (!card || dead[s] === 1 || this.slotByUrl.get(card.url) !== s) continue;
      dead[s] = 1;
      out.push(card);
    }
    if (out.length === 0) return out;
    this.bm25.removeSlots(dead);
    if (this.deadSlots.length < dead.length) {
      const grown = new Uint8Array(dead.length);
      grown.set(this.deadSlots);
      this.deadSlots = grown;
    }
    for (let s = 0; s < dead.length; s++) {
      if (dead[s] !== 1) continue;
      this.deadSlots[s] = 1;
      this.vectors.clear(s);
      this.pubdates[s] = -Infinity;
      this.slotByUrl.delete(this.cards[s]!.url);
    }
    this.removed += out.length;
    this.version++;
    return out;
  }

  /**
   * One flag per site-domain number: 1 where `matches(domain)`. Filters test
   * `mask[index.siteIds[slot]]` instead of comparing strings per article.
   */
  domainMask(matches: (domain: string) => boolean): Uint8Array {
    return Uint8Array.from(this.domains, (d) => (matches(d) ? 1 : 0));
  }

  /**
   * Hybrid retrieval: cosine similarity over every vector (one contiguous scan) and BM25F over
   * the postings of the query terms, each normalised over its own top candidates (see
   * {@link Fusion}), then `w * vector + (1 - w) * lexical`. Returns the best `k`, best first;
   * `score` is in [0, 1] (z-scores are mapped through a logistic).
   */
  hybrid(query: QueryRep, { k, allow, fusion = FUSION_V2, cos: given }: HybridOptions): Candidate[] {
    const n = this.cards.length;
    if (n === 0 || k <= 0) return [];
    if (this.removed > 0) {
      const dead = this.deadSlots, inner = allow;
      allow = inner ? (s) => dead[s] !== 1 && inner(s) : (s) => dead[s] !== 1;
    }
    const side = Math.max(k, MIN_SIDE_CANDIDATES);
    const hasVector = query.vector !== null && query.vector.some((x) => x !== 0);
    const cos = given ?? this.cosines(query.vector, hasVector);

    const vecTop = new TopK(hasVector ? side : 0);
    if (hasVector) {
      if (allow) { for (let s = 0; s < n; s++) cos[s]! > vecTop.floor && allow(s) && vecTop.push(s, cos[s]!); }
      else for (let s = 0; s < n; s++) if (cos[s]! > vecTop.floor) vecTop.push(s, cos[s]!);
    }
    const vecList = vecTop.drain();

    const lex = query.lexical ?? this.bm25.score(query.bag, allow);
    const lexTop = new TopK(side);
    if (query.lexical && allow) {
      for (let i = 0; i < lex.slots.length; i++) allow(lex.slots[i]!) && lexTop.push(lex.slots[i]!, lex.scores[i]!);
    } else for (let i = 0; i < lex.slots.length; i++) lexTop.push(lex.slots[i]!, lex.scores[i]!);
    const lexList = lexTop.drain();
    const lexScore = new Map<number, number>();
    for (const e of lexList) lexScore.set(e.id, e.score);

    const lexMax = lexList[0]?.score ?? 0;
    const wVec = !hasVector ? 0 : lexMax === 0 ? 1 : fusion.vectorWeight;
    const wLex = 1 - wVec;
    const vecScale = scaleOf(vecList, fusion.normalise, true);
    const lexScale = scaleOf(lexList, fusion.normalise, false);

    const out: Candidate[] = [];
    const seen = new Set<number>();
    const consider = (slot: number) => {
      if (seen.has(slot)) return;
      seen.add(slot);
      const c = hasVector ? cos[slot]! : 0;
      const b = lexScore.get(slot) ?? 0;
      const score = wVec * (hasVector ? vecScale(c) : 0) + wLex * lexScale(b);
      if (score > 0) out.push({ slot, score, bm25: b, cosine: c });
    };
    for (const e of vecList) consider(e.id);
    for (const e of lexList) consider(e.id);
    out.sort((a, b) => b.score - a.score || a.slot - b.slot);
    return out.slice(0, k);
  }

  /**
   * Cosine of every slot with the query (zeros without a vector). With `removeCommonDirection`,
   * the cosine of the two vectors with their component along the common direction taken out (see
   * {@link VectorIndex}). The array is shared scratch space valid until the next scan of this
   * index: use it synchronously, never across an await.
   */
  cosines(vector: Float32Array | null, hasVector = vector !== null): Float32Array {
    return this.vectors.scan(hasVector ? vector : null, this.cards.length);
  }
}

/** Maps one side's raw scores onto [0, 1] from its top candidates (best first). */
function scaleOf(list: { score: number }[], how: Fusion["normalise"], isCosine: boolean): (x: number) => number {
  if (list.length === 0) return () => 0;
  const max = list[0]!.score;
  if (how === "zscore") {
    let sum = 0, sq = 0;
    for (const e of list) sum += e.score, sq += e.score * e.score;
    const mean = sum / list.length;
    const sd = Math.sqrt(Math.max(0, sq / list.length - mean * mean)) || 1;
    // A logistic keeps the score in (0, 1); candidates below the side's mean fade toward 0.
    return (x) => (x === 0 && !isCosine ? 0 : 1 / (1 + Math.exp(-(x - mean) / sd)));
  }
  if (!isCosine) return (x) => (max > 0 ? x / max : 0);
  const floor = Math.max(0, Math.min(list.at(-1)!.score, max - 1e-6));
  return (x) => (max > floor ? Math.min(1, Math.max(0, (x - floor) / (max - floor))) : 0);
}
