import type { z } from "zod";
import type { Clock } from "../clock.ts";
import { timeSlicer } from "../timers.ts";
import { explainSlots } from "./rank/explain.ts";
import { filterPredicate, filtersOf } from "./rank/filters.ts";
import { boundedCache } from "../bounded_cache.ts";
import { type Highlight, highlightPage, highlightQuery, highlightQueryOfText } from "./rank/highlights.ts";
import { highlightOptionsOf, textOptionOf } from "./result_options.ts";
import { clipMarkdown, markupWithinLimits, stripTags, textToMarkdown } from "../text/markdown_text.ts";
import { fuseAcrossIndexes } from "./rank/fusion.ts";
import { AppError, fullTextNotLicensed } from "../errors.ts";
import { describeError, type Logger } from "../log.ts";
import type { DataModel } from "../store/models.ts";
import { ALGORITHMS, candidatePool, mergeRanked, type Ranked } from "./rank/algorithms.ts";
import {
  type Article,
  type ArticleInput,
  articleInputSchema,
  ArticleRepo,
  canonicalUrl,
  domainOf,
  embeddingText,
  normalizeArticle,
  type StoredEmbedding,
  type UpsertOutcome,
} from "./store/articles.ts";
import { Bm25Index } from "./index/bm25.ts";
import { type ArticleChange, CHANGE_LOG_RETENTION, ChangeLogTrimmed, headKey, headSeq } from "./store/change_log.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import { articleBag, type ArticleCard, bagOf, DataModelIndex, type QueryRep, storableTerms } from "./index/index.ts";
import {
  DEFAULT_VECTOR_WEIGHT,
  type Fusion,
  FUSION_V2,
  fusionForAlgorithm,
  retrievalFusion,
} from "./rank/retrieval_mode.ts";
import { directLinks, type LinkBuilder, type QuerySource, RecentQueryLog, type UrlAnalyzer } from "./ports.ts";
import { mergeTrends, signalKeywords, titleBursts, type TrendingKeyword } from "./rank/trending.ts";
import { outsideShard, type SearchShard, serves } from "./index/shard.ts";
import { terms } from "./text/tokenizer.ts";
import type {
  RetrievedArticle,
  SearchContext,
  SearchRequest,
  SearchResponse,
  SearchResult,
  SearchService,
} from "./types.ts";
import { dequantize, quantize } from "./index/vector_index.ts";

// Texts embedded per call during an ingest: small enough to yield between batches.
const INGEST_EMBED_BATCH = 64;
/** Most items one ingest call takes. */
export const MAX_INGEST_ITEMS = 1000;
const DEFAULT_TOP_K = 9;
const DEFAULT_PAGE = 1;
const DEFAULT_NUM_RESULTS = 10;
const MAX_QUERY_CHARS = 2000;
// Terms of an analysed page used as the lexical query: enough to name the topic, few enough to stay fast.
const PAGE_QUERY_TERMS = 30;
const TREND_CACHE_S = 300;
/** Most categories a data model lists. */
export const MAX_LISTED_CATEGORIES = 100;

/** Outcome of one ingested item. */
export interface IngestItemResult {
  index: number;
  status: "created" | "updated" | "error";
  id?: string;
  url?: string;
  error?: string;
}

/** Outcome of an ingest call. */
export interface IngestReport {
  received: number;
  created: number;
  updated: number;
  failed: number;
  results: IngestItemResult[];
}

/** Article ingestion and index lifecycle, as the ingest route and admin commands see it. */
export interface ArticleService {
  /** Validates, stores (idempotent on URL) and indexes up to {@link MAX_INGEST_ITEMS} items. */
  ingest(dataModel: DataModel, items: unknown[]): Promise<IngestReport>;
  /** Loads the embedding provider and builds every data model's index from KV. */
  start(): Promise<void>;
  /** Articles in the index of a data model (loads it when needed). */
  count(dataModelId: string): Promise<number>;
  /** The stored article of a URL (canonical form), or null. */
  articleByUrl(dataModelId: string, url: string): Promise<Article | null>;
  /** The most used categories of a data model's live articles, most used first. */
  topCategories(dataModelId: string, limit?: number): Promise<CategoryCount[]>;
  /** Retention in KV and this process's index (see {@link SearchEngine.expire}). */
  expire(dataModelId: string, cutoffUnix: number): Promise<number>;
  /** Trims a data model's article change log (see {@link SearchEngine.trimChanges}). */
  trimChanges(dataModelId: string): Promise<number>;
}

