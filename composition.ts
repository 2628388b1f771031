/**
 * The composition root's wiring: every service of the app is built here, once, before the app,
 * into a read-only {@link Deps}. `main.ts` builds the real one over the stores it opens; tests build
 * one over `:memory:` KV, a temp data dir and a fixed clock, and replace a part by passing it in
 * {@link DepsOverrides} (tests/_helpers.ts), never by writing to the built object.
 */
import { KvLease } from "./core/kv_lease.ts";
import { AnalyticsCache } from "./analytics/cache.ts";
import type { AnalyticsDb } from "./analytics/duckdb.ts";
import { DaySwapGuard } from "./analytics/day_swaps.ts";
import { AnalyticsEngine } from "./analytics/engine.ts";
import { EventPipeline } from "./analytics/events.ts";
import { ImpressionRecorder } from "./analytics/impressions.ts";
import { AnalyticsQuerySource } from "./analytics/query_source.ts";
import { VisitCube } from "./analytics/visit_cube.ts";
import { WINDOW_MEMO_TTL_S, WindowMemo } from "./analytics/window_memo.ts";
import { createAnswerService, ExtractiveProvider, OpenAiProvider } from "./core/answer/mod.ts";
import type { AnswerService } from "./core/answer/mod.ts";
import { Lifecycle, type StartOptions } from "./lifecycle.ts";
import { ApiKeyService, OperatorKeys } from "./core/auth/mod.ts";
import type { Clock } from "./core/clock.ts";
import { type Commerce, createCommerce } from "./core/commerce/mod.ts";
import type { PaymentProcessor } from "./core/commerce/mod.ts";
import type { Config } from "./core/config.ts";
import { WebPageAnalyzer, WorkerExtractor } from "./core/extract/mod.ts";
import { SourcePoller, SourceRepo, SourceService, WorkerSourceParser } from "./core/sources/mod.ts";
import { type ImageFetcher, ImageService } from "./core/images/mod.ts";
import type { Logger } from "./core/log.ts";
import { Loopback, SafeFetcher } from "./core/net/mod.ts";
import { createPayproxyServices, type PayproxyServices } from "./core/payproxy/mod.ts";
import { FixedWindowLimiter } from "./core/rate_limit.ts";
import { type EventLimiters, eventLimiters, imageRenderLimiter, publicReadLimiter } from "./core/public_limits.ts";
import { ClickGate, SignedLinks } from "./core/links/mod.ts";
import { ClientKeys } from "./core/client_key.ts";
import {
  defaultCacheName,
  LocalEmbeddings,
  OpenAiEmbeddings,
  RetentionSweeper,
  type Search,
  SearchEngine,
} from "./core/search/mod.ts";
import type { EmbeddingProvider, LinkBuilder, QuerySource, UrlAnalyzer } from "./core/search/mod.ts";
import { createRepos, type Repos } from "./core/store/mod.ts";
import type { Mailer } from "./core/identity/mod.ts";
import { createMailer, createStorefront, type Storefront } from "./core/identity/mod.ts";
import { createWidgetLimits, type WidgetLimits } from "./core/widget/mod.ts";
import { ownAuthorities, WebBotAuth } from "./core/web_bot_auth/mod.ts";

