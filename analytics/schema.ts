/**
 * The analytics event schema: what producers may send (`eventInputSchema`) and the stored row
 * (`EventRow`, one Parquet column per field of {@link EVENT_COLUMNS}). The README section
 * "Analytics events and metrics" documents every column; keep the two in step.
 */
import { z } from "zod";
import { MAX_PROMPT_CHARS, MAX_RESPONSE_CHARS, pageAddress } from "../core/events.ts";

/** Every event type the pipeline accepts. */
export const EVENT_TYPES = [
  "widget_load",
  "widget_viewable",
  "query",
  "response",
  "click",
  "heartbeat",
  "sponsored_impression",
  "prompt_impression",
  "widget_close",
  "api_call",
  // One search result shown to a caller (data_model_id, article_id, article_url, position).
  "result_impression",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** How an Ask AI query was asked. */
export const INTERACTION_TYPES = [
  "free_form",
  "automated_followup",
  "search",
  "sponsored_prompt",
  "suggested_prompt",
] as const;

/** The interaction types the logs endpoint returns when `interaction_type` is omitted. */
export const DEFAULT_LOG_INTERACTION_TYPES = ["free_form", "automated_followup", "search"] as const;

/** What a click opened: an article link or a call-to-action (sponsor link, button). */
export const CLICK_TYPES = ["article", "cta"] as const;

/** Engaged time one heartbeat stands for: the widget sends one every 5 s while in view and in focus. */
export const HEARTBEAT_SECONDS = 5;
/** A session ends after this much idle time; a later event with the same session_id starts a new one. */
export const SESSION_IDLE_MINUTES = 30;
/**
 * One tenant's event id is one event on its UTC day and, across midnight, in the last this many
 * minutes of a day and the first of the next (copies at most this far apart are always one). The
 * flush stores one copy by this rule (parquet_writer.ts), the realtime counters count by it
 * (realtime.ts): at least their 35-minute window, so two copies both in it are one on both surfaces.
 */
export const DUPLICATE_WINDOW_MINUTES = 60;
/** MRC viewability: at least this share of the widget in view ... */
export const VIEWABLE_MIN_PCT = 50;
/** ... for at least this long. */
export const VIEWABLE_MIN_MS = 1000;

/** Largest prompt and response texts kept (core/events.ts: the answer engine trims to them too). */
export { MAX_PROMPT_CHARS, MAX_RESPONSE_CHARS };

const token = (max = 128) =>
  z.string().min(1).max(max).regex(/^[A-Za-z0-9._:@\/+-]+$/, { error: "must be a token (letters, digits, ._:@/+-)" });
const text = (max: number) => z.string().max(max);
const httpUrl = z.string().max(2048).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}, { error: "must be an absolute http(s) URL" });

/**
 * One event as a producer sends it. Server-owned fields (tenant_id, intent_type, category, topic,
 * source, and agent_identity for widget traffic) are filled or overwritten by the pipeline; a widget
 * may not send tenant_id or agent_identity at all ({@link widgetForbiddenField}).
 */
export const eventInputSchema = z.object({
  event_id: z.string().regex(/^[A-Za-z0-9._:-]{8,64}$/, { error: "must be 8 to 64 characters of A-Z a-z 0-9 . _ : -" })
    .optional(),
  event_type: z.enum(EVENT_TYPES),
  // A widget `query` event's answer (its `request_id`): the service derives the event's id from it,
  // the one the service's own record of that question carries (analytics/enrich.ts). Not stored.
  request_id: z.string().regex(/^[\w.:=-]{1,128}$/, { error: "must be the answer's request_id" }).optional(),
  ts: z.iso.datetime({ offset: true, error: "must be an ISO 8601 timestamp" }).optional(),
  tenant_id: token().optional(),
  widget_id: token().optional(),
  ai_agent: token().optional(),
  placement_id: token().optional(),
  deployment_type: token(64).optional(),
  session_id: token().optional(),
  interaction_type: z.enum(INTERACTION_TYPES).optional(),
  click_type: z.enum(CLICK_TYPES).optional(),
  prompt: text(MAX_PROMPT_CHARS).optional(),
  response: text(MAX_RESPONSE_CHARS).optional(),
  referring_url: httpUrl.optional(),
  article_url: httpUrl.optional(),
  data_model_id: token().optional(),
  article_id: token().optional(),
  position: z.number().int().min(0).max(10_000).optional(),
  campaign_id: token().optional(),
  prompt_id: token().optional(),
  prompt_text: text(MAX_PROMPT_CHARS).optional(),
  creative_id: token().optional(),
  line_item_id: token().optional(),
  publisher_id: token().optional(),
  ad_partner: token(64).optional(),
  // Every caller the service names fits: `payproxy:` + a 256-character agent id, `webbot:` + a host and port.
  agent_identity: z.string().min(1).max(300).optional(),
  client_key: z.string().regex(/^[0-9a-f]{16}$/, { error: "must be 16 hex digits" }).optional(),
  in_view_pct: z.number().min(0).max(100).optional(),
  in_view_ms: z.number().int().min(0).max(86_400_000).optional(),
}).superRefine((e, ctx) => {
  if (e.event_type === "click" && !e.click_type) {
    ctx.addIssue({ code: "custom", path: ["click_type"], message: "is required on click events" });
  }
  if (e.event_type === "query" && e.prompt === undefined && e.prompt_text === undefined) {
    ctx.addIssue({ code: "custom", path: ["prompt"], message: "is required on query events" });
  }
  if ((e.event_type === "sponsored_impression" || e.event_type === "prompt_impression") && !e.campaign_id) {
    ctx.addIssue({ code: "custom", path: ["campaign_id"], message: `is required on ${e.event_type} events` });
  }
  if (e.event_type === "prompt_impression" && !e.prompt_text) {
    ctx.addIssue({ code: "custom", path: ["prompt_text"], message: "is required on prompt_impression events" });
  }
});
export type EventInputParsed = z.infer<typeof eventInputSchema>;

