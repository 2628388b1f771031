import { z } from "zod";
import { LOG_LEVELS } from "./log.ts";
import { paymentEnv, paymentsConfig, type StandardMethodsConfig } from "./payment_config.ts";
import { parseSearchShard, type SearchShard } from "./search/mod.ts";
import { trustedUrl } from "./trusted_url.ts";

const bool = (name: string) =>
  z.enum(["true", "false", "1", "0", "yes", "no"], { error: `${name} must be true or false` })
    .transform((v) => v === "true" || v === "1" || v === "yes");

const int = (name: string, min: number, max: number) =>
  z.string().regex(/^\d+$/, { error: `${name} must be a whole number from ${min} to ${max}` })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { error: `${name} must be a whole number from ${min} to ${max}` });

/** A DuckDB size setting such as `2GB` or `512MiB`. */
const size = (name: string, example: string) =>
  z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, {
    error: `${name} must be a size such as ${example} or 512MiB`,
  });

const url = (name: string) =>
  z.string().refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  }, { error: `${name} must be an absolute http(s) URL` }).transform((v) => v.replace(/\/+$/, ""));

/**
 * The request body read deadline's defaults (`BODY_READ_FLOOR_S`, `BODY_MIN_BYTES_PER_S`): also
 * the deadline routes/server.ts applies when it is given none.
 */
export const BODY_READ_DEFAULTS = { floorS: 20, minBytesPerS: 32 * 1024 } as const;

/**
 * Every environment variable the service reads, with its default. The README's configuration
 * table mirrors this object; keep them in step.
 */
