/**
 * Validation and enrichment of incoming events: schema check, ownership (widget, AI agent),
 * defaults from the widget, the query classifier, and the sponsored-conversation freeze.
 */
import type { Clock } from "../core/clock.ts";
import { issuePath, issueText } from "../core/zod_issue.ts";
import { analyticsErrors } from "./errors.ts";
import type { AiModel, Repos, Widget } from "../core/store/mod.ts";
import { classify } from "./classifier.ts";
import { formatDay, parseDay } from "./filters.ts";
import {
  DUPLICATE_WINDOW_MINUTES,
  eventInputSchema,
  type EventRow,
  type EventSource,
  HEARTBEAT_SECONDS,
  isMrcViewable,
  normaliseInput,
  SESSION_IDLE_MINUTES,
  toRow,
  widgetForbiddenField,
} from "./schema.ts";
import { uuidv7 } from "./uuid7.ts";
import { CHUNK_BYTES, fitsChunk, ndjsonLine, type WalExtraSet } from "./wal.ts";

/** Who is sending a batch. */
export type IngestContext =
  /**
   * The Ask AI widget in a browser, authorised by widget id + allowed origin. `maxAgeMs`: how far
   * back a sent `ts` may go (the public route's bound; default 30 days, as for a server).
   */
  | {
    source: "widget";
    widget: Widget;
    clientKey?: string;
    maxAgeMs?: number;
    /** The `event_id` of the widget's answer `request_id` asked in `session_id` (ClientKeys.answerEventId). */
    answerEventId?: (sessionId: string | undefined, requestId: string) => Promise<string>;
  }
  /** A server holding the tenant's API key. */
  | { source: "server"; tenantId: string }
  /** Another room of this service (trusted; tenant derived from widget or AI agent). */
  | { source: "internal" };

/** The ad-render values a sponsored conversation is frozen to, kept per session in KV. */
export interface SponsoredSession {
  campaign_id: string;
  creative_id: string | null;
  line_item_id: string | null;
  publisher_id: string | null;
  ad_partner: string | null;
  started_ms: number;
  last_ms: number;
}

/** Event types only the service records (search and answer impressions, API calls). */
export const SERVICE_EVENT_TYPES = ["result_impression", "api_call"] as const;

const IDLE_MS = SESSION_IDLE_MINUTES * 60_000;
const HEARTBEAT_MS = HEARTBEAT_SECONDS * 1000;
// Heartbeats a visit may have beyond one per 5 s of its span: the one at its start, and one for
// network jitter between the batches that carried them.
const HEARTBEAT_SLACK = 2;
// Heartbeat ids a session state remembers: the widget retries a batch 3 times within about a minute
// (12 heartbeats); a 429's Retry-After can stretch that to 3 minutes (36).
const RECENT_HEARTBEAT_IDS = 40;
// Query ids a session day's state remembers with the visit and number they were given: a copy of one
// (a retried batch; the widget's and the service's record of one answer) takes them again.
const RECENT_QUERY_IDS = 10;
// Ids of a session day's other events (loads, clicks, viewability, impressions: a few a visit) it
// remembers, so a copy of one changes nothing of the session. These lists are bounded so a batch's
// 100 checked states at their largest still fit one KV commit (tests/analytics/wal_test.ts).
const RECENT_EVENT_IDS = 20;
const DUPLICATE_WINDOW_MS = DUPLICATE_WINDOW_MINUTES * 60_000;
// Session state outlives the 30 min idle window so late events still find it; the idle rule is
// checked against `last_ms` on read, KV's expireIn only cleans up.
const SESSION_STATE_TTL_MS = 24 * 3600_000;
const FUTURE_SKEW_MS = 5 * 60_000;
// A session day's state lives at least this long after the day ends, so a missing state can be
// told apart from an expired one until an hour before that (clock slack between processes).
const STATE_AFTER_DAY_MS = 2 * 3600_000;
const STATE_SURELY_KEPT_MS = STATE_AFTER_DAY_MS - 3600_000;
// Deno KV allows 100 checks per atomic commit: a batch over more session days is written unchecked.
const MAX_CHECKED_STATES = 100;
const MAX_AGE_MS = 30 * 24 * 3600_000;