/** Everything the app is built from. Every field is set by {@link buildDeps}; none changes after. */
export interface Deps {
  readonly config: Config;
  readonly kv: Deno.Kv;
  readonly clock: Clock;
  readonly log: Logger;
  readonly repos: Repos;
  readonly apiKeys: ApiKeyService;
  /** Operator credentials (outbox, payproxy metrics). */
  readonly operatorKeys: OperatorKeys;
  readonly duckdb: AnalyticsDb;
  /** Outbound HTTP; injected so tests can point it at local peers. */
  readonly fetch: typeof fetch;
  /** SSRF-guarded fetching of user-supplied URLs (URL queries, feed imports, image origins). */
  readonly safeFetch: SafeFetcher;
  /** Fetches, extracts and summarises URL queries. */
  readonly urlAnalyzer: UrlAnalyzer;
  /** Signed `source_url` / `image_url` links; `start()` loads their keys. */
  readonly links: SignedLinks;
  /** Resized article images behind `/img`. */
  readonly images: ImageService;
  /**
   * Article search: recommendations (`/app/v2/search`, payproxy), retrieval for answers, ingest,
   * and the index lifecycle (`start()` builds the indexes from KV, `watch()` follows other
   * processes' ingests).
   */
  readonly search: Search;
  /** Real-time answers over `search`. */
  readonly answer: AnswerService;
  /** Outgoing e-mail: SMTP (SMTP_URL) or the KV outbox. */
  readonly mailer: Mailer;
  /** Agent storefront: sellers, identities, claims, tokens. */
  readonly storefront: Storefront;
  /**
   * The analytics event pipeline: producers call `events.record([...])`, `/v1/events` calls
   * `ingest`; its WAL flusher is started and stopped by main.ts.
   */
  readonly events: EventPipeline;
  /** Analytics query engine over the Parquet event files. */
  readonly analytics: AnalyticsEngine;
  /** Answers of the analytics rollups, cached in KV per tenant and filters. */
  readonly analyticsCache: AnalyticsCache;
  /** Earlier windows' counts for `compare`, keyed by the Parquet files they were read from. */
  readonly analyticsMemo: WindowMemo;
  /** Derived visit figures of closed day folders, read by the Ask AI time rollup. */
  readonly analyticsVisits: VisitCube;
  /** Requests per API key per minute on the analytics rollups. */
  readonly analyticsLimiter: FixedWindowLimiter;
  /** Bearer search, real-time and article reads per API key (`/app/...`, `/v1/data-models/{dm}/article`). */
  readonly searchLimiter: FixedWindowLimiter;
  /** Source registrations per API key (each probes its URL): `POST /v1/data-models/{dm}/sources`. */
  readonly sourceCheckLimiter: FixedWindowLimiter;
  /** Widget events on `/v1/events`: per address, per widget, daily per widget. */
  readonly eventLimiters: EventLimiters;
  /** Renders of `GET /img` per client address per minute. */
  readonly imageRenderLimiter: FixedWindowLimiter;
  /** Public storefront requests (routes/storefront/public_reads.ts) per client address per minute. */
  readonly publicReadLimiter: FixedWindowLimiter;
  /** Which follows of a tracking link count as clicks (bots, repeats, floods and expired links do not). */
  readonly clickGate: ClickGate;
  /** Readers' network keys on widget events and clicks (keyed, so no address can be read back). */
  readonly clientKeys: ClientKeys;