/** A category and how many live articles carry it. */
export interface CategoryCount {
  category: string;
  count: number;
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

/** How one data model's index follows KV in this process. */
export interface IndexFollowing {
  /** Full builds from KV (the first, and rebuilds when the change log no longer reached back). */
  builds: number;
  /** Changes made by other processes applied without rebuilding. */
  changesApplied: number;
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
}

/** A page of results served: who asked, in which data model, which articles at which positions. */
export interface ServedResults {
  tenantId: string;
  dataModelId: string;
  query: string;
  caller?: string;
  at: Date;
  results: { articleId: string; url: string; position: number }[];
}

// Characters of an item's `body_html` converted to Markdown (bounds the parse on the ingest path).
const MAX_HTML_CONVERTED = 100_000;

/**
 * Items that carry `body_html`, with it kept as `body_markdown` (and as the plain `body` when they
 * have none). The converter loads only when an item needs it.
 */
async function htmlBodies(items: unknown[]): Promise<Map<number, Record<string, unknown>>> {
  const out = new Map<number, Record<string, unknown>>();
  const withHtml = items.flatMap((item, i) => {
    const html = (item as { body_html?: unknown } | null)?.body_html;
    return typeof html === "string" && html.length <= 2_000_000 && html.trim() ? [{ i, html }] : [];
  });
  if (withHtml.length === 0) return out;
  const [{ htmlToMarkdown }, { htmlToText }] = await Promise.all([
    import("../text/markdown.ts"),
    import("./store/feeds.ts"),
  ]);
  for (const { i, html } of withHtml) {
    const item = items[i] as Record<string, unknown>;
    const base = typeof item.url === "string" ? item.url : undefined;
    // Markdown and the plain body keep 20k characters: a bounded head of the markup is all they need.
    const head = html.slice(0, MAX_HTML_CONVERTED);
    const hasBody = ["body", "content", "text"].some((k) => typeof item[k] === "string" && item[k] !== "");
    // Markup too large or too deep to parse on this path keeps no Markdown; its text is still read.
    if (!markupWithinLimits(head)) {
      if (!hasBody) out.set(i, { ...item, body: stripTags(head) });
      continue;
    }
    let markdown: string;
    try {
      markdown = htmlToMarkdown(head, base);
    } catch {
      continue; // unreadable markup: the item keeps its plain body
    }
    out.set(i, {
      ...item,
      body_markdown: item.body_markdown ?? markdown,
      ...(hasBody ? {} : { body: htmlToText(head) }),
    });
  }
  return out;
}

/** Describes a zod issue for a per-item ingest error: `url: must be an absolute http(s) URL`. */
function issueText(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const field = issue.path.map(String).join(".");
  if (issue.code === "invalid_type" && issue.input === undefined) return `${field || "item"} is required`;
  return field ? `${field}: ${issue.message}` : issue.message;
}

function toStored(model: string, v: Float32Array): StoredEmbedding {
  const { q, scale } = quantize(v);
  return { model, dims: v.length, scale, q: new Uint8Array(q.buffer, q.byteOffset, q.byteLength) };
}

function fromStored(e: StoredEmbedding): Float32Array {
  return dequantize(new Int8Array(e.q.buffer, e.q.byteOffset, e.q.byteLength), e.scale);
}

/** The oldest publication time (unix seconds) a data model keeps, or undefined without retention. */
export function liveSince(dm: Pick<DataModel, "maxAgeDays">, clock: Clock): number | undefined {
  if (!dm.maxAgeDays) return undefined;
  return Math.floor(clock.now().getTime() / 1000) - dm.maxAgeDays * 86_400;
}

/** Whether a query is a URL to analyse rather than words to match. */
export function isUrlQuery(query: string): boolean {
  if (!/^https?:\/\/\S+$/i.test(query)) return false;
  try {
    return new URL(query).hostname !== "";
  } catch {
    return false;
  }
}

/** The `ref` value as a bare domain, or undefined for none (`null`, `""`, unreadable). */
export function refDomain(ref: string | null | undefined): string | undefined {
  if (!ref || !ref.trim()) return undefined;
  return domainOf(ref) || undefined;
}

/** What highlights and full text read of an article: its plain body and its Markdown, if kept. */
export type BodyText = Pick<Article, "body" | "markdown">;

// Bodies recently read for highlights and full text, by data model and article id: popular
// articles are read again and again. Bounded by count and by size (UTF-16 bytes).
const BODY_CACHE_ENTRIES = 4096;
const BODY_CACHE_BYTES = 32 * 1024 * 1024;

/** Whether a caller may read a data model's full text: its own tenant always, others when licensed. */
export function mayReadFullText(dm: DataModel, context: Pick<SearchContext, "tenantId">): boolean {
  return context.tenantId === dm.tenantId || dm.license === "full_text";
}

/** An article's full text as Markdown within `max` characters (its summary when the body is gone). */
export function fullText(article: BodyText | null | undefined, summary: string, max: number): string {
  const md = article?.markdown || textToMarkdown(article?.body || summary);
  return clipMarkdown(md, max);
}

/** Both slot predicates (either may be absent). */
function allOf(
  a: ((s: number) => boolean) | undefined,
  b: ((s: number) => boolean) | undefined,
): ((s: number) => boolean) | undefined {
  return !a ? b : !b ? a : (s) => a(s) && b(s);
}

/** Whether a site domain belongs to the ref domain (equal, or a subdomain of it). */
export function domainMatches(siteDomain: string, ref: string): boolean {
  return siteDomain === ref || siteDomain.endsWith(`.${ref}`);
}

/**
 * The search engine: article storage, per-data-model in-memory indexes (built from KV at start,
 * updated on ingest), the four recommendation algorithms with the `ref` quota and paging, and
 * hybrid retrieval for the answer engine.
 */
export class SearchEngine implements Search {
  readonly articles: ArticleRepo;
  readonly queryLog = new RecentQueryLog();
  private readonly indexes = new Map<string, Promise<DataModelIndex>>();
  private readonly ingestQueues = new Map<string, Promise<unknown>>();
  private pollTimer?: ReturnType<typeof setInterval>;
  private polling?: Promise<void>;
  /** Per data model: the change-log position its index reflects (set once built). */
  private readonly cursors = new Map<string, number>();
  private readonly following = new Map<string, IndexFollowing>();
  /** Names this engine's entries in the change log: it applied them already and skips them. */
  private readonly writerId = crypto.randomUUID();
  private readonly categoryCache = new Map<string, { version: number; counts: CategoryCount[] }>();
  /** Valid while the index still holds the very card it was read for (an upsert makes a new card). */
  private readonly bodyCache = boundedCache<string, { card: ArticleCard; text: BodyText }>({
    max: BODY_CACHE_ENTRIES,
    maxSize: BODY_CACHE_BYTES,
    sizeOf: (v) => 2 * (v.text.body.length + (v.text.markdown?.length ?? 0)) + 64,
  });
  private readonly trendCache = new Map<string, { key: string; trends: TrendingKeyword[] }>();
  private readonly rebuildWaiters = new Map<string, (() => void)[]>();
  private readonly appliedWaiters = new Map<string, (() => void)[]>();
  private readonly links: LinkBuilder;
  private readonly urlAnalyzer?: UrlAnalyzer;
  private readonly querySource?: QuerySource;
  private readonly options: SearchEngineOptions;

