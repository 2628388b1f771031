import type { AnalyticsDb } from "../analytics/duckdb.ts";
import { AnalyticsCache } from "../analytics/cache.ts";
import { AnalyticsEngine } from "../analytics/engine.ts";
import { FixedWindowLimiter } from "./rate_limit.ts";
import { EventPipeline, type EventSink } from "../analytics/events.ts";
import type { AnswerService } from "./answer/types.ts";
import { answerServiceFor } from "./answer/wiring.ts";
import type { SearchService } from "./search/types.ts";
import type { UrlAnalyzer } from "./search/url_analyzer.ts";
import { SignedLinks } from "./search/tracking.ts";
import { WebPageAnalyzer } from "./extract/analyzer.ts";
import { ImageService } from "./images/image_service.ts";
import { Loopback } from "./net/loopback.ts";
import { SafeFetcher } from "./net/safe_fetch.ts";
import { SearchEngine } from "./search/engine.ts";
import { AnalyticsQuerySource } from "./search/analytics_queries.ts";
import type { EmbeddingProvider } from "./search/embeddings/provider.ts";
import { OpenAiEmbeddings } from "./search/embeddings/openai.ts";
import { defaultCacheName, LocalEmbeddings } from "./search/embeddings/wink.ts";
import { ApiKeyService } from "./auth/api_keys.ts";
import { OperatorKeys } from "./auth/operator_keys.ts";
import type { Clock } from "./clock.ts";
import { type Commerce, createCommerce } from "./commerce/mod.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { createRepos, type Repos } from "./store/repos.ts";
import type { Mailer } from "./storefront/mailer.ts";
import { createMailer, createStorefront, type Storefront } from "./storefront/service.ts";
import { createPayproxyServices, type PayproxyServices } from "./payproxy/mod.ts";

/**
 * Everything the app is built from. `main.ts` makes the real one; tests make one with `:memory:`
 * KV, a temp data dir, a fixed clock and local peers (tests/_helpers.ts).
 */
export interface Deps {
  config: Config;
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  repos: Repos;
  apiKeys: ApiKeyService;
  /** Operator credentials (outbox, payproxy metrics). */
  operatorKeys: OperatorKeys;
  duckdb: AnalyticsDb;
  /** Outbound HTTP; injected so tests can point it at local peers. */
  fetch: typeof fetch;
  /** SSRF-guarded fetching of user-supplied URLs (URL queries, feed imports, image origins). */
  safeFetch: SafeFetcher;
  /** Fetches, extracts and summarises URL queries. */
  urlAnalyzer: UrlAnalyzer;
  /** Signed `source_url` / `image_url` links; `init()` loads its keys at start. */
  links: SignedLinks;
  /** Resized article images behind `/img`. */
  images: ImageService;
  /** Article search, as the routes and the answer engine call it; assembleDeps sets it to `searchEngine`. */
  search?: SearchService;
  /**
   * The engine behind `search`: article ingestion, index lifecycle (`start()` builds the indexes
   * from KV, `watch()` follows other processes' ingests) and the link / URL-analysis seams.
   */
  searchEngine: SearchEngine;
  /** Real-time answers. */
  answer?: AnswerService;
  /** Outgoing e-mail: SMTP (SMTP_URL) or the KV outbox. */
  mailer: Mailer;
  /** Agent storefront: sellers, identities, claims, tokens. */
  storefront: Storefront;
  /**
   * Analytics event sink: other rooms call `deps.events.record([...])`. The analytics
   * pipeline by default; tests may swap in their own sink.
   */
  events: EventSink;
  /** The analytics pipeline behind `events`: ingestion, WAL flusher (started and stopped by main.ts). */
  eventPipeline: EventPipeline;
  /** Analytics query engine over the Parquet event files. */
  analytics: AnalyticsEngine;
  /** Answers of the analytics rollups, cached in KV per tenant and filters. */
  analyticsCache: AnalyticsCache;
  /** Requests per API key per minute on the analytics rollups. */
  analyticsLimiter: FixedWindowLimiter;
  /** Payproxy signing secrets, signature verifier, allowance client and counters. */
  payproxy: PayproxyServices;
  /** Plans, payments, entitlements and the paid proxy. */
  commerce: Commerce;
  /** This process's own routes; createApp binds them (the paid proxy's in-process upstream). */
  loopback: Loopback;
}