const envSchema = z.object({
  PORT: int("PORT", 0, 65535).default(8000),
  HOST: z.string().regex(/^[A-Za-z0-9.:\[\]-]+$/, { error: "HOST must be a hostname or IP address" }).default(
    "127.0.0.1",
  ),
  DATA_DIR: z.string().min(1, { error: "DATA_DIR must not be empty" }).default("./data"),
  KV_PATH: z.string().min(1, { error: "KV_PATH must not be empty" }).optional(),
  DUCKDB_PATH: z.string().min(1, { error: "DUCKDB_PATH must not be empty" }).default(":memory:"),
  DUCKDB_THREADS: int("DUCKDB_THREADS", 1, 256).optional(),
  DUCKDB_MEMORY_LIMIT: size("DUCKDB_MEMORY_LIMIT", "2GB").optional(),
  DUCKDB_ALLOCATOR_FLUSH: size("DUCKDB_ALLOCATOR_FLUSH", "4MB").default("4MB"),
  DUCKDB_LIB_PATH: z.string().min(1).optional(),
  BASE_URL: url("BASE_URL").optional(),
  AGENT_AUTH_URL: url("AGENT_AUTH_URL").optional(),
  NETWORK_API_URL: url("NETWORK_API_URL").optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  MAX_BODY_BYTES: int("MAX_BODY_BYTES", 1024, 256 * 1024 * 1024).default(1024 * 1024),
  // A request body's read deadline: this floor, then this average rate (routes/server.ts).
  BODY_READ_FLOOR_S: int("BODY_READ_FLOOR_S", 1, 3600).default(BODY_READ_DEFAULTS.floorS),
  BODY_MIN_BYTES_PER_S: int("BODY_MIN_BYTES_PER_S", 1, 1024 * 1024 * 1024).default(BODY_READ_DEFAULTS.minBytesPerS),
  DEMO_SEED: bool("DEMO_SEED").default(true),
  // The publisher demo site (widget embed) on a second origin; "off" serves none.
  DEMO_SITE_URL: z.union([z.literal("off"), url("DEMO_SITE_URL")], {
    error: "DEMO_SITE_URL must be an absolute http(s) URL or off",
  }).default("http://127.0.0.1:8001"),
  SHUTDOWN_TIMEOUT_S: int("SHUTDOWN_TIMEOUT_S", 0, 3600).default(10),
  STOREFRONT_DEFAULT_SELLER: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, {
    error: "STOREFRONT_DEFAULT_SELLER must be a seller id (lowercase letters, digits, dashes) or none",
  }).optional(),
  TRUSTED_ISSUERS: z.string().transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: "TRUSTED_ISSUERS must be a JSON list of {issuer, jwks_url}" });
      return z.NEVER;
    }
  }).pipe(
    z.array(
      z.object({
        issuer: z.string().min(1),
        jwks_url: trustedUrl("TRUSTED_ISSUERS jwks_url"),
      }).strict(),
      { error: "TRUSTED_ISSUERS must be a JSON list of {issuer, jwks_url}" },
    ),
  ).optional(),
  ANONYMOUS_REGISTRATION: bool("ANONYMOUS_REGISTRATION").default(true),
  SERVICE_AUTH_REGISTRATION: bool("SERVICE_AUTH_REGISTRATION").default(true),
  ANONYMOUS_TTL_S: int("ANONYMOUS_TTL_S", 60, 365 * 86400).default(3 * 86400),
  ACCESS_TOKEN_TTL_S: int("ACCESS_TOKEN_TTL_S", 30, 3600).default(300),
  ASSERTION_TTL_S: int("ASSERTION_TTL_S", 60, 365 * 86400).default(7 * 86400),
  REFRESH_TOKEN_TTL_S: int("REFRESH_TOKEN_TTL_S", 3600, 3650 * 86400).default(90 * 86400),
  CLAIM_TTL_S: int("CLAIM_TTL_S", 60, 86400).default(600),
  CLAIM_MAIL_PER_ADDRESS: int("CLAIM_MAIL_PER_ADDRESS", 1, 1_000_000).default(10),
  CLAIM_MAIL_PER_SELLER: int("CLAIM_MAIL_PER_SELLER", 1, 1_000_000).default(500),
  CLAIM_MAIL_WINDOW_S: int("CLAIM_MAIL_WINDOW_S", 1, 7 * 86400).default(3600),
  SMTP_URL: z.string().regex(/^smtps?:\/\/\S+$/, { error: "SMTP_URL must be an smtp:// or smtps:// URL" }).optional(),
  MAIL_FROM: z.string().regex(/^[^\s@<>]+@[^\s@<>]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/, {
    error: "MAIL_FROM must be an e-mail address, optionally as Name <address>",
  }).optional(),
  MAIL_OUTBOX: bool("MAIL_OUTBOX").default(false),
  TRUST_PROXY: int("TRUST_PROXY", 0, 10).default(0),
  STOREFRONT_RATE_LIMIT: int("STOREFRONT_RATE_LIMIT", 1, 1_000_000).default(30),
  STOREFRONT_RATE_WINDOW_S: int("STOREFRONT_RATE_WINDOW_S", 1, 86400).default(60),
  PUBLIC_READS_PER_MIN_PER_ADDRESS: int("PUBLIC_READS_PER_MIN_PER_ADDRESS", 1, 1_000_000).default(600),
  ALLOW_PRIVATE_URLS: bool("ALLOW_PRIVATE_URLS").default(false),
  FETCH_TIMEOUT_MS: int("FETCH_TIMEOUT_MS", 100, 60_000).default(5000),
  FETCH_MAX_BYTES: int("FETCH_MAX_BYTES", 1024, 64 * 1024 * 1024).default(2 * 1024 * 1024),
  PAGE_ANALYSIS_WORKERS: int("PAGE_ANALYSIS_WORKERS", 1, 64).default(2),
  PAGE_ANALYSIS_TIMEOUT_MS: int("PAGE_ANALYSIS_TIMEOUT_MS", 100, 60_000).default(5000),
  PAGE_ANALYSIS_QUEUE: int("PAGE_ANALYSIS_QUEUE", 1, 10_000).default(32),
  PAGE_ANALYSIS_QUEUE_PER_CALLER: int("PAGE_ANALYSIS_QUEUE_PER_CALLER", 1, 10_000).default(8),
  IMAGE_MAX_BYTES: int("IMAGE_MAX_BYTES", 1024, 64 * 1024 * 1024).default(10 * 1024 * 1024),
  IMAGE_MAX_DIMENSION: int("IMAGE_MAX_DIMENSION", 16, 8192).default(2048),
  IMAGE_RENDERS_PER_MIN_PER_ADDRESS: int("IMAGE_RENDERS_PER_MIN_PER_ADDRESS", 1, 1_000_000).default(120),
  WIDGET_RATE_LIMIT_PER_ADDRESS: int("WIDGET_RATE_LIMIT_PER_ADDRESS", 1, 1_000_000).default(30),
  WIDGET_RATE_LIMIT_PER_WIDGET: int("WIDGET_RATE_LIMIT_PER_WIDGET", 1, 10_000_000).default(600),
  WIDGET_RATE_WINDOW_S: int("WIDGET_RATE_WINDOW_S", 1, 86_400).default(60),
  WIDGET_DAILY_ANSWER_CAP: int("WIDGET_DAILY_ANSWER_CAP", 0, 10_000_000).default(5000),
  WIDGETS_MAX_PER_TENANT: int("WIDGETS_MAX_PER_TENANT", 1, 100_000).default(100),
  WIDGET_MAX_BODY_BYTES: int("WIDGET_MAX_BODY_BYTES", 1024, 1024 * 1024).default(16 * 1024),
  VIPS_LIB_PATH: z.string().min(1).optional(),
  IMAGE_CACHE_MAX_BYTES: int("IMAGE_CACHE_MAX_BYTES", 0, 1024 * 1024 * 1024 * 1024).default(1024 * 1024 * 1024),
  ANALYTICS_CACHE_TTL_S: int("ANALYTICS_CACHE_TTL_S", 0, 86_400).default(1800),
  ANALYTICS_RATE_LIMIT_PER_MIN: int("ANALYTICS_RATE_LIMIT_PER_MIN", 1, 1_000_000).default(60),
  SEARCH_RATE_LIMIT_PER_MIN: int("SEARCH_RATE_LIMIT_PER_MIN", 1, 10_000_000).default(600),
  EVENTS_FLUSHER: bool("EVENTS_FLUSHER").default(true),
  EVENTS_FLUSH_INTERVAL_S: int("EVENTS_FLUSH_INTERVAL_S", 1, 3600).default(10),
  EVENTS_FLUSH_MAX_EVENTS: int("EVENTS_FLUSH_MAX_EVENTS", 1, 10_000_000).default(50_000),
  EVENTS_COMPACT_MIN_FILES: int("EVENTS_COMPACT_MIN_FILES", 2, 100_000).default(24),
  EVENTS_FLUSH_LEASE_S: int("EVENTS_FLUSH_LEASE_S", 1, 3600).default(15),
  EVENTS_WAL_MAX_BYTES: int("EVENTS_WAL_MAX_BYTES", 65_536, 2 ** 40).default(256 * 1024 * 1024),
  EVENTS_WAL_TENANT_SHARE_PCT: int("EVENTS_WAL_TENANT_SHARE_PCT", 1, 100).default(25),
  EVENTS_MAX_BODY_BYTES: int("EVENTS_MAX_BODY_BYTES", 1024, 256 * 1024 * 1024).default(8 * 1024 * 1024),
  EVENTS_PER_MIN_PER_ADDRESS: int("EVENTS_PER_MIN_PER_ADDRESS", 1, 100_000_000).default(1200),
  EVENTS_PER_MIN_PER_WIDGET: int("EVENTS_PER_MIN_PER_WIDGET", 1, 100_000_000).default(60_000),
  EVENTS_PER_DAY_PER_WIDGET: int("EVENTS_PER_DAY_PER_WIDGET", 1, 1_000_000_000).default(5_000_000),
  CLICKS_PER_MIN_PER_ADDRESS: int("CLICKS_PER_MIN_PER_ADDRESS", 1, 1_000_000).default(30),
  CLICK_DEDUPE_WINDOW_S: int("CLICK_DEDUPE_WINDOW_S", 1, 86_400).default(1800),
  CLICK_LINK_TTL_S: int("CLICK_LINK_TTL_S", 60, 365 * 86_400).default(7 * 86_400),
  EMBEDDINGS_PROVIDER: z.enum(["local", "openai"], { error: "EMBEDDINGS_PROVIDER must be local or openai" })
    .default("local"),
  EMBEDDINGS_BASE_URL: url("EMBEDDINGS_BASE_URL").optional(),
  EMBEDDINGS_MODEL: z.string().min(1).max(200).default("text-embedding-3-small"),
  EMBEDDINGS_API_KEY: z.string().min(1).optional(),
  EMBEDDINGS_CACHE_PATH: z.string().min(1).optional(),
  WORD_VECTORS_PATH: z.string().min(1).optional(),
  SEARCH_VECTOR_WEIGHT: z.coerce.number({ error: "SEARCH_VECTOR_WEIGHT must be a number from 0 to 1" })
    .min(0, { error: "SEARCH_VECTOR_WEIGHT must be a number from 0 to 1" })
    .max(1, { error: "SEARCH_VECTOR_WEIGHT must be a number from 0 to 1" }).default(0.15),
  ARTICLES_MAX_BODY_BYTES: int("ARTICLES_MAX_BODY_BYTES", 1024, 1024 * 1024 * 1024).default(32 * 1024 * 1024),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: url("OPENAI_BASE_URL").default("https://api.openai.com/v1"),
  OPENAI_TIMEOUT_MS: int("OPENAI_TIMEOUT_MS", 1, 600_000).default(30_000),
  OPENAI_MAX_RETRIES: int("OPENAI_MAX_RETRIES", 0, 10).default(2),
  PAYPROXY_SKEW_S: int("PAYPROXY_SKEW_S", 1, 3600).default(300),
  ALLOWANCE_TIMEOUT_MS: int("ALLOWANCE_TIMEOUT_MS", 50, 60_000).default(2000),
  ALLOWANCE_CACHE_MS: int("ALLOWANCE_CACHE_MS", 0, 60_000).default(1000),
  SOURCES_POLLER: bool("SOURCES_POLLER").default(true),
  SOURCES_MAX_PER_DATA_MODEL: int("SOURCES_MAX_PER_DATA_MODEL", 1, 1000).default(20),
  SOURCE_MIN_INTERVAL_S: int("SOURCE_MIN_INTERVAL_S", 1, 86_400).default(60),
  SOURCE_LEASE_S: int("SOURCE_LEASE_S", 5, 3600).default(60),
  SOURCE_MAX_ITEMS: int("SOURCE_MAX_ITEMS", 1, 1000).default(100),
  SOURCE_MAX_BYTES: int("SOURCE_MAX_BYTES", 1024, 64 * 1024 * 1024).default(5 * 1024 * 1024),
  SOURCE_PAGE_FETCHES: int("SOURCE_PAGE_FETCHES", 0, 1000).default(20),
  SOURCE_CHILD_SITEMAPS: int("SOURCE_CHILD_SITEMAPS", 1, 50).default(3),
  SOURCE_MAX_BACKOFF_S: int("SOURCE_MAX_BACKOFF_S", 60, 7 * 86_400).default(6 * 3600),
  SOURCE_PARSE_WORKERS: int("SOURCE_PARSE_WORKERS", 1, 64).default(1),
  SOURCE_PARSE_TIMEOUT_MS: int("SOURCE_PARSE_TIMEOUT_MS", 100, 120_000).default(10_000),
  SOURCE_FETCH_TIMEOUT_MS: int("SOURCE_FETCH_TIMEOUT_MS", 100, 600_000).default(10_000),
  SOURCE_CHECKS_PER_MIN: int("SOURCE_CHECKS_PER_MIN", 1, 10_000).default(20),
  POLLER_TICK_S: int("POLLER_TICK_S", 1, 3600).default(5),
  RETENTION_SWEEP_S: int("RETENTION_SWEEP_S", 10, 7 * 86_400).default(3600),
  SEARCH_SHARD: z.string().max(10_000, { error: "SEARCH_SHARD is too long" }).optional(),
  PAID_PROXY_UPSTREAM: z.enum(["inprocess", "http"], { error: "PAID_PROXY_UPSTREAM must be inprocess or http" })
    .default("inprocess"),
  ...paymentEnv,
});

