/**
 * Recommendations from one data model (`/v2/search` and its aliases): the four algorithms with
 * filters, retention, the `ref` quota and paging; URL queries analysed as pages; highlights and
 * licensed full text; trending keywords; each served page told to analytics.
 */
import type { Clock } from "../clock.ts";
import { boundedCache, type LRUCache } from "../bounded_cache.ts";
import { timeSlicer } from "../timers.ts";
import { AppError } from "../errors.ts";
import { describeError, type Logger } from "../log.ts";
import type { DataModel } from "../store/mod.ts";
import { explainSlots } from "./rank/explain.ts";
import { filterPredicate, filtersOf } from "./rank/filters.ts";
import {
  type Highlight,
  type HighlightOptions,
  highlightPage,
  highlightQuery,
  highlightQueryOfText,
} from "./rank/highlights.ts";
import { highlightOptionsOf, textOptionOf } from "./result_options.ts";
import { ALGORITHMS, candidatePool, mergeRanked, type Ranked } from "./rank/algorithms.ts";
import { canonicalUrl, domainOf } from "./store/articles.ts";
import type { ArticleCard, DataModelIndex, QueryRep } from "./index/index.ts";
import { fusionForAlgorithm, retrievalFusion } from "./rank/retrieval_mode.ts";
import { type LinkBuilder, type QuerySource, RecentQueryLog, type UrlAnalyzer } from "./ports.ts";
import { mergeTrends, signalKeywords, titleBursts, type TrendingKeyword } from "./rank/trending.ts";
import type { SearchContext, SearchRequest, SearchResponse, SearchResult } from "./types.ts";
import { liveSince } from "./store/retention.ts";
import { type BodyText, fullText, mayReadFullText } from "./text/full_text.ts";
import type { EmbedSafely } from "./embed.ts";
import { fullTextNotLicensed, searchErrors } from "./errors.ts";
import { queryRep } from "./query.ts";
import type { IndexRegistry } from "./registry.ts";

/** Spec 8: results ranked and results per page when a request does not say. */
const DEFAULT_TOP_K = 9;
const DEFAULT_PAGE = 1;
const DEFAULT_NUM_RESULTS = 10;
const TREND_CACHE_S = 300;

// Bodies recently read for highlights and full text, by data model and article id: popular
// articles are read again and again. Bounded by count and by size (UTF-16 bytes).
const BODY_CACHE_ENTRIES = 4096;
const BODY_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * The most results the page a request asks can hold: `num_results`, fewer on the last page of its
 * `similarity_top_k` ranked, none past it.
 */
export function pageLength(request: Pick<SearchRequest, "similarity_top_k" | "num_results" | "page">): number {
  const perPage = request.num_results ?? DEFAULT_NUM_RESULTS;
  const start = ((request.page ?? DEFAULT_PAGE) - 1) * perPage;
  return Math.max(0, Math.min(perPage, (request.similarity_top_k ?? DEFAULT_TOP_K) - start));
}

/** A page of results served: who asked, in which data model, which articles at which positions. */
export interface ServedResults {
  tenantId: string;
  dataModelId: string;
  query: string;
  caller?: string;
  /** The reader's network on a public route (see SearchContext). */
  clientKey?: string;
  /** The search across resends of its request (SearchContext): its events are stored once. */
  idempotencyKey?: string;
  at: Date;
  results: { articleId: string; url: string; position: number }[];
}

