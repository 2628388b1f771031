import { type Article, categoryKey, type StoredTerms } from "../store/articles.ts";
import { type Bm25Field, Bm25Index, type PackedBag, type TermCounts } from "./bm25.ts";
import { ForwardTerms, type TermFeedback, termFeedbackOn } from "../rank/feedback.ts";
import { type Fusion, FUSION_V2 } from "../rank/retrieval_mode.ts";
import { regularizationOn, regularizeScores } from "../rank/regularize.ts";
import { terms } from "../text/tokenizer.ts";
import { TopK } from "./topk.ts";
import { l2norm, VectorIndex } from "./vector_index.ts";
import { IvfIndex, type IvfShape, ivfShape, ROWS_PER_SLICE } from "./ivf.ts";

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
  /** Category keys (see {@link categoryKey}), for filters; absent without categories. */
  categoryKeys?: string[];
  /** Categories as published, for listings. */
  categories?: string[];
}

/** A query as the index sees it: a weighted bag of terms and an optional normalised vector. */
export interface QueryRep {
  bag: Map<string, number>;
  vector: Float32Array | null;
  /**
   * The best `k` BM25F matches of `bag` over the whole index, best first, when already computed
   * (by {@link DataModelIndex.withFeedback}); a ranking without a prefilter that needs at most
   * `k` takes them instead of scoring again.
   */
  lexical?: LexicalTop;
  /** The terms as asked, when term feedback expanded `bag` (see {@link DataModelIndex.withTermFeedback}). */
  asked?: Map<string, number>;
}

/** The best `k` lexical matches of a query (fewer when fewer match), best first. */
export interface LexicalTop {
  k: number;
  slots: Int32Array;
  scores: Float32Array;
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
/**
 * Terms kept per article when an index is made for term feedback (see {@link ForwardTerms}): its
 * most frequent ones, 6 bytes each per slot (a million articles: 192 MB). The service's indexes
 * keep none: term feedback is not in the default ranking.
 */
export const FORWARD_TERMS_PER_DOC = 32;
/**
 * Rows from which an index answers the vector side of a ranking from an IVF index (the rows of
 * the query's nearest clusters) instead of a scan of every row. At 100,000 articles it already
 * takes `semantic` from 2.2 to 0.8 ms with the same top 9 (bench/search_100k.ts); small indexes,
 * like the relevance collections in the repo, keep the exact scan (docs/relevance.md).
 */
export const ANN_MIN_ROWS = 65_536;

/** When and how an index uses an approximate vector side (see {@link IvfIndex}). */
export interface AnnOptions {
  /** Rows from which it is built and used ({@link ANN_MIN_ROWS} by default). */
  minRows?: number;
  /** Its shape; {@link ivfShape} of the rows at each build by default. */
  shape?: (rows: number) => IvfShape;
}

/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
// Each side contributes at least this many candidates, so normalisation sees a stable spread.
const MIN_SIDE_CANDIDATES = 50;
const BODY_INDEX_CHARS = 6000;
// The common direction is recomputed when the index has grown by this factor since.
const DIRECTION_REGROWTH = 2;
const DIRECTION_MIN_ROWS = 16;
// The direction is estimated from at most this many rows: a shared property of the embedding
// space, as well estimated from a quarter million articles as from all of them, at a fraction of
// the power iteration's cost at a million.
const DIRECTION_SAMPLE_ROWS = 262_144;
// Retired slots are compacted (their postings dropped, the slots reused) once they are this
// many and this share of all slots: one pass over every posting per 1/8 of the index replaced.
const COMPACT_MIN_RETIRED = 64;
const COMPACT_SHARE = 1 / 8;
/** What a retired slot shows until it is reused (no strings of the article it held stay alive). */
const RETIRED_CARD: ArticleCard = Object.freeze({
  id: "",
  url: "",
  title: "",
  site: "",
  siteDomain: "",
  pubdate: "",
  pubdateUnix: -Infinity,
  previewContent: "",
  summary: "",
});

/** The BM25F terms of an article: frequencies in its title, summary and body opening. */
export function articleBag(a: Pick<Article, "title" | "summary" | "body">): PackedBag {
  return Bm25Index.packedBag([terms(a.title), terms(a.summary), terms(a.body.slice(0, BODY_INDEX_CHARS))]);
}

/**
 * Version of {@link StoredTerms}: bump it when the tokeniser, stemmer, stopwords, the fields or
 * {@link BODY_INDEX_CHARS} change, and every build tokenises again instead of reading them.
 */
export const TERMS_VERSION = 1;
// Stored terms are left out of an article whose value might then pass KV's 64 KiB (strings
// counted at two bytes a character); its build tokenises it instead.
const MAX_VALUE_BYTES = 60_000;

/**
 * The terms of an article to store with it, or undefined when the value would grow too large.
 * Frequencies are written in the platform's byte order (little-endian on x86 and ARM).
 */
export function storableTerms(
  a: Pick<Article, "title" | "summary" | "body" | "previewContent" | "url" | "markdown">,
  bag: PackedBag,
): StoredTerms | undefined {
  const t = bag.terms.join(" ");
  const bytes = 2 * (a.title.length + a.summary.length + a.body.length + a.previewContent.length + a.url.length +
        t.length + (a.markdown?.length ?? 0)) +
    bag.tfs.byteLength + 4096;
  if (bytes > MAX_VALUE_BYTES) return undefined;
  return { v: TERMS_VERSION, t, f: new Uint8Array(bag.tfs.buffer, bag.tfs.byteOffset, bag.tfs.byteLength) };
}

/** The BM25F terms of a stored article: read from its stored terms when current, else tokenised. */
export function bagOf(a: Article): PackedBag {
  const stored = a.terms;
  if (!stored || stored.v !== TERMS_VERSION) return articleBag(a);
  const terms = stored.t === "" ? [] : stored.t.split(" ");
  const bytes = stored.f.byteOffset % 2 === 0 ? stored.f : stored.f.slice();
  const tfs = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
  return tfs.length === terms.length * ARTICLE_FIELDS.length ? { terms, tfs } : articleBag(a);
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
    ...(a.categories?.length ? { categories: a.categories, categoryKeys: a.categories.map(categoryKey) } : {}),
  };
}