/** Fields only the service sets on widget traffic: a widget event carrying one is refused, not rewritten. */
export const WIDGET_FORBIDDEN_FIELDS = ["tenant_id", "agent_identity"] as const;

/** The first field of a widget event that only the service may set, or null. */
export function widgetForbiddenField(e: EventInputParsed): (typeof WIDGET_FORBIDDEN_FIELDS)[number] | null {
  return WIDGET_FORBIDDEN_FIELDS.find((f) => e[f] !== undefined) ?? null;
}

/** Whether `v` is an absolute http(s) URL. */
export function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && v.length <= 2048;
  } catch {
    return false;
  }
}

/**
 * Shapes other rooms' events before validation: `article_click` (the tracking redirect) is a
 * `click` of type `article` with its `url` as `article_url`; nulls count as absent; and, for trusted
 * internal producers only, an optional URL field that is not an http(s) URL (a stray Referer) or an
 * unknown interaction_type is dropped instead of losing the event.
 */
export function normaliseInput(input: unknown, internal: boolean): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const e: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) if (v !== null && v !== undefined) e[k] = v;
  if (e.event_type === "article_click") {
    e.event_type = "click";
    e.click_type ??= "article";
    if (typeof e.url === "string" && e.article_url === undefined) e.article_url = e.url;
  }
  // Every event keeps its page as origin and path, whoever sent it (docs/events-and-metrics.md).
  if (typeof e.referring_url === "string") e.referring_url = pageAddress(e.referring_url) ?? e.referring_url;
  if (internal) {
    for (const k of ["referring_url", "article_url"]) {
      if (typeof e[k] === "string" && !isHttpUrl(e[k] as string)) delete e[k];
    }
    if (
      typeof e.interaction_type === "string" && !(INTERACTION_TYPES as readonly string[]).includes(e.interaction_type)
    ) {
      delete e.interaction_type;
    }
  }
  return e;
}

/** Where an event came from. */
export type EventSource = "widget" | "server";

/** A stored event: every column, nulls for absent values; `ts_ms` is the UTC instant in ms. */
export interface EventRow {
  event_id: string;
  ts_ms: number;
  tenant_id: string | null;
  widget_id: string | null;
  ai_agent: string | null;
  placement_id: string | null;
  deployment_type: string | null;
  session_id: string | null;
  event_type: EventType;
  interaction_type: string | null;
  click_type: string | null;
  prompt: string | null;
  response: string | null;
  referring_url: string | null;
  article_url: string | null;
  /** On article clicks: the data model and article the link came from, and its rank in the results. */
  data_model_id: string | null;
  article_id: string | null;
  position: number | null;
  campaign_id: string | null;
  prompt_id: string | null;
  prompt_text: string | null;
  creative_id: string | null;
  line_item_id: string | null;
  publisher_id: string | null;
  ad_partner: string | null;
  intent_type: string | null;
  category: string | null;
  topic: string | null;
  agent_identity: string | null;
  source: EventSource;
  in_view_pct: number | null;
  in_view_ms: number | null;
  /** Server-assigned session (visit) number: a random 53-bit id per session_id run without a 30 min gap. */
  visit_id: number | null;
  /** The first event of its session. */
  visit_start: boolean;
  /** The event that made its session viewable (the session's first MRC-viewable event). */
  visit_viewable: boolean;
  /** On queries: 1 for the session's first query, 2 for the second, ... */
  visit_query_no: number | null;
  /** The sponsored_impression that started its session's sponsored conversation. */
  sponsored_start: boolean;
  /**
   * Set at ingestion when the event's ingestion-time visit may differ from its visit in time order:
   * it arrived after a later event of its session day, or its session day's state may have expired
   * (analytics/enrich.ts). The rollups take a session day's ingestion-time visits as they are while
   * none of its events in the window carries it, and derive that day's visits in time order otherwise.
   * Null in files written before the column existed: those days are always derived.
   */
  visit_late: boolean;
  /**
   * Widget events: a pseudonymous key of the sending client's address (IPv4 address, IPv6 /64),
   * so trending can count distinct senders without storing addresses. Null on other events.
   */
  client_key: string | null;
}