/**
 * KV key of a session's state (visit id, counters, sponsored-conversation freeze) on one UTC day.
 * Visits never span two UTC days (each day's events continue that day's visit), so every visit
 * lies in one day folder and a closed day's visit figures can be derived from that folder alone
 * (analytics/visit_cube.ts).
 */
export const sessionKey = (tenantId: string, sessionId: string, day: string): Deno.KvKey => [
  "ev_session",
  tenantId,
  sessionId,
  day,
];

const dayBefore = (day: string) => formatDay(parseDay(day)! - 86_400_000);

const invalid = (index: number, field: string, problem: string) =>
  analyticsErrors.invalid_event({ index, field, problem });

/** Dependencies of {@link prepareEvents}. */
export interface EnrichDeps {
  kv: Deno.Kv;
  clock: Clock;
  repos: Repos;
}

/**
 * Validates and enriches a batch. Throws a 422 AppError naming the first bad event and field
 * (`events.3.event_type: ...`); nothing of a bad batch is stored.
 * @param contended the batch lost a race for its session states (see {@link sessionize}).
 * @returns the rows to log, each as the NDJSON line the log stores (encoded once, here, where its size
 *   is checked), and the session states to write with them: each carries the version it was read
 *   at, so the batch commits only if no other batch changed them in between.
 */