/** What recommendations are built from. */
export interface RecommenderOptions {
  clock: Clock;
  log: Logger;
  embed: EmbedSafely;
  links: LinkBuilder;
  urlAnalyzer?: UrlAnalyzer;
  /** Query events from analytics; the recommender's own in-memory log is used when absent. */
  querySource?: QuerySource;
  /** Vector weight of the default ranking version. */
  vectorWeight: number;
  /** Told of every page of results served (analytics records them as impressions). */
  onResults?: (served: ServedResults) => void;
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

/** Whether a site domain belongs to the ref domain (equal, or a subdomain of it). */
export function domainMatches(siteDomain: string, ref: string): boolean {
  return siteDomain === ref || siteDomain.endsWith(`.${ref}`);
}

/** Both slot predicates (either may be absent). */
function allOf(
  a: ((s: number) => boolean) | undefined,
  b: ((s: number) => boolean) | undefined,
): ((s: number) => boolean) | undefined {
  return !a ? b : !b ? a : (s) => a(s) && b(s);
}

/** Recommendations over the indexes of a registry. */
export class Recommender {
  /** The queries this process served: trending's stand-in when analytics has none. */
  readonly queryLog = new RecentQueryLog();
  #bodyCache?: LRUCache<string, { card: ArticleCard; text: BodyText }>;
  /**
   * Valid while the index still holds the very card it was read for (an upsert makes a new card).
   * Made at its first use: bounded by count and by size, lru-cache allocates its 4,096 slots up
   * front (about 0.5 ms of CPU), and most test worlds never recommend.
   */
  private get bodyCache(): LRUCache<string, { card: ArticleCard; text: BodyText }> {
    return this.#bodyCache ??= boundedCache({
      max: BODY_CACHE_ENTRIES,
      maxSize: BODY_CACHE_BYTES,
      sizeOf: (v) => 2 * (v.text.body.length + (v.text.markdown?.length ?? 0)) + 64,
    });
  }
  private readonly trendCache = new Map<string, { key: string; trends: TrendingKeyword[] }>();
  private readonly embed: EmbedSafely;

  constructor(private readonly registry: IndexRegistry, private readonly options: RecommenderOptions) {
    this.embed = options.embed;
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
    const licensed = mayReadFullText(dataModel, context);
    if (textChars !== null && !licensed) throw fullTextNotLicensed();
    // Highlights are passages, never the body: without the licence their budget is capped.
    const highlightOptions = highlightOptionsOf(request, licensed);
    const index = await this.registry.index(dataModel.id);
    const now = this.options.clock.now();
    const nowUnix = Math.floor(now.getTime() / 1000);

    let text = query;
    const excluded = new Set<number>();
    let analysed: string | undefined;
    if (isUrlQuery(query)) {
      if (!this.options.urlAnalyzer) {
        throw searchErrors.url_analysis_unavailable();
      }
      let pageInfo;
      try {
        // Callers take turns at page analysis: a tenant (bearer, MCP) or a payproxy agent.
        const caller = context.tenantId ? `tenant:${context.tenantId}` : context.caller ?? "anonymous";
        pageInfo = await this.options.urlAnalyzer.analyze(query, caller);
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw searchErrors.url_unreadable({ cause: err });
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
    // Term feedback and score regularization only where the hybrid order is the result order.
    const fusion = fusionForAlgorithm(
      retrievalFusion(request.search_type, context.searchVersion, this.options.vectorWeight),
      algorithm,
    );
    const rep = await queryRep(index, text, this.embed, {
      page: analysed !== undefined,
      fusion,
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
    const pageItems = ranked.slice(start, start + pageLength(request));
    const explained = request.explain
      ? explainSlots(index, pageItems.map((r) => r.slot), { query: rep, cos, nowUnix, trends, refPlaced })
      : undefined;
    const needBodies = textChars !== null || highlightOptions !== null;
    const stored = needBodies ? await this.bodies(dataModel.id, index, pageItems) : [];
    // A URL query's terms are its page's; words are matched as asked otherwise.
    const highlighted = highlightOptions
      ? await this.highlights(index, pageItems, stored, rep, highlightOptions, analysed ? undefined : query)
      : undefined;
    const results: SearchResult[] = [];
    // Up to 1,000 results, each text made Markdown: other requests are served between them.
    const slice = timeSlicer();
    for (let i = 0; i < pageItems.length; i++) {
      if (textChars !== null) await slice();
      const { slot, score } = pageItems[i]!;
      const card = index.cards[slot]!;
      results.push({
        author: card.author,
        image_url: await this.options.links.imageUrl(card),
        preview_content: card.previewContent,
        pubdate: card.pubdate,
        pubdate_unix: card.pubdateUnix,
        score: Math.round(score * 10_000) / 10_000,
        site: card.site,
        site_domain: card.siteDomain,
        source_url: await this.options.links.trackingUrl(card, {
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
    // An impression is an article shown: only the results the caller keeps, at the positions their links
    // carry; none to a caller already gone.
    const shown = context.select ? new Set(context.select(results)) : null;
    const served = shown ? results.filter((r) => shown.has(r)) : results;
    const seen = context.left?.aborted ? new Set<SearchResult>() : shown;
    this.options.onResults?.({
      tenantId: dataModel.tenantId,
      dataModelId: dataModel.id,
      query,
      caller: context.caller,
      ...(context.clientKey ? { clientKey: context.clientKey } : {}),
      ...(context.idempotencyKey ? { idempotencyKey: context.idempotencyKey } : {}),
      at: this.options.clock.now(),
      results: pageItems.flatMap(({ slot }, i) =>
        seen && !seen.has(results[i]!) ? [] : [{
          articleId: index.cards[slot]!.id,
          url: index.cards[slot]!.url,
          position: start + i + 1,
        }]
      ),
    });
    return {
      status: "success",
      response: {
        query,
        results: served,
        message: this.message(algorithm, ranked.length, served.length, analysed, query, trends),
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
    const read = await this.registry.articles.getMany(dataModelId, cards.map((c) => c.id));
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
   * The highlights of a page of results within a budget: the bodies are read from KV in one
   * round, their windows scored by the query's terms and vector.
   */
  private async highlights(
    index: DataModelIndex,
    pageItems: Ranked[],
    stored: (BodyText | null)[],
    rep: QueryRep,
    options: HighlightOptions,
    queryText?: string,
  ): Promise<Highlight[][]> {
    const cards = pageItems.map((r) => index.cards[r.slot]!);
    const bodies = stored.map((a, i) => a?.body || cards[i]!.summary);
    const idf = (t: string) => index.bm25.idf(t);
    const q = queryText === undefined ? highlightQuery(rep.bag.keys(), idf) : highlightQueryOfText(queryText, idf);
    return await highlightPage(bodies, q, options, {
      queryVector: rep.vector,
      embed: this.embed,
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
      if (this.options.querySource) queries = await this.options.querySource.recentQueries(dataModelId, since, now);
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
}