  constructor(options: SearchEngineOptions) {
    this.options = options;
    this.articles = new ArticleRepo(options.kv, options.clock, this.writerId);
    this.links = options.links ?? directLinks;
    this.urlAnalyzer = options.urlAnalyzer;
    this.querySource = options.querySource;
  }

  /** Vector weight of the default ranking version. */
  get vectorWeight(): number {
    return this.options.vectorWeight ?? DEFAULT_VECTOR_WEIGHT;
  }

  get embeddings(): EmbeddingProvider {
    return this.options.embeddings;
  }

  async start(): Promise<void> {
    const ids = (await this.articles.dataModelIds()).filter((id) => this.serves(id));
    for (const id of ids) {
      try {
        await this.index(id);
      } catch (err) {
        // E.g. the embeddings server is down: serve anyway; the index is built on first use.
        this.options.log.error("search index build failed; retrying on first use", {
          data_model_id: id,
          error: describeError(err),
        });
      }
    }
  }

  articleByUrl(dataModelId: string, url: string): Promise<Article | null> {
    return this.articles.getByUrl(dataModelId, url);
  }

  async count(dataModelId: string): Promise<number> {
    return (await this.index(dataModelId)).liveCount;
  }

  async topCategories(dataModelId: string, limit = 20): Promise<CategoryCount[]> {
    const index = await this.index(dataModelId);
    const cached = this.categoryCache.get(dataModelId);
    let all = cached?.version === index.version ? cached.counts : undefined;
    if (!all) {
      // One pass over the cards, recounted only after the index changed.
      const byKey = new Map<string, CategoryCount>();
      for (const card of index.cards) {
        const keys = card.categoryKeys;
        if (!keys) continue;
        for (let i = 0; i < keys.length; i++) {
          const c = byKey.get(keys[i]!);
          if (c) c.count++;
          else byKey.set(keys[i]!, { category: card.categories![i]!, count: 1 });
        }
      }
      all = [...byKey.values()].sort((a, b) => b.count - a.count || a.category.localeCompare(b.category)).slice(
        0,
        MAX_LISTED_CATEGORIES,
      );
      this.categoryCache.set(dataModelId, { version: index.version, counts: all });
    }
    return all.slice(0, Math.max(0, limit)).map((c) => ({ ...c }));
  }

  /**
   * Retention in KV (one process at a time, under the retention lease): deletes the articles
   * published before `cutoffUnix` from this process's index and from KV, logging each deletion,
   * so every other process's index drops them when it next applies the change log.
   * @returns how many articles were deleted
   */
  async expire(dataModelId: string, cutoffUnix: number): Promise<number> {
    await this.index(dataModelId);
    return await this.serially(dataModelId, async () => {
      const index = await this.index(dataModelId);
      const expired: number[] = [];
      const pub = index.pubdates;
      for (let s = 0; s < index.size; s++) if (pub[s]! < cutoffUnix) expired.push(s);
      const cards = index.removeSlots(expired);
      await this.articles.deleteMany(dataModelId, cards);
      return cards.length;
    });
  }

  /**
   * Trims a data model's change log to {@link CHANGE_LOG_RETENTION} (the retention sweep does,
   * under its lease). A process whose position is trimmed away rebuilds that index.
   * @returns how many entries were deleted
   */
  trimChanges(dataModelId: string): Promise<number> {
    return this.articles.changes.trim(dataModelId, this.options.clock.now().getTime(), CHANGE_LOG_RETENTION);
  }

  /** How this process's index of a data model follows KV: full builds, changes applied, log position. */
  followStats(dataModelId: string): IndexFollowing & { position?: number } {
    return {
      ...(this.following.get(dataModelId) ?? { builds: 0, changesApplied: 0 }),
      position: this.cursors.get(dataModelId),
    };
  }

  /**
   * Serves a data model from an index built elsewhere (benchmarks, tools): its articles are
   * not read from KV.
   */
  adoptIndex(index: DataModelIndex): void {
    this.indexes.set(index.dataModelId, Promise.resolve(index));
  }

  /** Whether this process indexes `dataModelId` (its `SEARCH_SHARD`). */
  serves(dataModelId: string): boolean {
    return serves(this.options.shard ?? null, dataModelId);
  }

  /** The index of a data model, built from KV on first use; 421 for a data model of another shard. */
  index(dataModelId: string): Promise<DataModelIndex> {
    if (!this.serves(dataModelId)) return Promise.reject(outsideShard(this.options.shard!));
    let p = this.indexes.get(dataModelId);
    if (!p) {
      p = this.build(dataModelId);
      this.indexes.set(dataModelId, p);
      p.catch(() => this.indexes.delete(dataModelId));
    }
    return p;
  }