export async function prepareEvents(
  deps: EnrichDeps,
  inputs: unknown[],
  ctx: IngestContext,
  contended = false,
): Promise<{ rows: EventRow[]; lines: Uint8Array[]; sessionSets: WalExtraSet[] }> {
  const nowMs = deps.clock.now().getTime();
  const source: EventSource = ctx.source === "widget" ? "widget" : "server";
  const widgets = new Map<string, Widget | null>();
  const models = new Map<string, AiModel | null>();
  if (ctx.source === "widget") widgets.set(ctx.widget.id, ctx.widget);
  const widgetOf = async (id: string) => {
    if (!widgets.has(id)) widgets.set(id, await deps.repos.widgets.get(id));
    return widgets.get(id)!;
  };
  const modelOf = async (id: string) => {
    if (!models.has(id)) models.set(id, await deps.repos.aiModels.get(id));
    return models.get(id)!;
  };

  const rows: EventRow[] = [];
  for (let i = 0; i < inputs.length; i++) {
    const parsed = eventInputSchema.safeParse(normaliseInput(inputs[i], ctx.source === "internal"));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw invalid(i, issuePath(issue), issueText(issue));
    }
    const e = parsed.data;
    const tsMs = e.ts ? Date.parse(e.ts) : nowMs;
    if (tsMs > nowMs + FUTURE_SKEW_MS) throw invalid(i, "ts", "must not be more than 5 minutes in the future");
    if (tsMs < nowMs - MAX_AGE_MS) throw invalid(i, "ts", "must not be more than 30 days in the past");
    if (ctx.source === "widget" && ctx.maxAgeMs !== undefined && tsMs < nowMs - ctx.maxAgeMs) {
      throw invalid(i, "ts", `must not be more than ${Math.round(ctx.maxAgeMs / 60_000)} minutes in the past here`);
    }
    // A widget's `query` of an answer has the id the service gives its own record of that question
    // (its reader left as the answer reached them): whichever copies arrive, one is stored.
    const answerId = ctx.source === "widget" && e.event_type === "query" && e.request_id && ctx.answerEventId
      ? await ctx.answerEventId(e.session_id, e.request_id)
      : undefined;
    const row = toRow(e, { event_id: answerId ?? e.event_id ?? uuidv7(deps.clock), ts_ms: tsMs, source });

    // Ownership and defaults. Widget traffic cannot name another widget, tenant or agent identity,
    // nor send what only the service measures (impressions of what it served, its API calls).
    if (ctx.source === "widget") {
      if ((SERVICE_EVENT_TYPES as readonly string[]).includes(e.event_type)) {
        throw invalid(i, "event_type", "is recorded by the service itself, not sent by a widget");
      }
      const forbidden = widgetForbiddenField(e);
      if (forbidden) throw invalid(i, forbidden, "is set by the service, not sent by a widget");
      if (e.widget_id !== undefined && e.widget_id !== ctx.widget.id) {
        throw invalid(i, "widget_id", "must match the batch's widget_id");
      }
      row.widget_id = ctx.widget.id;
      row.agent_identity = null;
      row.client_key = ctx.clientKey ?? null;
    }
    // Only this service measures where a reader came from: a sent client_key is refused, not rewritten.
    if (ctx.source !== "internal" && e.client_key !== undefined) {
      throw invalid(i, "client_key", "is recorded by the service itself, not sent");
    }
    let widget: Widget | null = null;
    if (row.widget_id) {
      widget = await widgetOf(row.widget_id);
      const tenant = ctx.source === "server" ? ctx.tenantId : widget?.tenantId;
      if (!widget || widget.tenantId !== tenant) throw invalid(i, "widget_id", "widget_id not found");
    }
    if (widget) {
      row.tenant_id = widget.tenantId;
      // A widget's own events are its model's. The service's and the tenant's name the model that
      // answered (`/app/aimodel/{id}` may be asked with any of the tenant's widgets): theirs stands.
      if (ctx.source === "widget" || !row.ai_agent) row.ai_agent = widget.aiModelId;
      else if ((await modelOf(row.ai_agent))?.tenantId !== widget.tenantId) {
        throw invalid(i, "ai_agent", "ai_agent not found");
      }
      row.deployment_type ??= widget.deploymentType;
    } else if (row.ai_agent) {
      const model = await modelOf(row.ai_agent);
      if (!model || (ctx.source === "server" && model.tenantId !== ctx.tenantId)) {
        throw invalid(i, "ai_agent", "ai_agent not found");
      }
      row.tenant_id = model.tenantId;
    } else if (ctx.source === "server") {
      row.tenant_id = ctx.tenantId;
    } else if (!row.tenant_id && row.data_model_id) {
      // Internal events about an article (payproxy clicks carry no caller tenant): the publisher
      // that owns the data model.
      row.tenant_id = (await deps.repos.dataModels.get(row.data_model_id))?.tenantId ?? null;
    }
    if (ctx.source === "server") row.tenant_id = ctx.tenantId;
    if (!row.tenant_id) throw invalid(i, "widget_id", "an event needs a widget_id, ai_agent or tenant_id");

    if (row.event_type === "sponsored_impression" || row.event_type === "prompt_impression") {
      // Only the event's own tenant's campaigns: another tenant's id would count in that tenant's figures.
      if (!(await deps.repos.campaigns.getForTenant(row.tenant_id, row.campaign_id!))) {
        throw invalid(i, "campaign_id", "campaign not found");
      }
    }
    if (row.event_type === "query") {
      const c = classify(row.prompt ?? row.prompt_text ?? "");
      row.intent_type = c.intent_type;
      row.category = c.category;
      row.topic = c.topic;
    }
    rows.push(row);
  }
  const { sets: sessionSets, dropped } = await sessionize(deps.kv, rows, nowMs, contended);
  // Checked once enriched (the freeze may add values): a row the log cannot hold is this event's fault.
  const kept: EventRow[] = [];
  const lines: Uint8Array[] = [];
  for (const [i, r] of rows.entries()) {
    if (dropped.has(r)) continue;
    const line = ndjsonLine(r);
    if (!fitsChunk(line)) throw invalid(i, "", `is too large to store (at most ${CHUNK_BYTES} bytes encoded)`);
    kept.push(r);
    lines.push(line);
  }
  return { rows: kept, lines, sessionSets };
}