/** A trusted identity provider: ID-JAGs whose `iss` equals `issuer` are verified against `jwksUrl`. */
export interface TrustedIssuer {
  issuer: string;
  jwksUrl: string;
}

/** Settings of mppx's standard payment methods (`evm` with x402, `stripe`); each is off until configured. */
export type PaymentsConfig = StandardMethodsConfig;

/** The parsed configuration the app is built from. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** A file path, `:memory:`, or a KV Connect URL. */
  kvPath: string;
  duckdbPath: string;
  duckdbThreads?: number;
  duckdbMemoryLimit?: string;
  /** DuckDB returns its allocator's cached memory to the system after freeing more than this at once. */
  duckdbAllocatorFlush: string;
  /** `libduckdb.so` to preload (compiled binaries); default: beside the executable. */
  duckdbLibPath?: string;
  baseUrl: string;
  agentAuthUrl: string;
  networkApiUrl: string;
  logLevel: (typeof LOG_LEVELS)[number];
  maxBodyBytes: number;
  /** A request body may take `floorMs`, then as long as it keeps `minBytesPerS` on average. */
  bodyReadDeadline: { floorMs: number; minBytesPerS: number };
  demoSeed: boolean;
  /** Origin of the publisher demo site (`deno task start` serves it with the demo seed); null: none. */
  demoSiteUrl: string | null;
  shutdownTimeoutS: number;
  /** Storefront settings (spec sections 3, 5.3 and 8). */
  storefront: {
    /** Seller that answers hosts with no seller of their own; null: unknown hosts get `seller_not_found`. */
    defaultSellerId: string | null;
    trustedIssuers: TrustedIssuer[];
    anonymousRegistration: boolean;
    serviceAuthRegistration: boolean;
    anonymousTtlS: number;
    accessTokenTtlS: number;
    assertionTtlS: number;
    refreshTokenTtlS: number;
    claimTtlS: number;
    /** Claim e-mails per window to one address, and from one seller (whatever the claim or client address). */
    claimMail: { perAddress: number; perSeller: number; windowS: number };
    rateLimit: number;
    rateWindowS: number;
  };
  /**
   * Outgoing mail: SMTP when `smtpUrl` is set; otherwise the KV outbox (`/dev/outbox`, operator
   * key required) when `outbox` is on; otherwise none (claims answer 503 `mail_unavailable`).
   */
  mail: { smtpUrl: string | null; from: string; outbox: boolean };
  /** How many reverse proxies sit in front; 0 ignores `X-Forwarded-For`. */
  trustProxy: number;
  /** Let user-supplied URLs reach loopback, private, CGNAT and unique-local addresses (tests, demo). */
  allowPrivateUrls: boolean;
  /** Deadline for fetching a user-supplied URL, redirects included. */
  fetchTimeoutMs: number;
  /** Largest page body read for a URL query. */
  fetchMaxBytes: number;
  /** Page analysis pool (URL queries and the poller's article pages); see docs/security.md. */
  pageAnalysis: {
    workers: number;
    /** Deadline of one page: its wait in the queue and its run. */
    timeoutMs: number;
    /** Most pages waiting, all callers together; past it, 503 with Retry-After. */
    maxQueued: number;
    /** Most pages one caller may have waiting. */
    maxQueuedPerCaller: number;
  };
  /** Largest origin image read by the image endpoint. */
  imageMaxBytes: number;
  /** Largest `w` or `h` the image endpoint accepts (the smallest is 16). */
  imageMaxDimension: number;
  /** Images the image endpoint renders (cache misses) per client address per minute. */
  imageRendersPerMinPerAddress: number;
  /**
   * Requests per client address per minute to each public storefront family with no limit of its own:
   * payment status (`statusUrl`), the checkout page, the catalog documents, and what a free anonymous
   * identity opens (the agent's entitlements and balance, the jwt-bearer exchange).
   */
  publicReadsPerMinPerAddress: number;
  /** Bounds of the public widget routes `/widget/v1/{wd}/...` (docs/widget.md, "Limits"). */
  widget: {
    /** Requests per client address per window, over every widget. */
    ratePerAddress: number;
    /** Requests per widget per window, over every address. */
    ratePerWidget: number;
    rateWindowS: number;
    /** Answers per widget per UTC day when the widget sets no cap of its own. */
    dailyAnswerCap: number;
    /** Largest request body. */
    maxBodyBytes: number;
    /** Most widgets one tenant may create through `POST /v1/widgets`. */
    maxPerTenant: number;
  };
  /** Disk budget of the resized-image cache under `DATA_DIR/images`; 0 disables the cache. */
  imageCacheMaxBytes: number;
  /** `libvips-cpp.so` to preload before sharp (compiled binaries); default: beside the executable. */
  vipsLibPath?: string;
  /** Analytics answer cache lifetime in seconds; 0 disables the cache. */
  analyticsCacheTtlS: number;
  /** Analytics requests allowed per API key per minute. */
  analyticsRateLimitPerMin: number;
  /** Bearer search and real-time requests (`/app/...`) allowed per API key per minute. */
  searchRateLimitPerMin: number;
  /** Whether this process runs the event flusher (exactly one process per shared KV should). */
  eventsFlusher: boolean;
  /** Event WAL flush period in seconds. */
  eventsFlushIntervalS: number;
  /** Flush as soon as this many events wait in the WAL. */
  eventsFlushMaxEvents: number;
  /** Compact a day's Parquet files once there are this many. */
  eventsCompactMinFiles: number;
  /** Lifetime of the flusher lease: a dead flusher is replaced after this long. */
  eventsFlushLeaseS: number;
  /** Largest `POST /v1/events` body. */
  eventsMaxBodyBytes: number;
  /** Most bytes the event write-ahead log may hold; past it new batches are refused (503). */
  eventsWalMaxBytes: number;
  /** Most bytes of that log one tenant's events may take; past it its batches are refused (503). */
  eventsWalTenantMaxBytes: number;
  /** Limits of widget events on `POST /v1/events` (per address, per widget, daily per widget). */
  eventLimits: { perAddressPerMin: number; perWidgetPerMin: number; perWidgetPerDay: number };
  /** Counting of tracking-link clicks (`/r/{token}`): per-address limit, dedupe window, link lifetime. */
  clicks: { perAddressPerMin: number; dedupeWindowS: number; linkTtlS: number };
  /** Article embeddings: local word vectors, or an OpenAI-compatible `/v1/embeddings` server. */
  embeddings: {
    provider: "local" | "openai";
    baseUrl?: string;
    model: string;
    apiKey?: string;
    /** Binary word-vector cache (local provider); default under DATA_DIR. */
    cachePath?: string;
    /** The package JSON the cache is converted from; default in node_modules. */
    wordVectorsPath?: string;
    /** Vector weight of the default (`v2`) search ranking, 0..1 (docs/relevance.md). */
    searchVectorWeight: number;
  };
  /** Body limit of the bulk article upsert route. */
  articlesMaxBodyBytes: number;
  /** The OpenAI-compatible chat provider of `openai` AI models. */
  openai: OpenAiConfig;
  /** Payproxy signature timestamp tolerance, seconds either side of the server clock (spec: 300). */
  payproxySkewS: number;
  /** How long the payproxy allowance call may take before it fails open. */
  allowanceTimeoutMs: number;
  /** How long a definite `allowed: true` is reused for the same agent and service; 0: ask every time. */
  allowanceCacheMs: number;
  /**
   * How the storefront's paid proxy reaches `BASE_URL/payproxy/...` when it is this process:
   * `inprocess` (no network hop) or `http` (always through `fetch`).
   */
  paidProxyUpstream: "inprocess" | "http";
  /** mppx's standard payment methods (docs/storefront.md, "Stock clients"). */
  payments: PaymentsConfig;
  /** The data models whose indexes this process builds and serves; null: all (docs/operations.md, "Search shards"). */
  searchShard: SearchShard | null;
  /** Content sources (docs/sources.md): registration limits, poller and retention schedule. */
  sources: {
    /** Whether this process polls sources (every process may: leases share the work). */
    poller: boolean;
    maxPerDataModel: number;
    minIntervalS: number;
    leaseS: number;
    maxItems: number;
    maxBytes: number;
    pageFetches: number;
    /** Most child sitemaps read per poll of a sitemap index. */
    childSitemaps: number;
    maxBackoffS: number;
    /** Workers parsing source documents off the main thread. */
    parseWorkers: number;
    /** Deadline of parsing one source document, its wait included. */
    parseTimeoutMs: number;
    /** Deadline of fetching one source document, its body included. */
    fetchTimeoutMs: number;
    /** Registrations (`POST .../sources`, each one probe fetch) per API key per minute. */
    checksPerMin: number;
    tickS: number;
    retentionSweepS: number;
  };
}