/**
 * The in-memory index of one data model: cards, BM25 postings, normalised vectors and
 * publication times in slot order. One slot per article URL; a changed or removed article's slot
 * is retired and, after the next compaction, reused.
 */
export class DataModelIndex {
  readonly dataModelId: string;
  readonly bm25 = new Bm25Index({ k1: BM25_K1, fields: ARTICLE_FIELDS });
  readonly vectors: VectorIndex;
  /** Each slot's most frequent terms, for term feedback; null when built without them. */
  readonly forward: ForwardTerms | null;
  /** Whether cosines are taken with the vectors' common direction removed (see {@link cosines}). */
  readonly removeCommonDirection: boolean;
  private directionRows = 0;
  /** While loading in bulk, the direction is computed once at the end (see {@link bulkLoad}). */
  private loading = false;
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
  /** Slots that hold no article: retired (postings not yet dropped) or free for reuse. */
  private removed = 0;
  /** Slots compacted and free, reused before new ones are appended. */
  private free: number[] = [];
  /** 1 per slot that holds no article: {@link hybrid} never returns one, whatever the fusion makes of a zero cosine. */
  private deadSlots = new Uint8Array(1024);
  /** How many compactions ran (observability and tests). */
  compactions = 0;
  private readonly annOptions: Required<AnnOptions> | null;
  /** The approximate vector side, once built (see {@link rankingCosines}). */
  private ann: IvfIndex | null = null;
  /** A build under way, and the slots changed since it started (filed again when it ends). */
  private annBuild: Promise<void> | null = null;
  private annTouched: Set<number> | null = null;
  /** The scratch array {@link rankingCosines} handed out without a scan, for {@link hybrid} to recognise. */
  private annCos: Float32Array | null = null;
  /** ANN builds finished and the last one's wall time (observability, benchmarks). */
  annBuilds = 0;
  annBuildMs = 0;