/** Per-session state kept in KV while a session lives (30 min idle). */
export interface SessionState {
  visit_id: number;
  last_ms: number;
  viewable: boolean;
  queries: number;
  sponsor: SponsoredSession | null;
  /** An event of this session day was flagged `visit_late`: every later one is flagged too. */
  late?: boolean;
  /** The visit's earliest event time (absent in states written before it was kept). */
  first_ms?: number;
  /** The visit's stored heartbeats. */
  heartbeats?: number;
  /** Ids of its latest counted heartbeats (a retried batch's are not counted again). */
  heartbeat_ids?: string[];
  /**
   * The session day's latest numbered queries, `[event_id, visit_id, visit_query_no, ts_ms]`, kept
   * across its visits: a copy of one is stored at most once by the flush, so it is numbered as the first.
   */
  query_ids?: [string, number, number, number][];
  /** The session day's latest ids of events neither query nor heartbeat (a copy of one changes nothing). */
  event_ids?: string[];
}

/** A random 53-bit visit id (exact in JSON numbers and DuckDB BIGINT). */
function newVisitId(): number {
  const [hi, lo] = crypto.getRandomValues(new Uint32Array(2));
  return (hi! & 0x1fffff) * 0x1_0000_0000 + lo!;
}

/**
 * Sessionisation and the sponsored-conversation freeze, at ingestion, in time order per batch:
 * - an event more than 30 min after its session's last event starts a new session (new
 *   `visit_id`, `visit_start`), and so does a session's first event of each UTC day (a late event
 *   continues its own day's visit); the first MRC-viewable event is flagged `visit_viewable`; queries
 *   are numbered (`visit_query_no`). These columns follow arrival order across batches.
 * - `visit_late` flags every event whose ingestion-time visit may not be its visit in time order:
 *   one earlier than its session day's last event so far, one whose session day's state may have
 *   expired, a day's first event near midnight whose day-before state may have expired (a sponsored
 *   conversation's carry), a second impression at its conversation's first instant (a tie), every
 *   later event of such a session day (the flag sticks in the state), and every event
 *   of a batch written without version checks (`contended`, or more session days than KV can
 *   check). While a stretch of a session day holds no flagged event, its ingestion-time visits are
 *   its visits in time order (each unflagged event was appended after the latest event of its day),
 *   so the rollups group it by `visit_id` and derive in time order only the session days of the
 *   window that hold a flagged event (analytics/sql).
 * - a visit keeps at most one heartbeat per 5 s of its span (first to latest event) plus
 *   {@link HEARTBEAT_SLACK}: the widget sends one every 5 s of attention, so more at once are forged
 *   engaged time and are left out (not stored, not in `accepted`).
 * - the first `sponsored_impression` of a session fixes campaign_id, creative_id, line_item_id,
 *   publisher_id and ad_partner (`sponsored_start`); every later event of that session carries those
 *   values, whatever the page sent, and the deployment type `sponsored_conversation`.
 * Returns the state writes to commit with the batch, each checked against the version read, and
 * the rows left out.
 */
