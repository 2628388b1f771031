import type { Article } from "./articles.ts";
import { Bm25Index } from "./bm25.ts";
import { terms } from "./tokenizer.ts";
import { TopK } from "./topk.ts";
import { VectorIndex } from "./vector_index.ts";

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
  /** Weight of the vector side in [0, 1]; the lexical side gets the rest. */
  alpha?: number;
  /** Cosines already computed by {@link DataModelIndex.cosines} for this query (saves a scan). */
  cos?: Float32Array;
}

/** Default weight of vector similarity in the hybrid score (tuned with `deno task eval`). */
export const DEFAULT_ALPHA = 0.5;
// Each side contributes at least this many candidates, so normalisation sees a stable spread.
const MIN_SIDE_CANDIDATES = 50;
const BODY_INDEX_CHARS = 6000;

/** The BM25 bag of an article: title counted twice (it names the topic), summary, body opening. */
export function articleBag(a: Pick<Article, "title" | "summary" | "body">): Map<string, number> {
  const bag = Bm25Index.bag(terms(a.title), new Map(), 2);
  Bm25Index.bag(terms(a.summary), bag);
  Bm25Index.bag(terms(a.body.slice(0, BODY_INDEX_CHARS)), bag);
  return bag;
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
  readonly bm25 = new Bm25Index();
  readonly vectors: VectorIndex;
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

  constructor(dataModelId: string, dims: number) {
    this.dataModelId = dataModelId;
    this.vectors = new VectorIndex(dims);
  }

  /** Number of articles. */
  get size(): number {
    return this.cards.length;
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
    this.version++;
    return slot;
  }

  /**
   * One flag per site-domain number: 1 where `matches(domain)`. Filters test
   * `mask[index.siteIds[slot]]` instead of comparing strings per article.
   */
  domainMask(matches: (domain: string) => boolean): Uint8Array {
    return Uint8Array.from(this.domains, (d) => (matches(d) ? 1 : 0));
  }

  /**
   * Hybrid retrieval: cosine similarity over every vector (one contiguous scan) and BM25 over
   * the postings of the query terms, each min-max normalised over its own top candidates, then
   * `alpha * vector + (1 - alpha) * lexical`. Returns the best `k`, best first.
   */
  hybrid(query: QueryRep, { k, allow, alpha = DEFAULT_ALPHA, cos: given }: HybridOptions): Candidate[] {
    const n = this.cards.length;
    if (n === 0 || k <= 0) return [];
    const side = Math.max(k, MIN_SIDE_CANDIDATES);
    const hasVector = query.vector !== null && query.vector.some((x) => x !== 0);
    const cos = given ?? this.cosines(query.vector, hasVector);

    const vecTop = new TopK(hasVector ? side : 0);
    if (hasVector) {
      if (allow) { for (let s = 0; s < n; s++) cos[s]! > vecTop.floor && allow(s) && vecTop.push(s, cos[s]!); }
      else for (let s = 0; s < n; s++) if (cos[s]! > vecTop.floor) vecTop.push(s, cos[s]!);
    }
    const vecList = vecTop.drain();

    const lex = this.bm25.score(query.bag, allow);
    const lexTop = new TopK(side);
    for (let i = 0; i < lex.slots.length; i++) lexTop.push(lex.slots[i]!, lex.scores[i]!);
    const lexList = lexTop.drain();
    const lexScore = new Map<number, number>();
    for (const e of lexList) lexScore.set(e.id, e.score);

    const cosMax = vecList[0]?.score ?? 0;
    const cosFloor = Math.max(0, Math.min(vecList.at(-1)?.score ?? 0, cosMax - 1e-6));
    const lexMax = lexList[0]?.score ?? 0;
    const wVec = !hasVector ? 0 : lexMax === 0 ? 1 : alpha;
    const wLex = 1 - wVec;

    const out: Candidate[] = [];
    const seen = new Set<number>();
    const consider = (slot: number) => {
      if (seen.has(slot)) return;
      seen.add(slot);
      const c = hasVector ? cos[slot]! : 0;
      const b = lexScore.get(slot) ?? 0;
      const vn = hasVector && cosMax > cosFloor ? Math.min(1, Math.max(0, (c - cosFloor) / (cosMax - cosFloor))) : 0;
      const ln = lexMax > 0 ? b / lexMax : 0;
      const score = wVec * vn + wLex * ln;
      if (score > 0) out.push({ slot, score, bm25: b, cosine: c });
    };
    for (const e of vecList) consider(e.id);
    for (const e of lexList) consider(e.id);
    out.sort((a, b) => b.score - a.score || a.slot - b.slot);
    return out.slice(0, k);
  }

  /**
   * Cosine of every slot with the query (zeros without a vector). The array is shared scratch
   * space valid until the next scan of this index: use it synchronously, never across an await.
   */
  cosines(vector: Float32Array | null, hasVector = vector !== null): Float32Array {
    return this.vectors.scan(hasVector ? vector : null, this.cards.length);
  }
}