  /**
   * @param removeCommonDirection take the vectors' first principal component out of every
   * cosine (for averaged word vectors, which all lean one way; see {@link cosines})
   * @param exactVectors keep vectors that do not come from int8 storage in f32 too (relevance
   * evaluations over raw embeddings); the service's vectors always come from storage
   * @param forwardTerms terms kept per article for term feedback (0, the default: none, feedback off;
   * {@link FORWARD_TERMS_PER_DOC} to measure it)
   * @param ann when to answer the vector side from an IVF index (null: always the exact scan)
   */
  constructor(
    dataModelId: string,
    dims: number,
    { removeCommonDirection = false, exactVectors = false, forwardTerms = 0, ann = {} as AnnOptions | null } = {},
  ) {
    this.annOptions = ann === null ? null : { minRows: ann.minRows ?? ANN_MIN_ROWS, shape: ann.shape ?? ivfShape };
    this.dataModelId = dataModelId;
    this.forward = forwardTerms > 0 ? new ForwardTerms(forwardTerms) : null;
    this.vectors = new VectorIndex(dims, 1024, { keepFloats: exactVectors });
    this.removeCommonDirection = removeCommonDirection;
  }

  /** Number of slots (live articles and removed ones not yet reused). */
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
   * Adds or replaces an article. A replaced article's slot is retired (see {@link removeSlots})
   * and the new version takes a free slot, so replacing needs neither the previous version nor
   * its terms. `bag` may be passed when already computed (or stored with the article).
   * @returns the article's slot
   */
  upsert(article: Article, vector: Float32Array | null, bag: TermCounts | PackedBag = articleBag(article)): number {
    const old = this.slotByUrl.get(article.url);
    if (old !== undefined) this.retire(old);
    let slot = this.free.pop();
    if (slot !== undefined) {
      this.deadSlots[slot] = 0;
      this.removed--;
    } else {
      slot = this.cards.length;
      if (slot >= this.pubdates.length) this.growSlots();
    }
    this.slotByUrl.set(article.url, slot);
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
    this.forward?.set(slot, bag, ARTICLE_FIELDS, this.bm25);
    this.vectors.set(slot, vector);
    this.annChanged(slot);
    if (this.removeCommonDirection && !this.loading) this.trackDirection();
    if (!this.loading) this.buildAnnWhenDue();
    this.version++;
    this.compactWhenDue();
    return slot;
  }

  private growSlots(): void {
    const cap = this.pubdates.length * 2;
    const pub = new Float64Array(cap);
    pub.set(this.pubdates);
    this.pubdates = pub;
    const ids = new Int32Array(cap);
    ids.set(this.siteIds);
    this.siteIds = ids;
    const dead = new Uint8Array(cap);
    dead.set(this.deadSlots);
    this.deadSlots = dead;
  }

  // The direction is recomputed (from the first rows, up to DIRECTION_SAMPLE_ROWS) whenever the
  // index has doubled since it was last computed (amortised O(1) per article); the vector index
  // keeps each row's component along it.
  private trackDirection(force = false): void {
    const n = this.cards.length;
    if (n >= DIRECTION_MIN_ROWS && (force || n >= this.directionRows * DIRECTION_REGROWTH)) {
      const direction = this.vectors.principalDirection(Math.min(n, DIRECTION_SAMPLE_ROWS));
      this.vectors.setDirection(direction, n);
      this.ann?.setDirection(direction);
      this.direction = direction;
      this.directionRows = n;
    }
  }

  private direction: Float32Array | null = null;

  // A changed row reaches the ANN, and a build under way files it again when it ends.
  private annChanged(slot: number): void {
    this.ann?.update(slot);
    this.annTouched?.add(slot);
  }

  // Starts a build (in the background: searches take the exact scan or the previous ANN until
  // it ends) when the index has reached the size for one, doubled since the last, or has many holes.
  private buildAnnWhenDue(): void {
    const o = this.annOptions, n = this.cards.length;
    if (!o || this.annBuild || n < o.minRows || n === 0) return;
    if (this.ann && !this.ann.stale(n)) return;
    this.annBuild = this.buildAnn(o).finally(() => (this.annBuild = null));
  }

