/**
 * The event-recording contract other rooms use (article clicks, Ask AI interactions, payproxy
 * calls). The analytics pipeline (analytics/events.ts) implements it; core code depends only on
 * this contract.
 */

/** Largest prompt and response texts kept; keeps one event well under a 64 KiB KV value. */
export const MAX_PROMPT_CHARS = 2000;
export const MAX_RESPONSE_CHARS = 10_000;

/**
 * A page's address as events keep it (`referring_url`): origin and path, no query or fragment (a
 * page's query string may carry a reader's e-mail or a session token, and the tenant reads the
 * column). Anything but an http(s) URL is undefined.
 */
export function pageAddress(address: string | undefined): string | undefined {
  const url = address ? URL.parse(address) : null;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined;
  return (url.origin + url.pathname).slice(0, 2048);
}

/**
 * An event as producers hand it in; the pipeline fills event_id, ts and enrichment. The full
 * column list is `eventInputSchema` in analytics/schema.ts.
 * @example deps.events.record([{ event_type: "click", click_type: "article", ai_agent: "am_...", article_url: "https://..." }])
 * @example deps.events.record([{ event_type: "query", ai_agent: "am_...", prompt: "q", response: "a", interaction_type: "search", agent_identity: "payproxy:bot-1" }])
 */
export interface EventInput {
  event_type: string;
  ts?: string;
  tenant_id?: string;
  widget_id?: string;
  ai_agent?: string;
  placement_id?: string;
  deployment_type?: string;
  session_id?: string;
  interaction_type?: string;
  click_type?: string;
  prompt?: string;
  response?: string;
  referring_url?: string;
  /** Caller identity, e.g. `payproxy:<agent-id>`. */
  agent_identity?: string;
  /** Key of the reader's network (core/client_key.ts): trending counts one sender per key. */
  client_key?: string;
  [field: string]: unknown;
}

export interface EventSink {
  /** Durably records the events (resolves once they are in the write-ahead log). */
  record(events: EventInput[]): Promise<void>;
  /**
   * Throws the log's 503 (with `Retry-After`) when it has no room, for `tenantId` when given (one KV
   * read): a writer holding many events asks before preparing them.
   */
  refuseWhenFull?(tenantId?: string): Promise<void>;
}