async function sessionize(
  kv: Deno.Kv,
  rows: EventRow[],
  nowMs: number,
  contended: boolean,
): Promise<{ sets: WalExtraSet[]; dropped: Set<EventRow> }> {
  const dropped = new Set<EventRow>();
  const stateId = (r: EventRow, day: string) => `${r.tenant_id}\u0000${r.session_id}\u0000${day}`;
  // The events' days (written back) and the day before each (read only, to carry a sponsored
  // conversation across midnight).
  const days = new Map<string, Deno.KvKey>();
  const before = new Map<string, Deno.KvKey>();
  for (const r of rows) {
    if (!r.session_id || !r.tenant_id) continue;
    const day = formatDay(r.ts_ms);
    days.set(stateId(r, day), sessionKey(r.tenant_id, r.session_id, day));
    before.set(stateId(r, dayBefore(day)), sessionKey(r.tenant_id, r.session_id, dayBefore(day)));
  }
  if (!days.size) return { sets: [], dropped };
  const checked = !contended && days.size <= MAX_CHECKED_STATES;
  const states = new Map<string, SessionState | null>();
  const versions = new Map<string, string | null>();
  const list = [...new Map([...before, ...days])];
  for (let i = 0; i < list.length; i += 10) {
    const got = await kv.getMany<SessionState[]>(list.slice(i, i + 10).map(([, k]) => k));
    got.forEach((g, j) => {
      states.set(list[i + j]![0], g.value);
      versions.set(list[i + j]![0], g.versionstamp);
    });
  }
  const ordered = rows.map((r, i) => [r, i] as const).sort((a, b) => a[0].ts_ms - b[0].ts_ms || a[1] - b[1]);
  for (const [r] of ordered) {
    if (!r.session_id || !r.tenant_id) continue;
    const day = formatDay(r.ts_ms);
    const id = stateId(r, day);
    let st = states.get(id) ?? null;
    // No state: a new session day, unless the day ended long enough ago that its state may have expired.
    let late = !checked ||
      (st ? st.late === true || r.ts_ms < st.last_ms : nowMs >= dayEndMs(day) + STATE_SURELY_KEPT_MS);
    // A second impression at the instant the conversation started: which one is first is a tie.
    if (r.event_type === "sponsored_impression" && st?.sponsor?.started_ms === r.ts_ms) late = true;
    // A copy of a question this session already logged (that UTC day, or by the flush's rule in the last
    // minutes of the day before): the flush stores one of them, so this one takes the first's visit and
    // number and changes no state, or a visit's questions would read 1, 3, 4 and a copy sent again
    // later would start a visit of its own.
    const copy = r.event_type === "query" ? loggedQuery(r, st, states.get(stateId(r, dayBefore(day)))) : undefined;
    if (copy) {
      if (late && st) st.late = r.visit_late = true;
      r.visit_id = copy[1];
      r.visit_query_no = copy[2];
      if (st?.sponsor) freeze(r, st.sponsor);
      continue;
    }
    // So for a copy of any other event this session day logged (a retried batch, stamped on arrival):
    // its later time would stretch the visit past an idle gap the stored events have, or start one.
    if (st && loggedEvent(r, st)) {
      if (late) st.late = r.visit_late = true;
      r.visit_id = st.visit_id;
      if (st.sponsor) freeze(r, st.sponsor);
      continue;
    }
    if (!st || r.ts_ms - st.last_ms > IDLE_MS) {
      st = {
        visit_id: newVisitId(),
        last_ms: r.ts_ms,
        viewable: false,
        queries: 0,
        sponsor: null,
        first_ms: r.ts_ms,
        heartbeats: 0,
        // The day's ids, whichever of its visits logged them.
        ...(st?.query_ids ? { query_ids: st.query_ids } : {}),
        ...(st?.heartbeat_ids ? { heartbeat_ids: st.heartbeat_ids } : {}),
        ...(st?.event_ids ? { event_ids: st.event_ids } : {}),
      };
      r.visit_start = true;
      // A conversation going on at midnight keeps its campaign in the new day's visit; without the
      // day before's state, kept surely only until an hour into this day, that cannot be told.
      const yesterday = states.get(stateId(r, dayBefore(day)));
      const dayStart = dayEndMs(day) - 86_400_000;
      if (!yesterday && r.ts_ms - dayStart <= IDLE_MS && nowMs >= dayStart + STATE_SURELY_KEPT_MS) late = true;
      if (yesterday?.sponsor && r.ts_ms - yesterday.last_ms <= IDLE_MS) st.sponsor = { ...yesterday.sponsor };
      states.set(id, st);
    }
    // A heartbeat already counted (a batch sent again, same id: the flush stores it once) is a copy
    // (above): it does not use the budget again, else a widget's retries would cost its reader later
    // heartbeats.
    if (r.event_type === "heartbeat" && st.first_ms !== undefined) {
      const span = Math.max(st.last_ms, r.ts_ms) - Math.min(st.first_ms, r.ts_ms);
      if ((st.heartbeats ?? 0) >= Math.floor(span / HEARTBEAT_MS) + HEARTBEAT_SLACK) {
        dropped.add(r);
        continue;
      }
      st.heartbeats = (st.heartbeats ?? 0) + 1;
      st.heartbeat_ids = [...(st.heartbeat_ids ?? []), r.event_id].slice(-RECENT_HEARTBEAT_IDS);
    }
    if (st.first_ms !== undefined && r.ts_ms < st.first_ms) st.first_ms = r.ts_ms;
    if (late) st.late = r.visit_late = true;
    r.visit_id = st.visit_id;
    if (!st.viewable && isMrcViewable(r)) {
      st.viewable = true;
      r.visit_viewable = true;
    }
    if (r.event_type !== "query" && r.event_type !== "heartbeat") {
      st.event_ids = [...(st.event_ids ?? []), r.event_id].slice(-RECENT_EVENT_IDS);
    }
    if (r.event_type === "query") {
      r.visit_query_no = ++st.queries;
      const numbered: [string, number, number, number] = [r.event_id, st.visit_id, st.queries, r.ts_ms];
      st.query_ids = [...(st.query_ids ?? []), numbered].slice(-RECENT_QUERY_IDS);
    }
    if (!st.sponsor && r.event_type === "sponsored_impression") {
      st.sponsor = {
        campaign_id: r.campaign_id!,
        creative_id: r.creative_id,
        line_item_id: r.line_item_id,
        publisher_id: r.publisher_id,
        ad_partner: r.ad_partner,
        started_ms: r.ts_ms,
        last_ms: r.ts_ms,
      };
      r.sponsored_start = true;
    }
    if (st.sponsor) {
      freeze(r, st.sponsor);
      st.sponsor.last_ms = Math.max(st.sponsor.last_ms, r.ts_ms);
    }
    if (r.ts_ms > st.last_ms) st.last_ms = r.ts_ms;
  }
  const sets = [...days].filter(([id]) => states.get(id)).map(([id, key]) => ({
    key,
    value: states.get(id)!,
    // Kept 24 h after the last write, and at least until 2 h after the day ends.
    expireIn: Math.max(
      SESSION_STATE_TTL_MS,
      dayEndMs(id.slice(id.lastIndexOf("\u0000") + 1)) + STATE_AFTER_DAY_MS - nowMs,
    ),
    ...(checked ? { versionstamp: versions.get(id) ?? null } : {}),
  }));
  return { sets, dropped };
}