  private async buildAnn(o: Required<AnnOptions>): Promise<void> {
    const started = performance.now();
    const n = this.cards.length, direction = this.direction;
    const touched = this.annTouched = new Set();
    try {
      const ivf = await IvfIndex.build(this.vectors, n, direction, o.shape(n));
      // What changed or was appended while it was built, in slices while many (more may come meanwhile).
      for (;;) {
        const batch = [...touched];
        touched.clear();
        if (batch.length <= ROWS_PER_SLICE) {
          for (const slot of batch) ivf.update(slot);
          break;
        }
        for (let i = 0; i < batch.length; i++) {
          ivf.update(batch[i]!);
          if (i % ROWS_PER_SLICE === ROWS_PER_SLICE - 1) await new Promise((r) => setTimeout(r, 0));
        }
      }
      if (this.direction !== direction) ivf.setDirection(this.direction);
      this.ann = ivf;
      this.annBuilds++;
      this.annBuildMs = performance.now() - started;
    } finally {
      this.annTouched = null;
    }
  }

  /**
   * Resolves once the ANN is built where one is due (after a bulk load or growth the build runs
   * in the background); at once for an index without one.
   */
  async annReady(): Promise<void> {
    this.buildAnnWhenDue();
    while (this.annBuild) await this.annBuild;
  }

  /** The ANN in use: its shape, rows and bytes; null while the exact scan answers. */
  get annStatus(): { lists: number; probes: number; rows: number; bytes: number } | null {
    const a = this.ann;
    return a && this.annUsable() ? { lists: a.lists, probes: a.probes, rows: a.rows, bytes: a.bytes } : null;
  }

  /** The IVF index itself (benchmarks tune its probes); null before the first build. */
  get ivf(): IvfIndex | null {
    return this.ann;
  }

  private annUsable(): boolean {
    return this.ann !== null && this.annOptions !== null && this.cards.length >= this.annOptions.minRows;
  }

  /**
   * Runs `load` (many upserts, e.g. a build from KV) with the common direction computed once at
   * the end instead of each time the index doubles.
   */
  async bulkLoad<T>(load: () => Promise<T>): Promise<T> {
    this.loading = true;
    try {
      return await load();
    } finally {
      this.loading = false;
      if (this.removeCommonDirection) this.trackDirection(true);
      this.buildAnnWhenDue();
    }
  }

  /**
   * The query vector moved toward the mean vector of its best `docs` BM25 matches (vector
   * pseudo-relevance feedback): a short query borrows the vocabulary of the articles its words
   * find. Unchanged without a vector, without lexical matches or with feedback off. The lexical
   * matches travel with the query: at least `pool` of them (the candidates a ranking will take).
   */
  withFeedback(query: QueryRep, docs: number, weight: number, { pool = 0 }: { pool?: number } = {}): QueryRep {
    if (!query.vector || docs <= 0 || weight <= 0) return query;
    // Enough matches for the ranking that follows too (see hybrid), in the same pass.
    const k = Math.max(docs, MIN_SIDE_CANDIDATES, pool);
    const lexical = query.lexical && query.lexical.k >= k ? query.lexical : this.lexicalTop(query.bag, k);
    const best = Math.min(docs, lexical.slots.length);
    if (best === 0) return { ...query, lexical };
    const v = Float32Array.from(query.vector);
    for (let i = 0; i < best; i++) {
      const row = this.vectors.row(lexical.slots[i]!);
      for (let j = 0; j < v.length; j++) v[j]! += (weight / best) * row[j]!;
    }
    const n = l2norm(v);
    if (n === 0) return { ...query, lexical };
    for (let j = 0; j < v.length; j++) v[j]! /= n;
    return { ...query, vector: v, lexical };
  }