  /** Rate limits and the daily answer cap of the public widget routes. */
  readonly widgetLimits: WidgetLimits;
  /** Payproxy signing secrets, signature verifier, allowance client and counters. */
  readonly payproxy: PayproxyServices;
  /** Plans, payments, entitlements and the paid proxy. */
  readonly commerce: Commerce;
  /** This process's own routes; createApp binds them (the paid proxy's in-process upstream). */
  readonly loopback: Loopback;
  /** Content sources of data models: registration rules (docs/sources.md). */
  readonly sources: SourceService;
  /** Polls the sources; started and stopped by main.ts (every process may run one). */
  readonly poller: SourcePoller;
  /** Retention of articles past a data model's max age; started and stopped by main.ts. */
  readonly retention: RetentionSweeper;
  /** Agent identity from Web Bot Auth signatures (directory keys fetched through `safeFetch`). */
  readonly webBotAuth: WebBotAuth;
  /** Brings the services up in dependency order (see {@link Lifecycle.start}). */
  start(options?: StartOptions): Promise<void>;
  /** Ends the background work, with the final event flush; the stores stay open. */
  stop(): Promise<void>;
  /** Stops, releases the workers and closes DuckDB and KV, each once. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What the caller opens (stores) or chooses (clock, log) before the services are built. */
export interface DepsInputs {
  config: Config;
  kv: Deno.Kv;
  duckdb: AnalyticsDb;
  clock: Clock;
  log: Logger;
}

/**
 * Parts that replace what {@link buildDeps} would build from the config: local peers, recorded
 * sinks and in-test services. Whatever is built after a replaced part is built over it.
 */
export interface DepsOverrides {
  /** Outbound HTTP (default: the global fetch). */
  fetch?: typeof fetch;
  /** The mailer (default: chosen from the config). */
  mailer?: Mailer;
  /** The SSRF-guarded fetcher (default: built from the config). */
  safeFetch?: SafeFetcher;
  /** What the image service reads origin images with, given the guarded fetcher (default: that fetcher). */
  imageFetcher?: (safeFetch: SafeFetcher) => ImageFetcher;
  /** URL-query analysis (default: fetch, extract and summarise through `safeFetch`). */
  urlAnalyzer?: UrlAnalyzer;
  /** What search results link to (default: the signed links). */
  linkBuilder?: LinkBuilder;
  /** Recent queries for trending keywords (default: the analytics query events). */
  querySource?: QuerySource;
  /** Article search (default: the search engine). */
  search?: Search;
  /** Real-time answers (default: the answer engine over `search`). */
  answer?: AnswerService;
  /** The card and wallet payment processor (default: the sandbox processor). */
  processor?: PaymentProcessor;
}

/** The embedding provider the config names. Pure: the local cache is loaded on `init()`. */
export function embeddingProvider(config: Config, fetchImpl: typeof fetch): EmbeddingProvider {
  const e = config.embeddings;
  if (e.provider === "openai") {
    return new OpenAiEmbeddings({ baseUrl: e.baseUrl!, model: e.model, apiKey: e.apiKey, fetch: fetchImpl });
  }
  return new LocalEmbeddings({
    cachePath: e.cachePath ?? `${config.dataDir.replace(/\/+$/, "")}/embeddings/${defaultCacheName()}`,
    jsonPath: e.wordVectorsPath,
  });
}

/**
 * Builds every service over already-open stores, each once, in dependency order. Pure: no I/O, no
 * environment, no wall clock. The caller then awaits `deps.start()` before serving and disposes of the
 * deps (`await using`, or `deps[Symbol.asyncDispose]()`) when done.
 */
export function buildDeps(inputs: DepsInputs, overrides: DepsOverrides = {}): Deps {
  const { config, kv, clock, log, duckdb } = inputs;
  const fetch = overrides.fetch ?? globalThis.fetch;
  const mailer = overrides.mailer ?? createMailer(config, kv, clock);
  const safeFetch = overrides.safeFetch ?? new SafeFetcher({
    allowPrivate: config.allowPrivateUrls,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.fetchMaxBytes,
  });
  const repos = createRepos(kv);

  const eventsDir = `${config.dataDir.replace(/\/+$/, "")}/events`;
  const analytics = new AnalyticsEngine(duckdb, eventsDir, new DaySwapGuard({ kv, clock }));
  const events = new EventPipeline({ kv, clock, log, repos, duckdb }, {
    eventsDir,
    flushIntervalMs: config.eventsFlushIntervalS * 1000,
    flushMaxEvents: config.eventsFlushMaxEvents,
    compactMinFiles: config.eventsCompactMinFiles,
    leaseMs: config.eventsFlushLeaseS * 1000,
    walMaxBytes: config.eventsWalMaxBytes,
    walTenantMaxBytes: config.eventsWalTenantMaxBytes,
  });
  events.onFlushed(() => analytics.refresh());
  // Search result pages and answer citations become impression events, batched off the response path.
  const impressions = new ImpressionRecorder(events, clock, log);
  events.beforeStop(() => impressions.flush());

  // One page-analysis pool for URL queries and the poller's article pages: callers take turns.
  const extractor = new WorkerExtractor(config.pageAnalysis);
  const urlAnalyzer = overrides.urlAnalyzer ?? new WebPageAnalyzer({ fetcher: safeFetch, clock, extractor });
  const links = new SignedLinks({ kv, clock, baseUrl: config.baseUrl, clickTtlS: config.clicks.linkTtlS });
  const search = overrides.search ?? new SearchEngine({
    kv,
    clock,
    log,
    embeddings: embeddingProvider(config, fetch),
    vectorWeight: config.embeddings.searchVectorWeight,
    links: overrides.linkBuilder ?? links,
    urlAnalyzer,
    // Trending keywords from Ask AI query events; the engine falls back to its own query log.
    querySource: overrides.querySource ?? new AnalyticsQuerySource(analytics, repos),
    onResults: (served) => impressions.add(served),
    shard: config.searchShard,
    dataModels: repos.dataModels,
  });
  const answer = overrides.answer ?? createAnswerService({
    retrieve: (dataModelIds, query, options) => search.retrieve(dataModelIds, query, options),
    providers: {
      extractive: new ExtractiveProvider(),
      openai: new OpenAiProvider({ config: config.openai, fetch, log, clock }),
    },
    clock,
    log,
    events: () => events,
    // Citations link through the same tracking redirect as search results.
    links: overrides.linkBuilder ?? links,
    // ... and count as impressions of the cited articles, like a page of results.
    onCited: (cited) => impressions.addCited(cited),
  });

  const storefront = createStorefront({ config, kv, clock, log, fetch, mailer, safeFetch });
  const loopback = new Loopback();
  const baseOrigin = new URL(config.baseUrl).origin;
  // Calls to this process's own routes (the paid upstream, and the allowance check it triggers)
  // skip the network hop unless told not to.
  const selfOrNet = (req: Request) =>
    config.paidProxyUpstream === "inprocess" && new URL(req.url).origin === baseOrigin
      ? loopback.fetch(req)
      : fetch(req);
  const payproxy = createPayproxyServices({
    config,
    kv,
    clock,
    log,
    fetch: (input, init) => selfOrNet(new Request(input, init)),
  });
  const commerce = createCommerce({
    config,
    kv,
    clock,
    log,
    repos,
    processor: overrides.processor,
    sellers: storefront.sellers,
    secrets: payproxy.secrets,
    credentialsOfHuman: (humanId) => storefront.accounts.credentialIds(humanId),
    upstream: selfOrNet,
  });

  const sourceSettings = config.sources;
  const sourceRepo = new SourceRepo(kv, clock);
  const sourceParser = new WorkerSourceParser({
    timeoutMs: sourceSettings.parseTimeoutMs,
    workers: sourceSettings.parseWorkers,
  });
  const sources = new SourceService({
    sources: sourceRepo,
    dataModels: repos.dataModels,
    fetcher: safeFetch,
    limits: {
      minIntervalS: sourceSettings.minIntervalS,
      maxIntervalS: 7 * 86_400,
      maxPerDataModel: sourceSettings.maxPerDataModel,
    },
    probeMaxBytes: sourceSettings.maxBytes,
    probeTimeoutMs: sourceSettings.fetchTimeoutMs,
    parser: sourceParser,
  });
  const poller = new SourcePoller({
    kv,
    clock,
    log,
    sources: sourceRepo,
    dataModel: (id) => repos.dataModels.get(id),
    articleByUrl: (dmId, url) => search.articleByUrl(dmId, url),
    ingest: (dm, items) => search.ingest(dm, items),
    fetcher: safeFetch,
    extractor,
    parser: sourceParser,
    // Only sources of the data models this process indexes (SEARCH_SHARD): their ingest needs the index.
    serves: (dataModelId) => search.serves?.(dataModelId) ?? true,
  }, {
    tickMs: sourceSettings.tickS * 1000,
    leaseMs: sourceSettings.leaseS * 1000,
    maxItems: sourceSettings.maxItems,
    maxBytes: sourceSettings.maxBytes,
    maxPageBytes: config.fetchMaxBytes,
    timeoutMs: sourceSettings.fetchTimeoutMs,
    maxPageFetches: sourceSettings.pageFetches,
    maxBackoffS: sourceSettings.maxBackoffS,
    maxChildSitemaps: sourceSettings.childSitemaps,
  });
  const retention = new RetentionSweeper({
    kv,
    clock,
    log,
    engine: search,
    dataModels: async () => (await repos.dataModels.listAll()).filter((dm) => search.serves?.(dm.id) ?? true),
    dataModel: (id) => repos.dataModels.get(id),
  }, { intervalMs: sourceSettings.retentionSweepS * 1000, leaseMs: 10 * 60_000 });

  const parts = {
    config,
    kv,
    clock,
    log,
    duckdb,
    repos,
    apiKeys: new ApiKeyService(kv, clock),
    operatorKeys: new OperatorKeys(kv, clock),
    fetch,
    safeFetch,
    urlAnalyzer,
    links,
    images: new ImageService({
      fetcher: overrides.imageFetcher?.(safeFetch) ?? safeFetch,
      dataDir: config.dataDir,
      maxBytes: config.imageMaxBytes,
      maxDimension: config.imageMaxDimension,
      cacheMaxBytes: config.imageCacheMaxBytes,
      vipsLibPath: config.vipsLibPath,
      log,
    }),
    search,
    answer,
    mailer,
    storefront,
    events,
    analytics,
    analyticsCache: new AnalyticsCache(kv, clock, config.analyticsCacheTtlS),
    // Entries cannot go stale (their key holds the files' listing), so they may live longer than
    // answers; the memo is off when the answer cache is.
    analyticsMemo: new WindowMemo(
      new AnalyticsCache(kv, clock, config.analyticsCacheTtlS > 0 ? WINDOW_MEMO_TTL_S : 0),
      eventsDir,
    ),
    analyticsVisits: new VisitCube({
      engine: analytics,
      clock,
      log,
      dir: `${config.dataDir.replace(/\/+$/, "")}/derived/visits`,
      // One pass at a time across processes sharing the events folder; a pass over built days is cheap.
      lease: new KvLease({ kv, clock, key: ["visit_cube_lease"], owner: crypto.randomUUID(), ttlMs: 30 * 60_000 }),
    }),
    analyticsLimiter: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_analytics",
      limit: config.analyticsRateLimitPerMin,
      windowS: 60,
    }),
    searchLimiter: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_search",
      limit: config.searchRateLimitPerMin,
      windowS: 60,
    }),
    sourceCheckLimiter: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_source_checks",
      limit: config.sources.checksPerMin,
      windowS: 60,
    }),
    eventLimiters: eventLimiters(kv, clock, config.eventLimits),
    imageRenderLimiter: imageRenderLimiter(kv, clock, config.imageRendersPerMinPerAddress),
    publicReadLimiter: publicReadLimiter(kv, clock, config.publicReadsPerMinPerAddress),
    clientKeys: new ClientKeys(kv),
    clickGate: new ClickGate({
      kv,
      clock,
      perAddress: new FixedWindowLimiter(kv, clock, {
        scope: "clicks_address",
        limit: config.clicks.perAddressPerMin,
        windowS: 60,
      }),
      dedupeWindowS: config.clicks.dedupeWindowS,
      linkTtlS: config.clicks.linkTtlS,
    }),

    widgetLimits: createWidgetLimits(kv, clock, config.widget),
    payproxy,
    commerce,
    loopback,
    sources,
    poller,
    retention,
    // mppx's Web Bot Auth verifier judges signature lifetimes on the wall clock; its nonce store must too.
    webBotAuth: new WebBotAuth({
      kv,
      fetcher: safeFetch,
      log,
      signatureClockMs: () => Date.now(),
      isOwnAuthority: ownAuthorities(
        [config.baseUrl, config.agentAuthUrl],
        (host) => storefront.sellers.listsHost(host, config.storefront.defaultSellerId),
      ),
    }),
  };
  const lifecycle = new Lifecycle(parts);
  return Object.freeze({
    ...parts,
    start: (options?: StartOptions) => lifecycle.start(options),
    stop: () => lifecycle.stop(),
    [Symbol.asyncDispose]: () => lifecycle.dispose(),
  });
}
