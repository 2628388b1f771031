/**
 * The search contract shared by the bearer route (`/app/v2/search`), the payproxy route
 * (`/payproxy/v2/search`) and the answer engine. Implemented in core/search/.
 */
import { z } from "zod";
import type { DataModel } from "../store/mod.ts";
import { searchFilterFields } from "./rank/filters.ts";
import type { Highlight } from "./rank/highlights.ts";
import type { LinkPlacement } from "../links/mod.ts";
import { resultOptionFields } from "./result_options.ts";

export const SEARCH_ALGORITHMS = ["semantic", "most_recent", "most_recent_semantic", "trending"] as const;
export type SearchAlgorithm = (typeof SEARCH_ALGORITHMS)[number];

/** SearchRequest body (spec 2.1). Unknown extra fields are accepted; `ref: null` or `""` means none. */
export const searchRequestSchema = z.object({
  query: z.string({ error: "must be a string" }).trim().min(1, { error: "query cannot be empty" }),
  similarity_top_k: z.number().int().min(1).max(1000).optional(),
  ref: z.string().nullish(),
  num_articles_ref: z.number().int().min(0).max(1000).optional(),
  /** Payproxy only: forwarded to the retrieval pipeline. */
  search_type: z.string().optional(),
  search_algorithm: z.enum(SEARCH_ALGORITHMS).optional(),
  page: z.number().int().min(1).max(10_000).optional(),
  num_results: z.number().int().min(1).max(1000).optional(),
  ...searchFilterFields,
  ...resultOptionFields,
}).loose();
export type SearchRequest = z.infer<typeof searchRequestSchema>;

/** Why a result ranked where it did (`explain: true`). */
export interface SearchExplain {
  /** Query terms (stemmed, as indexed) the article contains. */
  matched_terms: string[];
  /** Raw BM25 score of the article for the query terms. */
  lexical_score: number;
  /** Cosine similarity of the article's vector with the query's (0 without vectors). */
  semantic_score: number;
  /** Age at query time, in days. */
  age_days: number;
  /** `trending`: the trending keyword the article matched best; null otherwise. */
  trending_keyword: string | null;
  /** Whether the `num_articles_ref` quota placed it (rather than the ranking alone). */
  ref_quota: boolean;
}

/** One article in a SearchResponse (spec 2.2). */
export interface SearchResult {
  author?: string;
  image_url?: string;
  preview_content?: string;
  pubdate?: string;
  pubdate_unix?: number;
  score?: number;
  site?: string;
  site_domain?: string;
  source_url?: string;
  summary?: string;
  title?: string;
  url?: string;
  explain?: SearchExplain;
  /** With `highlights` in the request: the passages that best answer the query, in document order. */
  highlights?: Highlight[];
  /** With `contents: {text: true}` where licensed: the article body as Markdown. */
  text?: string;
}

/** SearchResponse body (spec 2.2). */
export interface SearchResponse {
  status: string;
  response: { query: string; results: SearchResult[]; message: string };
}

/** Who is asking and how: options that do not come from the body. */
export interface SearchContext {
  /** Set on bearer traffic; absent on payproxy traffic (no tenant is attached). */
  tenantId?: string;
  /** `payproxy:<agent-id>` on payproxy traffic. */
  caller?: string;
  /** Payproxy `search_version` query parameter. */
  searchVersion?: string;
  requestId?: string;
  /** The Ask AI widget showing the results, its reader's session and placement: carried into the clicks. */
  widgetId?: string;
  sessionId?: string;
  placement?: LinkPlacement;
  /**
   * The reader's network on a public route (core/client_key.ts): the sender its search counts as in
   * trending signals, so asking again and again is one voice, not one per request.
   */
  clientKey?: string;
  /**
   * Which results of the page the caller shows (the widget leaves out the reader's own page and
   * repeated headlines): only those are answered and recorded as impressions. Default: all.
   */
  select?: (results: SearchResult[]) => SearchResult[];
  /**
   * Names this search across resends of its request (a balancer's retry of `POST /app/v2/search`
   * after a response timeout keeps the `X-Request-Id`): its events are then stored once. Set only by
   * routes that serve one search per request; a request holding several (an MCP batch) sets none.
   */
  idempotencyKey?: string;
  /**
   * Aborted when the caller left before the results reached them (the request's signal, asked for
   * before the search: it aborts only then, deno.json's `no-legacy-abort`): the page is shown to
   * nobody, so its results are recorded as no impressions (its `api_call` still is: it was served).
   */
  left?: AbortSignal;
}

/** A stored article as retrieval returns it, for grounding answers. */
export interface RetrievedArticle {
  id: string;
  dataModelId: string;
  url: string;
  title: string;
  author?: string;
  site: string;
  siteDomain: string;
  /** ISO 8601. */
  pubdate: string;
  pubdateUnix: number;
  summary: string;
  body: string;
  score: number;
}

/** The search engine as the routes and the answer engine see it. */
export interface SearchService {
  /** Recommends articles from one data model: the whole `/v2/search` orchestration. */
  recommend(dataModel: DataModel, request: SearchRequest, context: SearchContext): Promise<SearchResponse>;
  /**
   * Retrieves the best passages across data models for grounding an answer: hybrid,
   * recency-weighted; best first.
   */
  retrieve(dataModelIds: string[], query: string, options?: { k?: number }): Promise<RetrievedArticle[]>;
}