  /**
   * The query expanded by term feedback (RM3, see {@link ForwardTerms.expand}) from its best
   * BM25F matches, with the lexical matches of the expanded query (at least `pool`): from a second
   * full pass, or (`rerank` > 0) the first pass's best re-scored by the expanded query. Unchanged
   * with feedback off, without a forward store or without lexical matches.
   */
  withTermFeedback(
    query: QueryRep,
    feedback: TermFeedback | undefined,
    { pool = 0 }: { pool?: number } = {},
  ): QueryRep {
    if (!termFeedbackOn(feedback) || !this.forward || query.bag.size === 0) return query;
    const k = Math.max(feedback.docs, MIN_SIDE_CANDIDATES, pool);
    const firstK = feedback.rerank > 0 ? Math.max(k, feedback.rerank) : feedback.docs;
    const first = query.lexical && query.lexical.k >= firstK ? query.lexical : this.lexicalTop(query.bag, firstK);
    const bag = this.forward.expand(query.bag, first.slots, first.scores, this.bm25, feedback);
    if (bag === query.bag) return { ...query, lexical: first.k >= k ? first : undefined };
    if (feedback.rerank <= 0) return { bag, vector: query.vector, lexical: this.lexicalTop(bag, k), asked: query.bag };
    const scores = this.bm25.scoreSlots(bag, first.slots);
    const order = Array.from(first.slots.keys()).sort((a, b) =>
      scores[b]! - scores[a]! || first.slots[a]! - first.slots[b]!
    );
    const slots = Int32Array.from(order, (i) => first.slots[i]!);
    return {
      bag,
      vector: query.vector,
      lexical: { k: first.k, slots, scores: Float32Array.from(order, (i) => scores[i]!) },
      asked: query.bag,
    };
  }

  /** The best `k` BM25F matches of a bag of terms, best first (see {@link Bm25Index.top}). */
  lexicalTop(bag: Map<string, number>, k: number, allow?: (slot: number) => boolean): LexicalTop {
    return { k, ...this.bm25.top(bag, k, allow) };
  }

  /**
   * Takes articles out of the index (retention, deletes and changes made by other processes).
   * Their slots keep no vector, a publication time of -Infinity and no live terms at once; their
   * postings are dropped and the slots reused at the next compaction (see {@link compact}).
   * @returns the cards removed
   */
  removeSlots(slots: Iterable<number>): ArticleCard[] {
    const out: ArticleCard[] = [];
    for (const s of slots) {
      const card = this.#liveCard(s);
      if (!card) continue;
      out.push(card);
      this.retire(s);
    }
    if (out.length > 0) this.compactWhenDue();
    return out;
  }

  /** The cards of the articles `slots` hold, leaving them in the index (those {@link removeSlots} would take). */
  liveCards(slots: Iterable<number>): ArticleCard[] {
    const out: ArticleCard[] = [];
    for (const s of slots) {
      const card = this.#liveCard(s);
      if (card) out.push(card);
    }
    return out;
  }