/** The parts of {@link Deps} that are opened (stores) or chosen (clock, log, fetch) by the caller. */
export interface DepsInputs {
  config: Config;
  kv: Deno.Kv;
  duckdb: AnalyticsDb;
  clock: Clock;
  log: Logger;
  fetch?: typeof fetch;
  /** Overrides the mailer chosen from the config. */
  mailer?: Mailer;
  /** Replaces the SSRF-guarded fetcher built from config (tests inject resolvers or policies). */
  safeFetch?: SafeFetcher;
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
 * Wires the services over already-open stores. Pure: no I/O, no environment, no wall clock.
 * The caller then awaits {@link startDeps} before serving.
 */
export function assembleDeps(inputs: DepsInputs): Deps {
  const { config, kv, clock, log } = inputs;
  const fetch = inputs.fetch ?? globalThis.fetch;
  const mailer = inputs.mailer ?? createMailer(config, kv, clock);
  const safeFetch = inputs.safeFetch ?? new SafeFetcher({
    allowPrivate: config.allowPrivateUrls,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.fetchMaxBytes,
  });
  const repos = createRepos(kv);
  const eventsDir = `${config.dataDir.replace(/\/+$/, "")}/events`;
  const analytics = new AnalyticsEngine(inputs.duckdb, eventsDir);
  const events = new EventPipeline({ ...inputs, repos }, {
    eventsDir,
    flushIntervalMs: config.eventsFlushIntervalS * 1000,
    flushMaxEvents: config.eventsFlushMaxEvents,
    compactMinFiles: config.eventsCompactMinFiles,
    leaseMs: config.eventsFlushLeaseS * 1000,
  });
  events.onFlushed(() => analytics.refresh());
  const urlAnalyzer = new WebPageAnalyzer({ fetcher: safeFetch, clock });
  const links = new SignedLinks({ kv, clock, baseUrl: config.baseUrl });
  const searchEngine = new SearchEngine({
    kv,
    clock,
    log,
    embeddings: embeddingProvider(config, fetch),
    vectorWeight: config.embeddings.searchVectorWeight,
    links,
    urlAnalyzer,
    // Trending keywords from Ask AI query events; the engine falls back to its own query log.
    querySource: new AnalyticsQuerySource(analytics, repos),
  });
  const storefront = createStorefront({ ...inputs, fetch, mailer });
  const payproxy = createPayproxyServices({ ...inputs, fetch });
  const loopback = new Loopback();
  const baseOrigin = new URL(config.baseUrl).origin;
  const deps: Deps = {
    ...inputs,
    repos,
    apiKeys: new ApiKeyService(kv, clock),
    operatorKeys: new OperatorKeys(kv, clock),
    fetch,
    mailer,
    storefront,
    commerce: createCommerce({
      ...inputs,
      repos,
      sellers: storefront.sellers,
      secrets: payproxy.secrets,
      credentialsOfHuman: (humanId) => storefront.accounts.credentialIds(humanId),
      // Paid calls to this process's own payproxy routes skip the network hop unless told not to.
      upstream: (req) =>
        config.paidProxyUpstream === "inprocess" && new URL(req.url).origin === baseOrigin
          ? loopback.fetch(req)
          : fetch(req),
    }),
    loopback,
    safeFetch,
    urlAnalyzer,
    links,
    search: searchEngine,
    searchEngine,
    images: new ImageService({
      fetcher: safeFetch,
      dataDir: config.dataDir,
      maxBytes: config.imageMaxBytes,
      maxDimension: config.imageMaxDimension,
      cacheMaxBytes: config.imageCacheMaxBytes,
      vipsLibPath: config.vipsLibPath,
      log,
    }),
    events,
    eventPipeline: events,
    analytics,
    analyticsCache: new AnalyticsCache(kv, clock, config.analyticsCacheTtlS),
    analyticsLimiter: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_analytics",
      limit: config.analyticsRateLimitPerMin,
      windowS: 60,
    }),
    payproxy,
  };
  deps.answer = answerServiceFor(deps);
  return deps;
}

/** The asynchronous half of start-up: loads what services need from the stores (link keys). */
export async function startDeps(deps: Deps): Promise<void> {
  await deps.links.init();
}

/** Releases what the services hold beyond the stores (the page-extraction worker). Idempotent. */
export function stopDeps(deps: Deps): void {
  deps.urlAnalyzer.close?.();
}