/**
 * Parquet columns in file order with their DuckDB types. `ts` is stored as TIMESTAMP (UTC); the
 * hive partition column `date` (DATE) comes from the directory name, not from the file.
 */
export const EVENT_COLUMNS: ReadonlyArray<readonly [name: string, type: string]> = [
  ["event_id", "VARCHAR"],
  ["ts", "TIMESTAMP"],
  ["tenant_id", "VARCHAR"],
  ["widget_id", "VARCHAR"],
  ["ai_agent", "VARCHAR"],
  ["placement_id", "VARCHAR"],
  ["deployment_type", "VARCHAR"],
  ["session_id", "VARCHAR"],
  ["event_type", "VARCHAR"],
  ["interaction_type", "VARCHAR"],
  ["click_type", "VARCHAR"],
  ["prompt", "VARCHAR"],
  ["response", "VARCHAR"],
  ["referring_url", "VARCHAR"],
  ["article_url", "VARCHAR"],
  ["data_model_id", "VARCHAR"],
  ["article_id", "VARCHAR"],
  ["position", "INTEGER"],
  ["campaign_id", "VARCHAR"],
  ["prompt_id", "VARCHAR"],
  ["prompt_text", "VARCHAR"],
  ["creative_id", "VARCHAR"],
  ["line_item_id", "VARCHAR"],
  ["publisher_id", "VARCHAR"],
  ["ad_partner", "VARCHAR"],
  ["intent_type", "VARCHAR"],
  ["category", "VARCHAR"],
  ["topic", "VARCHAR"],
  ["agent_identity", "VARCHAR"],
  ["source", "VARCHAR"],
  ["in_view_pct", "DOUBLE"],
  ["in_view_ms", "INTEGER"],
  ["visit_id", "BIGINT"],
  ["visit_start", "BOOLEAN"],
  ["visit_viewable", "BOOLEAN"],
  ["visit_query_no", "INTEGER"],
  ["sponsored_start", "BOOLEAN"],
  ["client_key", "VARCHAR"],
  ["visit_late", "BOOLEAN"],
];

/** Turns a parsed input plus server-owned values into a full row (absent fields become null). */
export function toRow(
  e: EventInputParsed,
  extra: { event_id: string; ts_ms: number; source: EventSource },
): EventRow {
  const n = <T>(v: T | undefined): T | null => (v === undefined ? null : v);
  return {
    event_id: extra.event_id,
    ts_ms: extra.ts_ms,
    tenant_id: n(e.tenant_id),
    widget_id: n(e.widget_id),
    ai_agent: n(e.ai_agent),
    placement_id: n(e.placement_id),
    deployment_type: n(e.deployment_type),
    session_id: n(e.session_id),
    event_type: e.event_type,
    interaction_type: n(e.interaction_type),
    click_type: n(e.click_type),
    prompt: n(e.prompt),
    response: n(e.response),
    referring_url: n(e.referring_url),
    article_url: n(e.article_url),
    data_model_id: n(e.data_model_id),
    article_id: n(e.article_id),
    position: n(e.position),
    campaign_id: n(e.campaign_id),
    prompt_id: n(e.prompt_id),
    prompt_text: n(e.prompt_text),
    creative_id: n(e.creative_id),
    line_item_id: n(e.line_item_id),
    publisher_id: n(e.publisher_id),
    ad_partner: n(e.ad_partner),
    intent_type: null,
    category: null,
    topic: null,
    agent_identity: n(e.agent_identity),
    source: extra.source,
    in_view_pct: n(e.in_view_pct),
    in_view_ms: n(e.in_view_ms),
    visit_id: null,
    visit_start: false,
    visit_viewable: false,
    visit_query_no: null,
    sponsored_start: false,
    client_key: n(e.client_key),
    visit_late: false,
  };
}

/** Whether a `widget_viewable` event meets the MRC standard (>= 50 % in view for >= 1 s). */
export function isMrcViewable(e: Pick<EventRow, "event_type" | "in_view_pct" | "in_view_ms">): boolean {
  return e.event_type === "widget_viewable" && (e.in_view_pct ?? 0) >= VIEWABLE_MIN_PCT &&
    (e.in_view_ms ?? 0) >= VIEWABLE_MIN_MS;
}
