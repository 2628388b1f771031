/**
 * The search engine as the app holds it: a thin facade over the room's parts, so routes and
 * composition see one object. The index registry ({@link IndexRegistry}: building, following the
 * change log, shards), ingestion ({@link ArticleIngest}), recommendations ({@link Recommender})
 * and answer retrieval ({@link Retriever}) each live in their own module; tests and tools reach
 * the registry's own methods (follow stats, adopting an index, waiting for changes) through
 * {@link SearchEngine.registry}.
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { DataModel } from "../store/mod.ts";
import type { Article, ArticleRepo } from "./store/articles.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import type { DataModelIndex, QueryRep } from "./index/index.ts";
import { DEFAULT_VECTOR_WEIGHT, type Fusion } from "./rank/retrieval_mode.ts";
import { directLinks, type LinkBuilder, type QuerySource, type RecentQueryLog, type UrlAnalyzer } from "./ports.ts";
import type { SearchShard } from "./index/shard.ts";
import type { RetrievedArticle, SearchContext, SearchRequest, SearchResponse, SearchService } from "./types.ts";
import { type EmbedSafely, embedSafely } from "./embed.ts";
import { IndexRegistry } from "./registry.ts";
import { ArticleIngest, type IngestReport } from "./ingest.ts";
import { Recommender, type ServedResults } from "./recommend.ts";
import { Retriever } from "./retrieve.ts";
import { type CategoryCount, CategoryCounts } from "./categories.ts";
import { queryRep } from "./query.ts";
import { liveSince } from "./store/retention.ts";

export { MAX_LISTED_CATEGORIES } from "./categories.ts";
export type { CategoryCount } from "./categories.ts";
export { MAX_INGEST_ITEMS } from "./ingest.ts";
export type { IngestItemResult, IngestReport } from "./ingest.ts";
export { domainMatches, isUrlQuery, refDomain } from "./recommend.ts";
export type { ServedResults } from "./recommend.ts";
export type { IndexFollowing } from "./registry.ts";
export { liveSince } from "./store/retention.ts";
export { fullText, mayReadFullText } from "./text/full_text.ts";
export type { BodyText } from "./text/full_text.ts";

/** Article ingestion and index lifecycle, as the ingest route and admin commands see it. */
export interface ArticleService {
  /** Validates, stores (idempotent on URL) and indexes up to {@link MAX_INGEST_ITEMS} items. */
  ingest(dataModel: DataModel, items: unknown[]): Promise<IngestReport>;
  /** Loads the embedding provider and builds every data model's index from KV. */
  start(): Promise<void>;
  /** Articles in the index of a data model (loads it when needed), those past retention included until the sweep. */
  count(dataModelId: string): Promise<number>;
  /** Articles a data model serves now: those in its index within its retention (see {@link liveSince}). */
  countServed(dataModelId: string): Promise<number>;
  /** The stored article of a URL (canonical form), or null. */
  articleByUrl(dataModelId: string, url: string): Promise<Article | null>;
  /** The most used categories of a data model's live articles, most used first. */
  topCategories(dataModelId: string, limit?: number): Promise<CategoryCount[]>;
  /** Retention in KV and this process's index (see {@link IndexRegistry.expire}). */
  expire(dataModelId: string, cutoffUnix: number): Promise<number>;
  /** Trims a data model's article change log (see {@link IndexRegistry.trimChanges}). */
  trimChanges(dataModelId: string): Promise<number>;
}

/** Article search as the app holds it: recommendations and retrieval, ingest, the index lifecycle. */
export interface Search extends SearchService, ArticleService {
  /** Follows the writes of other processes (polls the change-log heads, applies their changes). */
  watch(options?: { intervalMs?: number }): void;
  /** Stops watching. */
  close(): Promise<void>;
  /** Whether this process indexes a data model (`SEARCH_SHARD`); absent: every one. */
  serves?(dataModelId: string): boolean;
}

/** What the engine is built from. */
export interface SearchEngineOptions {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  embeddings: EmbeddingProvider;
  links?: LinkBuilder;
  urlAnalyzer?: UrlAnalyzer;
  /** Query events from analytics; the engine's own in-memory log is used when absent. */
  querySource?: QuerySource;
  /** Vector weight of the default ranking version (`SEARCH_VECTOR_WEIGHT`); 0.15 when absent. */
  vectorWeight?: number;
  /** Told of every page of results served (analytics records them as impressions). */
  onResults?: (served: ServedResults) => void;
  /** The data models this process indexes (`SEARCH_SHARD`); all when absent. */
  shard?: SearchShard | null;
  /**
   * Data model records, for retention in answer retrieval and category counts; without them both
   * keep every article.
   */
  dataModels?: { get(id: string): Promise<Pick<DataModel, "maxAgeDays"> | null> };
}