  private async build(dataModelId: string): Promise<DataModelIndex> {
    const started = performance.now();
    const provider = this.options.embeddings;
    await provider.init();
    const index = new DataModelIndex(dataModelId, provider.dims, {
      removeCommonDirection: provider.removeCommonDirection ?? false,
    });
    // The log position read before listing: changes after it are applied by the next poll (an
    // article listed in its newer version is then fetched again, which is harmless).
    const position = headSeq(await this.articles.changes.head(dataModelId));
    let stale: Article[] = [];
    const flush = async () => {
      const vectors = await this.embedSafely(stale.map(embeddingText));
      for (let i = 0; i < stale.length; i++) {
        const a = stale[i]!, v = vectors?.[i];
        // The index holds what KV holds (int8), as for every other article.
        const stored = v ? toStored(provider.id, v) : undefined;
        index.upsert(a, stored ? fromStored(stored) : null, bagOf(a));
        if (stored) await this.articles.setEmbedding(dataModelId, a.id, stored);
      }
      stale = [];
    };
    await index.bulkLoad(async () => {
      for await (const a of this.articles.list(dataModelId)) {
        const e = a.embedding;
        if (e && e.model === provider.id && e.dims === provider.dims) index.upsert(a, fromStored(e), bagOf(a));
        else {
          // Embedded by another provider (or not at all): embed again, in batches.
          stale.push(a);
          if (stale.length >= 256) await flush();
        }
      }
      if (stale.length) await flush();
    });
    this.cursors.set(dataModelId, position);
    const stats = this.following.get(dataModelId) ?? { builds: 0, changesApplied: 0 };
    this.following.set(dataModelId, { ...stats, builds: stats.builds + 1 });
    this.options.log.info("search index built", {
      data_model_id: dataModelId,
      articles: index.size,
      ms: Math.round(performance.now() - started),
    });
    return index;
  }

  private async embedSafely(texts: string[]): Promise<Float32Array[] | null> {
    if (texts.length === 0) return [];
    try {
      return await this.options.embeddings.embed(texts);
    } catch (err) {
      // Articles stay searchable lexically; the next start embeds them again.
      this.options.log.warn("embedding failed; indexing without vectors", { error: describeError(err) });
      return null;
    }
  }

  ingest(dataModel: DataModel, items: unknown[]): Promise<IngestReport> {
    if (items.length > MAX_INGEST_ITEMS) {
      return Promise.reject(new AppError(422, "too_many_items", `articles: at most ${MAX_INGEST_ITEMS} per call`));
    }
    return this.serially(dataModel.id, () => this.ingestNow(dataModel, items));
  }

  // One ingest (or rebuild) per data model at a time keeps KV and the index in the same order.
  private serially<T>(dataModelId: string, work: () => Promise<T>): Promise<T> {
    const prev = this.ingestQueues.get(dataModelId) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(work);
    this.ingestQueues.set(dataModelId, run);
    run.finally(() => {
      if (this.ingestQueues.get(dataModelId) === run) this.ingestQueues.delete(dataModelId);
    }).catch(() => {});
    return run;
  }

  /**
   * Keeps indexes fresh when other processes (another server, `admin articles import`, the
   * retention sweep elsewhere) write: every write logs its changes and moves the model's log
   * head (see change_log.ts); this polls the heads of the indexed data models (one `getMany` per
   * interval) and applies the changes after each index's position ({@link applyChanges}).
   * Polling, not `kv.watch`: the local SQLite backend does not notify other processes. Stop
   * with {@link close}.
   */
  watch({ intervalMs = 2000 }: { intervalMs?: number } = {}): void {
    if (this.pollTimer !== undefined) return;
    this.pollTimer = setInterval(() => {
      if (this.polling) return;
      this.polling = this.pollHeads().catch((err) =>
        this.options.log.warn("article change poll failed", { error: describeError(err) })
      ).finally(() => this.polling = undefined);
    }, intervalMs);
  }

  /** Stops watching (the indexes stay usable) and waits for a poll in flight. */
  async close(): Promise<void> {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    await this.polling;
  }

  private async pollHeads(): Promise<void> {
    // Models still building have no position yet: the build records it.
    const ids = [...this.cursors.keys()];
    for (let i = 0; i < ids.length; i += 10) {
      const chunk = ids.slice(i, i + 10);
      const heads = await this.options.kv.getMany<{ seq?: number }[]>(chunk.map(headKey));
      for (const [j, head] of heads.entries()) {
        if (headSeq(head) !== this.cursors.get(chunk[j]!)) await this.applyChanges(chunk[j]!);
      }
    }
  }

  /**
   * Brings a built index up to date with the change log: fetches the current version of every
   * article other processes changed since the index's position and re-indexes it (or takes it
   * out when it is gone). Rebuilds from KV only when the log was trimmed past that position.
   * Runs after ingests already queued for the model.
   * @returns how many changes were applied
   */
  applyChanges(dataModelId: string): Promise<number> {
    return this.serially(dataModelId, async () => {
      const loaded = this.indexes.get(dataModelId);
      const from = this.cursors.get(dataModelId);
      if (!loaded || from === undefined) return 0;
      const index = await loaded;
      const head = headSeq(await this.articles.changes.head(dataModelId));
      if (head === from) return 0;
      let applied = 0;
      try {
        if (head < from) throw new ChangeLogTrimmed(); // the store was replaced under us
        for await (const page of this.articles.changes.since(dataModelId, from, head)) {
          applied += await this.applyPage(index, dataModelId, page.filter((c) => c.writer !== this.writerId));
          this.cursors.set(dataModelId, page.at(-1)!.seq);
        }
      } catch (err) {
        if (!(err instanceof ChangeLogTrimmed)) throw err;
        this.options.log.warn("article change log trimmed past this index's position; rebuilding", {
          data_model_id: dataModelId,
        });
        await this.rebuildNow(dataModelId);
        return applied;
      }
      const stats = this.following.get(dataModelId)!;
      this.following.set(dataModelId, { ...stats, changesApplied: stats.changesApplied + applied });
      if (applied > 0) {
        const waiting = this.appliedWaiters.get(dataModelId) ?? [];
        this.appliedWaiters.delete(dataModelId);
        for (const resolve of waiting) resolve();
      }
      return applied;
    });
  }