/** Settings of the OpenAI-compatible provider (OpenAI, Ollama, vLLM). */
export interface OpenAiConfig {
  /** Sent as `Authorization: Bearer`; absent for servers that need none (Ollama). Never logged. */
  apiKey?: string;
  /** Base address including the version segment, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Per-attempt deadline for a chat completion. */
  timeoutMs: number;
  /** Retries after a 429, a 5xx or a network failure. */
  maxRetries: number;
}

/** Raised when the environment does not parse; its message is one line naming the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment into a {@link Config}.
 * Unknown variables are ignored; empty strings count as unset.
 * @throws {ConfigError} with a one-line message naming the first bad variable (never its value).
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") present[key] = v;
  }
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? "environment");
    const message = issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`;
    throw new ConfigError(`Invalid configuration: ${message}`);
  }
  const e = parsed.data;
  if (e.EMBEDDINGS_PROVIDER === "openai" && !e.EMBEDDINGS_BASE_URL) {
    throw new ConfigError("Invalid configuration: EMBEDDINGS_BASE_URL is required when EMBEDDINGS_PROVIDER is openai");
  }
  let searchShard: SearchShard | null;
  try {
    searchShard = parseSearchShard(e.SEARCH_SHARD);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${(err as Error).message}`);
  }
  const baseUrl = e.BASE_URL ?? `http://${e.HOST === "0.0.0.0" ? "127.0.0.1" : e.HOST}:${e.PORT}`;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    kvPath: e.KV_PATH ?? `${e.DATA_DIR.replace(/\/+$/, "")}/kv.sqlite3`,
    duckdbPath: e.DUCKDB_PATH,
    duckdbThreads: e.DUCKDB_THREADS,
    duckdbMemoryLimit: e.DUCKDB_MEMORY_LIMIT,
    duckdbAllocatorFlush: e.DUCKDB_ALLOCATOR_FLUSH,
    duckdbLibPath: e.DUCKDB_LIB_PATH,
    baseUrl,
    agentAuthUrl: e.AGENT_AUTH_URL ?? baseUrl,
    networkApiUrl: e.NETWORK_API_URL ?? `${baseUrl}/network`,
    logLevel: e.LOG_LEVEL,
    maxBodyBytes: e.MAX_BODY_BYTES,
    bodyReadDeadline: { floorMs: e.BODY_READ_FLOOR_S * 1000, minBytesPerS: e.BODY_MIN_BYTES_PER_S },
    demoSeed: e.DEMO_SEED,
    demoSiteUrl: e.DEMO_SITE_URL === "off" ? null : new URL(e.DEMO_SITE_URL).origin,
    shutdownTimeoutS: e.SHUTDOWN_TIMEOUT_S,
    storefront: {
      // The embedded default (no AGENT_AUTH_URL) lets the demo seller answer any host.
      defaultSellerId: e.STOREFRONT_DEFAULT_SELLER === "none"
        ? null
        : e.STOREFRONT_DEFAULT_SELLER ?? (e.AGENT_AUTH_URL ? null : "demo"),
      trustedIssuers: (e.TRUSTED_ISSUERS ?? []).map((t) => ({ issuer: t.issuer, jwksUrl: t.jwks_url })),
      anonymousRegistration: e.ANONYMOUS_REGISTRATION,
      serviceAuthRegistration: e.SERVICE_AUTH_REGISTRATION,
      anonymousTtlS: e.ANONYMOUS_TTL_S,
      accessTokenTtlS: e.ACCESS_TOKEN_TTL_S,
      assertionTtlS: e.ASSERTION_TTL_S,
      refreshTokenTtlS: e.REFRESH_TOKEN_TTL_S,
      claimTtlS: e.CLAIM_TTL_S,
      claimMail: {
        perAddress: e.CLAIM_MAIL_PER_ADDRESS,
        perSeller: e.CLAIM_MAIL_PER_SELLER,
        windowS: e.CLAIM_MAIL_WINDOW_S,
      },
      rateLimit: e.STOREFRONT_RATE_LIMIT,
      rateWindowS: e.STOREFRONT_RATE_WINDOW_S,
    },
    mail: {
      smtpUrl: e.SMTP_URL ?? null,
      from: e.MAIL_FROM ?? "Storefront <no-reply@storefront.invalid>",
      outbox: e.MAIL_OUTBOX,
    },
    trustProxy: e.TRUST_PROXY,
    allowPrivateUrls: e.ALLOW_PRIVATE_URLS,
    fetchTimeoutMs: e.FETCH_TIMEOUT_MS,
    fetchMaxBytes: e.FETCH_MAX_BYTES,
    pageAnalysis: {
      workers: e.PAGE_ANALYSIS_WORKERS,
      timeoutMs: e.PAGE_ANALYSIS_TIMEOUT_MS,
      maxQueued: e.PAGE_ANALYSIS_QUEUE,
      maxQueuedPerCaller: e.PAGE_ANALYSIS_QUEUE_PER_CALLER,
    },
    imageMaxBytes: e.IMAGE_MAX_BYTES,
    imageMaxDimension: e.IMAGE_MAX_DIMENSION,
    imageRendersPerMinPerAddress: e.IMAGE_RENDERS_PER_MIN_PER_ADDRESS,
    publicReadsPerMinPerAddress: e.PUBLIC_READS_PER_MIN_PER_ADDRESS,
    widget: {
      ratePerAddress: e.WIDGET_RATE_LIMIT_PER_ADDRESS,
      ratePerWidget: e.WIDGET_RATE_LIMIT_PER_WIDGET,
      rateWindowS: e.WIDGET_RATE_WINDOW_S,
      dailyAnswerCap: e.WIDGET_DAILY_ANSWER_CAP,
      maxBodyBytes: e.WIDGET_MAX_BODY_BYTES,
      maxPerTenant: e.WIDGETS_MAX_PER_TENANT,
    },
    imageCacheMaxBytes: e.IMAGE_CACHE_MAX_BYTES,
    vipsLibPath: e.VIPS_LIB_PATH,
    analyticsCacheTtlS: e.ANALYTICS_CACHE_TTL_S,
    analyticsRateLimitPerMin: e.ANALYTICS_RATE_LIMIT_PER_MIN,
    searchRateLimitPerMin: e.SEARCH_RATE_LIMIT_PER_MIN,
    eventsFlusher: e.EVENTS_FLUSHER,
    eventsFlushIntervalS: e.EVENTS_FLUSH_INTERVAL_S,
    eventsFlushMaxEvents: e.EVENTS_FLUSH_MAX_EVENTS,
    eventsCompactMinFiles: e.EVENTS_COMPACT_MIN_FILES,
    eventsFlushLeaseS: e.EVENTS_FLUSH_LEASE_S,
    eventsMaxBodyBytes: e.EVENTS_MAX_BODY_BYTES,
    eventsWalMaxBytes: e.EVENTS_WAL_MAX_BYTES,
    eventsWalTenantMaxBytes: Math.floor(e.EVENTS_WAL_MAX_BYTES * e.EVENTS_WAL_TENANT_SHARE_PCT / 100),
    eventLimits: {
      perAddressPerMin: e.EVENTS_PER_MIN_PER_ADDRESS,
      perWidgetPerMin: e.EVENTS_PER_MIN_PER_WIDGET,
      perWidgetPerDay: e.EVENTS_PER_DAY_PER_WIDGET,
    },
    clicks: {
      perAddressPerMin: e.CLICKS_PER_MIN_PER_ADDRESS,
      dedupeWindowS: e.CLICK_DEDUPE_WINDOW_S,
      linkTtlS: e.CLICK_LINK_TTL_S,
    },
    embeddings: {
      provider: e.EMBEDDINGS_PROVIDER,
      baseUrl: e.EMBEDDINGS_BASE_URL,
      model: e.EMBEDDINGS_MODEL,
      apiKey: e.EMBEDDINGS_API_KEY,
      cachePath: e.EMBEDDINGS_CACHE_PATH,
      wordVectorsPath: e.WORD_VECTORS_PATH,
      searchVectorWeight: e.SEARCH_VECTOR_WEIGHT,
    },
    articlesMaxBodyBytes: e.ARTICLES_MAX_BODY_BYTES,
    openai: {
      apiKey: e.OPENAI_API_KEY,
      baseUrl: e.OPENAI_BASE_URL,
      timeoutMs: e.OPENAI_TIMEOUT_MS,
      maxRetries: e.OPENAI_MAX_RETRIES,
    },
    payproxySkewS: e.PAYPROXY_SKEW_S,
    payments: paymentsConfig(e),
    allowanceTimeoutMs: e.ALLOWANCE_TIMEOUT_MS,
    allowanceCacheMs: e.ALLOWANCE_CACHE_MS,
    paidProxyUpstream: e.PAID_PROXY_UPSTREAM,
    searchShard,
    sources: {
      poller: e.SOURCES_POLLER,
      maxPerDataModel: e.SOURCES_MAX_PER_DATA_MODEL,
      minIntervalS: e.SOURCE_MIN_INTERVAL_S,
      leaseS: e.SOURCE_LEASE_S,
      maxItems: e.SOURCE_MAX_ITEMS,
      maxBytes: e.SOURCE_MAX_BYTES,
      pageFetches: e.SOURCE_PAGE_FETCHES,
      childSitemaps: e.SOURCE_CHILD_SITEMAPS,
      maxBackoffS: e.SOURCE_MAX_BACKOFF_S,
      parseWorkers: e.SOURCE_PARSE_WORKERS,
      parseTimeoutMs: e.SOURCE_PARSE_TIMEOUT_MS,
      fetchTimeoutMs: e.SOURCE_FETCH_TIMEOUT_MS,
      checksPerMin: e.SOURCE_CHECKS_PER_MIN,
      tickS: e.POLLER_TICK_S,
      retentionSweepS: e.RETENTION_SWEEP_S,
    },
  };
}