/**
 * The search engine: article storage, per-data-model in-memory indexes (built from KV at start,
 * updated on ingest), the four recommendation algorithms with the `ref` quota and paging, and
 * hybrid retrieval for the answer engine.
 */
export class SearchEngine implements Search {
  /** The indexes of this process: building, following the change log, shards. */
  readonly registry: IndexRegistry;
  readonly articles: ArticleRepo;
  readonly queryLog: RecentQueryLog;
  readonly #embed: EmbedSafely;
  readonly #ingest: ArticleIngest;
  readonly #recommender: Recommender;
  readonly #retriever: Retriever;
  readonly #categories = new CategoryCounts();
  readonly #options: SearchEngineOptions;

  constructor(options: SearchEngineOptions) {
    this.#options = options;
    const { kv, clock, log, embeddings } = options;
    const embed = this.#embed = embedSafely(embeddings, log);
    const vectorWeight = this.vectorWeight;
    this.registry = new IndexRegistry({ kv, clock, log, embeddings, embed, shard: options.shard });
    this.articles = this.registry.articles;
    this.#ingest = new ArticleIngest(this.registry, { clock, log, embeddings, embed });
    this.#recommender = new Recommender(this.registry, {
      clock,
      log,
      embed,
      links: options.links ?? directLinks,
      urlAnalyzer: options.urlAnalyzer,
      querySource: options.querySource,
      vectorWeight,
      onResults: options.onResults,
    });
    this.queryLog = this.#recommender.queryLog;
    const dataModels = options.dataModels;
    this.#retriever = new Retriever(this.registry, {
      clock,
      embed,
      vectorWeight,
      ...(dataModels ? { dataModel: (id: string) => dataModels.get(id) } : {}),
    });
  }

  /** Vector weight of the default ranking version. */
  get vectorWeight(): number {
    return this.#options.vectorWeight ?? DEFAULT_VECTOR_WEIGHT;
  }

  get embeddings(): EmbeddingProvider {
    return this.#options.embeddings;
  }

  start(): Promise<void> {
    return this.registry.start();
  }

  watch(options?: { intervalMs?: number }): void {
    this.registry.watch(options);
  }

  close(): Promise<void> {
    return this.registry.close();
  }

  serves(dataModelId: string): boolean {
    return this.registry.serves(dataModelId);
  }

  articleByUrl(dataModelId: string, url: string): Promise<Article | null> {
    return this.articles.getByUrl(dataModelId, url);
  }

  async count(dataModelId: string): Promise<number> {
    return (await this.registry.index(dataModelId)).liveCount;
  }

  async countServed(dataModelId: string): Promise<number> {
    const index = await this.registry.index(dataModelId);
    const dataModel = await this.#options.dataModels?.get(dataModelId);
    const since = dataModel ? liveSince(dataModel, this.#options.clock) : undefined;
    if (since === undefined) return index.liveCount;
    // The rankings' rule (removed slots have a publication time of -Infinity, never counted).
    let served = 0;
    for (let s = 0; s < index.size; s++) if (index.pubdates[s]! >= since) served++;
    return served;
  }

  async topCategories(dataModelId: string, limit = 20): Promise<CategoryCount[]> {
    // Retention: articles past the model's max age stop counting at once, as they leave search.
    const dataModel = await this.#options.dataModels?.get(dataModelId);
    const since = dataModel ? liveSince(dataModel, this.#options.clock) : undefined;
    return this.#categories.top(await this.registry.index(dataModelId), limit, since);
  }

  expire(dataModelId: string, cutoffUnix: number): Promise<number> {
    return this.registry.expire(dataModelId, cutoffUnix);
  }

  trimChanges(dataModelId: string): Promise<number> {
    return this.registry.trimChanges(dataModelId);
  }

  ingest(dataModel: DataModel, items: unknown[]): Promise<IngestReport> {
    return this.#ingest.ingest(dataModel, items);
  }

  recommend(dataModel: DataModel, request: SearchRequest, context: SearchContext): Promise<SearchResponse> {
    return this.#recommender.recommend(dataModel, request, context);
  }

  retrieve(dataModelIds: string[], query: string, options: { k?: number } = {}): Promise<RetrievedArticle[]> {
    return this.#retriever.retrieve(dataModelIds, query, options);
  }

  /** Query text in an index's query form (see {@link queryRep}); for benchmarks and tools. */
  queryRep(
    index: DataModelIndex,
    text: string,
    options: { page?: boolean; fusion?: Fusion; pool?: number } = {},
  ): Promise<QueryRep> {
    return queryRep(index, text, this.#embed, options);
  }
}