  // Re-indexes the current version of each changed article (its latest change in the page decides
  // nothing: what KV holds now does), embedding those stored without a matching vector.
  private async applyPage(index: DataModelIndex, dataModelId: string, changes: ArticleChange[]): Promise<number> {
    if (changes.length === 0) return 0;
    const byId = new Map<string, ArticleChange>();
    for (const c of changes) byId.set(c.id, c);
    const list = [...byId.values()];
    const found = await this.articles.getMany(dataModelId, list.map((c) => c.id));
    const provider = this.options.embeddings;
    const stale: Article[] = [];
    for (let i = 0; i < list.length; i++) {
      const a = found[i], c = list[i]!;
      if (!a) index.removeArticle(c.url, c.id);
      else if (a.embedding?.model === provider.id && a.embedding.dims === provider.dims) {
        index.upsert(a, fromStored(a.embedding), bagOf(a));
      } else stale.push(a);
    }
    if (stale.length) {
      const vectors = await this.embedSafely(stale.map(embeddingText));
      stale.forEach((a, i) => {
        // Held in the stored form (int8), as every other process holds it.
        const v = vectors?.[i];
        index.upsert(a, v ? fromStored(toStored(provider.id, v)) : null, bagOf(a));
      });
    }
    return list.length;
  }

  /** Rebuilds a data model's index from KV and swaps it in (after ingests already queued). */
  rebuild(dataModelId: string): Promise<void> {
    return this.serially(dataModelId, () => this.rebuildNow(dataModelId));
  }

  private async rebuildNow(dataModelId: string): Promise<void> {
    const index = await this.build(dataModelId);
    this.indexes.set(dataModelId, Promise.resolve(index));
    const waiting = this.rebuildWaiters.get(dataModelId) ?? [];
    this.rebuildWaiters.delete(dataModelId);
    for (const resolve of waiting) resolve();
  }