  #liveCard(s: number): ArticleCard | undefined {
    const card = this.cards[s];
    return card && this.deadSlots[s] !== 1 && this.slotByUrl.get(card.url) === s ? card : undefined;
  }

  /** Takes the article of a URL out of the index, when it holds that article (`id`). */
  removeArticle(url: string, id: string): ArticleCard | undefined {
    const slot = this.slotByUrl.get(url);
    if (slot === undefined || this.cards[slot]!.id !== id) return undefined;
    return this.removeSlots([slot])[0];
  }

  private retire(s: number): void {
    this.bm25.retire(s);
    this.forward?.clear(s);
    this.deadSlots[s] = 1;
    this.vectors.clear(s);
    this.annChanged(s);
    this.pubdates[s] = -Infinity;
    this.slotByUrl.delete(this.cards[s]!.url);
    this.cards[s] = RETIRED_CARD;
    this.removed++;
    this.version++;
  }

  private compactWhenDue(): void {
    const retired = this.bm25.retiredDocs;
    if (retired >= COMPACT_MIN_RETIRED && retired >= this.cards.length * COMPACT_SHARE) this.compact();
  }

  /**
   * Drops the postings of removed articles (one pass over all postings) and makes their slots
   * reusable, so an index whose articles are replaced or expire keeps its size.
   */
  compact(): void {
    const freed = this.bm25.compact();
    if (freed.length === 0) return;
    // Lowest slots last: pop() reuses them first.
    for (let i = freed.length - 1; i >= 0; i--) this.free.push(freed[i]!);
    this.compactions++;
    this.version++;
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
    const filtered = allow !== undefined;
    if (this.removed > 0) {
      const dead = this.deadSlots, inner = allow;
      allow = inner ? (s) => dead[s] !== 1 && inner(s) : (s) => dead[s] !== 1;
    }
    const side = Math.max(k, MIN_SIDE_CANDIDATES);
    const hasVector = query.vector !== null && query.vector.some((x) => x !== 0);
    const cos = given ?? this.rankingCosines(query.vector, hasVector);
    // The ANN's candidates, with exact cosines; other slots' cosines are computed as needed.
    let vecList = hasVector && cos === this.annCos ? this.annCandidates(query.vector!, side, allow, cos) : null;
    const approximate = vecList !== null;

    const vecTop = new TopK(hasVector ? side : 0);
    // Without a prefilter, the vector index selects from its block maxima (the same top k); a
    // removed slot among them (a zero cosine, very rarely that high) sends it to the full pass.
    if (!vecList) vecList = hasVector && !filtered ? this.vectors.best(cos, side) : null;
    if (vecList && this.removed > 0 && vecList.some((e) => this.deadSlots[e.id] === 1)) vecList = null;
    if (hasVector && !vecList) {
      // One pass over every cosine: most fail the floor test, kept in a local between pushes.
      let floor = vecTop.floor;
      for (let s = 0; s < n; s++) {
        const c = cos[s]!;
        if (c > floor && (!allow || allow(s))) {
          vecTop.push(s, c);
          floor = vecTop.floor;
        }
      }
    }
    vecList ??= vecTop.drain();

    // BM25F skips removed slots itself: only the caller's prefilter asks for a lexical pass of its own.
    const cached = query.lexical;
    const lex = cached && !filtered && cached.k >= side ? cached : this.lexicalTop(query.bag, side, allow);
    const lexList: { id: number; score: number }[] = [];
    const lexScore = new Map<number, number>();
    for (let i = 0; i < Math.min(side, lex.slots.length); i++) {
      lexList.push({ id: lex.slots[i]!, score: lex.scores[i]! });
      lexScore.set(lex.slots[i]!, lex.scores[i]!);
    }

    const lexMax = lexList[0]?.score ?? 0;
    const wVec = !hasVector ? 0 : lexMax === 0 ? 1 : fusion.vectorWeight;
    const wLex = 1 - wVec;
    const vecScale = scaleOf(vecList, fusion.normalise, true);
    const lexScale = scaleOf(lexList, fusion.normalise, false);

    if (approximate) {
      const known = new Set(vecList.map((e) => e.id));
      for (const e of lexList) if (!known.has(e.id)) cos[e.id] = this.vectors.cosine(e.id, query.vector!);
    }
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
    const reg = fusion.regularize;
    if (!regularizationOn(reg) || out.length < 2) return out.slice(0, k);
    // Score regularization: the first candidates smoothed toward their nearest neighbours' scores.
    const near = this.similarities(out.slice(0, Math.min(reg.top, out.length)).map((c) => c.slot), reg.termShare);
    return regularizeScores(out, near.cosines, reg, (i) => near.hasVector[i] === 1).slice(0, k);
  }

  /**
   * Cosines between the vectors of `slots`, row-major (`slots.length` squared), taken as the
   * ranking takes them: with the common direction removed from both (see {@link cosines}).
   * `hasVector[i]` is 0 for a slot without a vector (its cosines are 0).
   * @param termShare share of the cosine of the articles' stored terms in each similarity (see
   *   {@link ForwardTerms.cosines}; 0, or an index without stored terms: the vectors' cosine alone)
   */
  similarities(slots: readonly number[], termShare = 0): { cosines: Float32Array; hasVector: Uint8Array } {
    const m = slots.length, dims = this.vectors.dims, u = this.removeCommonDirection ? this.direction : null;
    // f64 rows: the pairwise loop below then multiplies without converting each element.
    const rows = new Float64Array(m * dims), hasVector = new Uint8Array(m);
    for (let i = 0; i < m; i++) {
      const row = this.vectors.row(slots[i]!);
      if (u) {
        let du = 0;
        for (let j = 0; j < dims; j++) du += row[j]! * u[j]!;
        for (let j = 0; j < dims; j++) row[j]! -= du * u[j]!;
      }
      const norm = l2norm(row);
      // A row (nearly) along the common direction has no direction of its own left.
      if (!(norm > 1e-3)) continue;
      hasVector[i] = 1;
      for (let j = 0; j < dims; j++) rows[i * dims + j] = row[j]! / norm;
    }
    const cosines = new Float32Array(m * m);
    for (let a = 0; a < m; a++) {
      if (hasVector[a] === 0) continue;
      cosines[a * m + a] = 1;
      const oa = a * dims;
      for (let b = a + 1; b < m; b++) {
        if (hasVector[b] === 0) continue;
        // Four running sums: independent additions the CPU can overlap (50 candidates: 1,225 pairs).
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0, j = 0;
        const ob = b * dims;
        for (; j + 3 < dims; j += 4) {
          s0 += rows[oa + j]! * rows[ob + j]!;
          s1 += rows[oa + j + 1]! * rows[ob + j + 1]!;
          s2 += rows[oa + j + 2]! * rows[ob + j + 2]!;
          s3 += rows[oa + j + 3]! * rows[ob + j + 3]!;
        }
        for (; j < dims; j++) s0 += rows[oa + j]! * rows[ob + j]!;
        cosines[a * m + b] = cosines[b * m + a] = s0 + s1 + s2 + s3;
      }
    }
    if (termShare > 0 && this.forward) {
      const byTerms = this.forward.cosines(slots, (id) => this.bm25.idfOf(id));
      for (let i = 0; i < m * m; i++) cosines[i] = (1 - termShare) * cosines[i]! + termShare * byTerms[i]!;
    }
    return { cosines, hasVector };
  }

  /**
   * Cosine of every slot with the query (zeros without a vector). With `removeCommonDirection`,
   * the cosine of the two vectors with their component along the common direction taken out (see
   * {@link VectorIndex}). The array is shared scratch space valid until the next scan of this
   * index: use it synchronously, never across an await.
   */
  cosines(vector: Float32Array | null, hasVector = vector !== null): Float32Array {
    this.annCos = null;
    return this.vectors.scan(hasVector ? vector : null, this.cards.length);
  }

  /**
   * The cosines a ranking reads ({@link hybrid} and what explains its results): those of
   * {@link cosines}, or, where the ANN answers the vector side, the same scratch array without a
   * scan, in which {@link hybrid} writes the cosines of the candidates it returns (every other
   * slot holds no meaningful value). Valid until the next scan: use it synchronously.
   */
  rankingCosines(vector: Float32Array | null, hasVector = vector !== null): Float32Array {
    if (!hasVector || !vector || !this.annUsable()) return this.cosines(vector, hasVector);
    const cos = this.vectors.scratch(this.cards.length);
    this.annCos = cos;
    return cos;
  }

  /**
   * Writes into `cos` (from {@link rankingCosines}) the cosines of `slots` where the ANN answered
   * and left them out: for what reads cosines of slots a ranking took from elsewhere (the
   * trending keywords' matches, an explanation). Nothing to do after a full scan.
   */
  ensureCosines(cos: Float32Array, slots: readonly number[], vector: Float32Array | null): void {
    if (cos !== this.annCos || !vector) return;
    for (const s of slots) cos[s] = this.vectors.cosine(s, vector);
  }

  // The vector side's `side` best from the ANN (allowed slots only), best first, their exact
  // cosines written into `cos`; null after a full scan into `cos` instead, when the ANN cannot
  // answer the query or its clusters hold fewer allowed rows than asked for (a narrow filter).
  private annCandidates(
    vector: Float32Array,
    side: number,
    allow: ((slot: number) => boolean) | undefined,
    cos: Float32Array,
  ): { id: number; score: number }[] | null {
    const found = this.ann!.search(vector, side, allow);
    if (!found || found.length < Math.min(side, this.liveCount)) {
      this.annCos = null;
      this.vectors.scan(vector, this.cards.length); // writes into the memory `cos` views
      return null;
    }
    this.vectors.scanPaths.ivf++;
    for (const e of found) e.score = cos[e.id] = this.vectors.cosine(e.id, vector);
    return found.sort((a, b) => b.score - a.score || a.id - b.id);
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