const dayEndMs = (day: string) => parseDay(day)! + 86_400_000;

/** Gives an event of a sponsored conversation the values the conversation is frozen to. */
function freeze(r: EventRow, sponsor: SponsoredSession): void {
  r.campaign_id = sponsor.campaign_id;
  r.creative_id = sponsor.creative_id;
  r.line_item_id = sponsor.line_item_id;
  r.publisher_id = sponsor.publisher_id;
  r.ad_partner = sponsor.ad_partner;
  r.deployment_type = "sponsored_conversation";
}

/** Whether `r`, neither a query nor a new heartbeat, is a copy of an event its session day logged. */
function loggedEvent(r: EventRow, st: SessionState): boolean {
  if (r.event_type === "heartbeat") return (st.heartbeat_ids ?? []).includes(r.event_id);
  return r.event_type !== "query" && (st.event_ids ?? []).includes(r.event_id);
}

/**
 * The numbered query `r` is a copy of, when the flush will store only one of them: the same id
 * earlier that UTC day in this session, or in the day before's last {@link DUPLICATE_WINDOW_MINUTES}
 * (the flush's rule, parquet_writer.ts).
 */
function loggedQuery(
  r: EventRow,
  today: SessionState | null,
  yesterday: SessionState | null | undefined,
): [string, number, number, number] | undefined {
  const same = today?.query_ids?.find(([id]) => id === r.event_id);
  if (same) return same;
  const dayStart = dayEndMs(formatDay(r.ts_ms)) - 86_400_000;
  return yesterday?.query_ids?.find(([id, , , ts]) => id === r.event_id && ts >= dayStart - DUPLICATE_WINDOW_MS);
}