  /** Resolves once changes made by other processes are next applied to a data model's index. */
  nextApplied(dataModelId: string): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.appliedWaiters.get(dataModelId) ?? [];
      waiting.push(resolve);
      this.appliedWaiters.set(dataModelId, waiting);
    });
  }

  /**
   * Resolves once a data model's index is next rebuilt from KV (after the change log was trimmed
   * past its position, or by {@link rebuild}).
   */
  nextRebuild(dataModelId: string): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.rebuildWaiters.get(dataModelId) ?? [];
      waiting.push(resolve);
      this.rebuildWaiters.set(dataModelId, waiting);
    });
  }

  private async ingestNow(dm: DataModel, items: unknown[]): Promise<IngestReport> {
    const index = await this.index(dm.id);
    const provider = this.options.embeddings;
    const results: IngestItemResult[] = new Array(items.length);
    const valid: { i: number; fields: ReturnType<typeof normalizeArticle> }[] = [];
    // Bodies sent as HTML become Markdown first (bounded; see htmlBodies).
    const fromHtml = await htmlBodies(items);
    // A call may carry 30 MB: the work goes in time slices, so other requests interleave.
    const slice = timeSlicer();
    for (const [i, item] of items.entries()) {
      await slice();
      const parsed = articleInputSchema.safeParse(fromHtml.get(i) ?? item);
      if (!parsed.success) {
        const url = (item as { url?: unknown } | null)?.url;
        results[i] = {
          index: i,
          status: "error",
          url: typeof url === "string" ? url : undefined,
          error: issueText(parsed.error),
        };
        continue;
      }
      try {
        const fields = normalizeArticle(dm, parsed.data as ArticleInput, this.options.clock);
        if (fields.pubdateUnix < (liveSince(dm, this.options.clock) ?? -Infinity)) {
          results[i] = { index: i, status: "error", url: fields.url, error: "pubdate: older than max_age_days" };
          continue;
        }
        valid.push({ i, fields });
      } catch (err) {
        results[i] = { index: i, status: "error", url: parsed.data.url, error: (err as Error).message };
      }
    }
    const vectors: (Float32Array | null)[] = [];
    for (let at = 0; at < valid.length; at += INGEST_EMBED_BATCH) {
      const batch = valid.slice(at, at + INGEST_EMBED_BATCH);
      const got = await this.embedSafely(batch.map((v) => embeddingText(v.fields)));
      vectors.push(...batch.map((_, k) => got?.[k] ?? null));
      await slice();
    }
    // The BM25F terms, indexed here and stored with the article so no build tokenises it again.
    const bags: ReturnType<typeof articleBag>[] = [];
    for (const v of valid) {
      bags.push(articleBag(v.fields));
      await slice();
    }
    // The first item of each URL is written in one batched upsert; repeats of a URL within the
    // call follow one by one, in order, so the last one wins as it would in separate calls.
    const firsts: number[] = [], repeats: number[] = [];
    const seenUrls = new Set<string>();
    valid.forEach((v, j) => {
      if (seenUrls.has(v.fields.url)) repeats.push(j);
      else {
        seenUrls.add(v.fields.url);
        firsts.push(j);
      }
    });
    const withVector = (j: number) => {
      const vector = vectors?.[j] ?? null;
      const fields = valid[j]!.fields;
      return {
        ...fields,
        embedding: vector ? toStored(provider.id, vector) : undefined,
        terms: storableTerms(fields, bags[j]!),
      };
    };
    const apply = (j: number, outcome: UpsertOutcome) => {
      const { i, fields } = valid[j]!;
      const stored = outcome.article.embedding;
      index.upsert(outcome.article, stored ? fromStored(stored) : null, bags[j]);
      results[i] = {
        index: i,
        status: outcome.created ? "created" : "updated",
        id: outcome.article.id,
        url: fields.url,
      };
    };
    const failed = (j: number, err: unknown) => {
      const { i, fields } = valid[j]!;
      this.options.log.error("article upsert failed", { data_model_id: dm.id, error: describeError(err) });
      results[i] = { index: i, status: "error", url: fields.url, error: "could not store the article" };
    };
    try {
      const outcomes = await this.articles.upsertMany(firsts.map(withVector));
      for (const [k, j] of firsts.entries()) {
        apply(j, outcomes[k]!);
        await slice();
      }
    } catch (err) {
      for (const j of firsts) failed(j, err);
    }
    for (const j of repeats) {
      try {
        apply(j, await this.articles.upsert(withVector(j)));
      } catch (err) {
        failed(j, err);
      }
    }
    return {
      received: items.length,
      created: results.filter((r) => r.status === "created").length,
      updated: results.filter((r) => r.status === "updated").length,
      failed: results.filter((r) => r.status === "error").length,
      results,
    };
  }

  /**
   * Turns query text into the index's query form; with a fusion that asks for it, the query
   * vector takes in the vectors of its best lexical matches (see {@link DataModelIndex.withFeedback}).
   */
  async queryRep(
    index: DataModelIndex,
    text: string,
    { page = false, fusion, pool }: { page?: boolean; fusion?: Fusion; pool?: number } = {},
  ): Promise<QueryRep> {
    const clipped = text.slice(0, page ? 20_000 : MAX_QUERY_CHARS);
    let bag = Bm25Index.bag(terms(clipped));
    if (page && bag.size > PAGE_QUERY_TERMS) {
      // A page is long: keep its most distinctive terms (tf x idf) as the lexical query.
      bag = new Map(
        [...bag].map(([t, tf]) => [t, tf * index.bm25.idf(t)] as const).sort((a, b) => b[1] - a[1])
          .slice(0, PAGE_QUERY_TERMS).map(([t]) => [t, 1]),
      );
    }
    const [vector] = (await this.embedSafely([clipped.slice(0, 6000)])) ?? [null];
    const rep = { bag, vector: vector ?? null };
    if (!fusion) return rep;
    const expanded = index.withTermFeedback(rep, fusion.termFeedback, { pool });
    return index.withFeedback(expanded, fusion.feedbackDocs, fusion.feedbackWeight, { pool });
  }

  async recommend(dataModel: DataModel, request: SearchRequest, context: SearchContext): Promise<SearchResponse> {
    const query = request.query.trim();
    const algorithm = request.search_algorithm ?? "semantic";
    const topK = request.similarity_top_k ?? DEFAULT_TOP_K;
    const page = request.page ?? DEFAULT_PAGE;
    const perPage = request.num_results ?? DEFAULT_NUM_RESULTS;
    const ref = refDomain(request.ref);
    const numRef = Math.min(request.num_articles_ref ?? 0, topK);
    const filters = filtersOf(request);
    const textChars = textOptionOf(request);
    // Full text is the publisher's to license; the owning tenant always reads its own articles.
    if (textChars !== null && !mayReadFullText(dataModel, context)) throw fullTextNotLicensed();
    const index = await this.index(dataModel.id);
    const now = this.options.clock.now();
    const nowUnix = Math.floor(now.getTime() / 1000);

    let text = query;
    const excluded = new Set<number>();
    let analysed: string | undefined;
    if (isUrlQuery(query)) {
      if (!this.urlAnalyzer) {
        throw new AppError(422, "url_analysis_unavailable", "query: URL analysis is unavailable on this server");
      }
      let pageInfo;
      try {
        // Callers take turns at page analysis: a tenant (bearer, MCP) or a payproxy agent.
        const caller = context.tenantId ? `tenant:${context.tenantId}` : context.caller ?? "anonymous";
        pageInfo = await this.urlAnalyzer.analyze(query, caller);
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw new AppError(422, "url_unreadable", "query: the URL could not be analysed", { cause: err });
      }
      text = `${pageInfo.title}. ${pageInfo.title}. ${pageInfo.summary} ${pageInfo.text}`;
      analysed = pageInfo.title || query;
      // The page itself is no recommendation: neither as asked nor where its redirects ended.
      for (const u of [query, pageInfo.url]) {
        try {
          const slot = u ? index.slotOf(canonicalUrl(u)) : undefined;
          if (slot !== undefined) excluded.add(slot);
        } catch { /* not a URL we could canonicalise */ }
      }
    } else {
      // A named caller (a paying agent, an MCP client) is one sender however often it searches.
      this.queryLog.record(dataModel.id, query, now, context.caller);
    }

    // Payproxy's search_type and search_version (also a bearer query parameter) pick the fusion.
    const fusion = retrievalFusion(request.search_type, context.searchVersion, this.vectorWeight);
    const rep = await this.queryRep(index, text, {
      page: analysed !== undefined,
      fusion: fusionForAlgorithm(fusion, algorithm),
      pool: candidatePool(algorithm, topK),
    });
    const trends = algorithm === "trending" ? await this.trends(dataModel.id, index, now) : undefined;
    // From the scan to the end of ranking nothing awaits: the cosines live in shared scratch space.
    const cos = index.rankingCosines(rep.vector);
    const rank = ALGORITHMS[algorithm];
    // Retention: between sweeps, articles past the model's max age are already out of every ranking.
    const since = liveSince(dataModel, this.options.clock);
    const pub = index.pubdates;
    const live = since === undefined ? undefined : (s: number) => pub[s]! >= since;
    // Filters are a candidate predicate inside retrieval: top-k is taken among matching articles only.
    const filter = filters ? filterPredicate(index, filters) : undefined;
    const notPage = excluded.size === 0 ? undefined : (s: number) => !excluded.has(s);
    const base = allOf(allOf(live, filter), notPage);
    const run = (k: number, allow?: (s: number) => boolean) =>
      rank({ index, query: rep, cos, k, allow, nowUnix, trends, fusion });

    let ranked: Ranked[];
    const refPlaced = new Set<number>();
    if (ref) {
      const mask = index.domainMask((d) => domainMatches(d, ref));
      const siteIds = index.siteIds;
      const isRef = (s: number) => mask[siteIds[s]!] === 1;
      const fromRef = run(topK, base ? (s) => base(s) && isRef(s) : isRef);
      const others = run(topK, base ? (s) => base(s) && !isRef(s) : (s) => !isRef(s));
      const takeRef = Math.min(numRef, fromRef.length);
      for (const r of fromRef.slice(0, takeRef)) refPlaced.add(r.slot);
      const chosen = [...fromRef.slice(0, takeRef), ...others.slice(0, topK - takeRef)];
      // Other sites ran short: top up from the ref domain rather than return fewer.
      if (chosen.length < topK) chosen.push(...fromRef.slice(takeRef, takeRef + topK - chosen.length));
      ranked = mergeRanked(chosen, []);
    } else {
      ranked = run(topK, base);
    }

    const start = (page - 1) * perPage;
    const pageItems = ranked.slice(start, start + perPage);
    const explained = request.explain
      ? explainSlots(index, pageItems.map((r) => r.slot), { query: rep, cos, nowUnix, trends, refPlaced })
      : undefined;
    const needBodies = textChars !== null || highlightOptionsOf(request) !== null;
    const stored = needBodies ? await this.bodies(dataModel.id, index, pageItems) : [];
    // A URL query's terms are its page's; words are matched as asked otherwise.
    const highlighted = await this.highlights(index, pageItems, stored, rep, request, analysed ? undefined : query);
    const results: SearchResult[] = [];
    for (let i = 0; i < pageItems.length; i++) {
      const { slot, score } = pageItems[i]!;
      const card = index.cards[slot]!;
      results.push({
        author: card.author,
        image_url: await this.links.imageUrl(card),
        preview_content: card.previewContent,
        pubdate: card.pubdate,
        pubdate_unix: card.pubdateUnix,
        score: Math.round(score * 10_000) / 10_000,
        site: card.site,
        site_domain: card.siteDomain,
        source_url: await this.links.trackingUrl(card, {
          dataModelId: dataModel.id,
          tenantId: context.tenantId,
          caller: context.caller,
          requestId: context.requestId,
          query,
          position: start + i + 1,
          widgetId: context.widgetId,
          sessionId: context.sessionId,
          placement: context.placement,
        }),
        summary: card.summary,
        title: card.title,
        url: card.url,
        ...(explained ? { explain: explained.get(slot) } : {}),
        ...(highlighted ? { highlights: highlighted[i]! } : {}),
        ...(textChars !== null ? { text: fullText(stored[i], card.summary, textChars) } : {}),
      });
    }
    this.options.onResults?.({
      tenantId: dataModel.tenantId,
      dataModelId: dataModel.id,
      query,
      caller: context.caller,
      at: this.options.clock.now(),
      results: pageItems.map(({ slot }, i) => ({
        articleId: index.cards[slot]!.id,
        url: index.cards[slot]!.url,
        position: start + i + 1,
      })),
    });
    return {
      status: "success",
      response: {
        query,
        results,
        message: this.message(algorithm, ranked.length, results.length, analysed, query, trends),
      },
    };
  }

  /**
   * The bodies of a page of results (null where an article is gone): from the cache when it still
   * holds the article's current version, the rest in one KV read.
   */
  private async bodies(dataModelId: string, index: DataModelIndex, pageItems: Ranked[]): Promise<(BodyText | null)[]> {
    const out: (BodyText | null)[] = new Array(pageItems.length).fill(null);
    const missing: number[] = [];
    pageItems.forEach(({ slot }, i) => {
      const card = index.cards[slot]!;
      const hit = this.bodyCache.get(`${dataModelId}\u0000${card.id}`);
      if (hit && hit.card === card) out[i] = hit.text;
      else missing.push(i);
    });
    if (missing.length === 0) return out;
    const cards = missing.map((i) => index.cards[pageItems[i]!.slot]!);
    const read = await this.articles.getMany(dataModelId, cards.map((c) => c.id));
    missing.forEach((i, k) => {
      const a = read[k];
      if (!a) return;
      const text: BodyText = a.markdown ? { body: a.body, markdown: a.markdown } : { body: a.body };
      out[i] = text;
      // Only when the index still shows this version: a newer one may have been written meanwhile.
      if (index.cards[pageItems[i]!.slot] === cards[k]) {
        this.bodyCache.set(`${dataModelId}\u0000${cards[k]!.id}`, { card: cards[k]!, text });
      }
    });
    return out;
  }

  /**
   * The highlights of a page of results when the request asks for them (else undefined): the
   * bodies are read from KV in one round, their windows scored by the query's terms and vector.
   */
  private async highlights(
    index: DataModelIndex,
    pageItems: Ranked[],
    stored: (BodyText | null)[],
    rep: QueryRep,
    request: SearchRequest,
    queryText?: string,
  ): Promise<Highlight[][] | undefined> {
    const options = highlightOptionsOf(request);
    if (!options) return undefined;
    const cards = pageItems.map((r) => index.cards[r.slot]!);
    const bodies = stored.map((a, i) => a?.body || cards[i]!.summary);
    const idf = (t: string) => index.bm25.idf(t);
    const q = queryText === undefined ? highlightQuery(rep.bag.keys(), idf) : highlightQueryOfText(queryText, idf);
    return await highlightPage(bodies, q, options, {
      queryVector: rep.vector,
      embed: (texts) => this.embedSafely(texts),
    });
  }

  private message(
    algorithm: string,
    total: number,
    shown: number,
    analysed: string | undefined,
    query: string,
    trends: TrendingKeyword[] | undefined,
  ): string {
    const parts: string[] = [];
    if (analysed !== undefined) parts.push(`Analysed ${query} ("${analysed}")`);
    parts.push(`${total} ${total === 1 ? "article" : "articles"} ranked by ${algorithm}, ${shown} on this page`);
    if (trends) {
      parts.push(
        trends.length
          ? `trending keywords: ${trends.map((t) => t.word).join(", ")}`
          : "no trending keywords in the past 24 hours: newest relevant articles shown",
      );
    }
    return parts.join("; ");
  }

  /** Trending keywords of a data model now (cached for 5 minutes or until the index changes). */
  async trends(dataModelId: string, index: DataModelIndex, now: Date): Promise<TrendingKeyword[]> {
    const nowUnix = Math.floor(now.getTime() / 1000);
    const key = `${index.version}:${Math.floor(nowUnix / TREND_CACHE_S)}`;
    const cached = this.trendCache.get(dataModelId);
    if (cached?.key === key) return cached.trends;
    const since = new Date(now.getTime() - 86_400_000);
    let queries: Awaited<ReturnType<QuerySource["recentQueries"]>> = [];
    try {
      if (this.querySource) queries = await this.querySource.recentQueries(dataModelId, since, now);
    } catch (err) {
      this.options.log.warn("query events unavailable for trending", { error: describeError(err) });
    }
    // Analytics has no query events yet (or failed): the queries this process served stand in.
    if (!queries.some((q) => q.channel !== "click")) {
      queries = [...queries, ...await this.queryLog.recentQueries(dataModelId, since, now)];
    }
    const surface = new Map<string, string>();
    const titleOf = (url: string) => {
      try {
        const slot = index.slotOf(canonicalUrl(url));
        return slot === undefined ? undefined : index.cards[slot]!.title;
      } catch {
        return undefined; // not a URL we can canonicalise
      }
    };
    const fromSignals = signalKeywords(queries, surface, titleOf);
    const trends = mergeTrends(fromSignals, titleBursts(index, nowUnix, surface), surface);
    this.trendCache.set(dataModelId, { key, trends });
    return trends;
  }

  async retrieve(dataModelIds: string[], query: string, options: { k?: number } = {}): Promise<RetrievedArticle[]> {
    const k = Math.max(1, Math.min(options.k ?? 5, 50));
    const nowUnix = Math.floor(this.options.clock.now().getTime() / 1000);
    const drawn: { dm: string; slot: number; score: number; bm25: number; cosine: number; index: DataModelIndex }[] =
      [];
    const contributing = new Set<string>();
    for (const dm of new Set(dataModelIds)) {
      const index = await this.index(dm);
      if (index.size === 0) continue;
      const fusion = { ...FUSION_V2, vectorWeight: this.vectorWeight };
      const rep = await this.queryRep(index, query, { fusion, pool: k * 3 });
      for (const c of index.hybrid(rep, { k: k * 3, fusion })) {
        drawn.push({ dm, slot: c.slot, score: c.score, bm25: c.bm25, cosine: c.cosine, index });
        contributing.add(dm);
      }
    }
    // Per-index scores are normalised within their index: comparable only when one index answered.
    const scored = contributing.size > 1 ? fuseAcrossIndexes(drawn, this.vectorWeight) : drawn;
    const found = scored.map((f) => {
      // Recency weighting: a month-old article keeps ~84% of its relevance, a fresh one all of it.
      const ageDays = Math.max(0, (nowUnix - f.index.pubdates[f.slot]!) / 86_400);
      return { ...f, score: f.score * (0.75 + 0.25 * Math.exp(-ageDays / 30)) };
    });
    found.sort((a, b) => b.score - a.score);
    const out: RetrievedArticle[] = [];
    for (const f of found.slice(0, k)) {
      const card = f.index.cards[f.slot]!;
      const full = await this.articles.get(f.dm, card.id);
      out.push({
        id: card.id,
        dataModelId: f.dm,
        url: card.url,
        title: card.title,
        author: card.author,
        site: card.site,
        siteDomain: card.siteDomain,
        pubdate: card.pubdate,
        pubdateUnix: card.pubdateUnix,
        summary: card.summary,
        body: full?.body ?? card.summary,
        score: Math.round(f.score * 10_000) / 10_000,
      });
    }
    return out;
  }
}
