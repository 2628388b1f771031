/**
 * The four analytics answers (spec 2.5 to 2.8), shaped from the SQL rollups. Every ratio is
 * computed here from the integer counts of the same answer, so each block agrees with the others;
 * the README section "Analytics events and metrics" gives each formula.
 */
import { analyticsErrors } from "./errors.ts";
import type { Repos } from "../core/store/mod.ts";
import { hasIdFormat } from "../core/ids.ts";
import { INTENT_LABELS } from "./classifier.ts";
import type { AnalyticsEngine, RollupName } from "./engine.ts";
import { changes, comparisonEntry, earlierWindow, parseCompare } from "./compare.ts";
import { avgInt, clampedCount, type DateWindow, pct, ratio2, resolveWindow, supplied } from "./filters.ts";
import type { Clock } from "../core/clock.ts";
import {
  addCounts,
  blockCounts,
  type BlockFilters,
  type Counts,
  summaryOf,
  windowParams,
  zeroCounts,
  type ZonedWindow,
} from "./metrics.ts";
import { DEFAULT_LOG_INTERACTION_TYPES, HEARTBEAT_SECONDS } from "./schema.ts";
import { num } from "./sql_util.ts";
import { dayInZone, parseTimezone } from "./timezone.ts";
import { comparedCounts } from "./compare_counts.ts";
import type { VisitCube } from "./visit_cube.ts";
import type { WindowMemo } from "./window_memo.ts";

/** Query string of an analytics request (only string values are read). */
export type AnalyticsQuery = Record<string, string | undefined>;

/** Filters each endpoint echoes, in echo order. */
export const ASK_AI_FILTERS = [
  "start_date",
  "end_date",
  "deployment_type",
  "widget_id",
  "placement_id",
  "creative_id",
  "line_item_id",
  "publisher_id",
] as const;
export const LOGS_FILTERS = [
  "start_date",
  "end_date",
  "widget_id",
  "placement_id",
  "deployment_type",
  "interaction_type",
  "page",
  "limit",
] as const;
export const SPONSORED_FILTERS = [
  "start_date",
  "end_date",
  "campaign_id",
  "agent_id",
  "placement_id",
  "prompt_id",
  "creative_id",
  "line_item_id",
  "publisher_id",
] as const;
export const SESSION_FILTERS = ASK_AI_FILTERS;

/** Depth buckets of session_engagement_distribution, always all seven. */
export const QUERY_DEPTH_BUCKETS = ["1", "2", "3", "4", "5", "6-10", "10+"] as const;

/** Largest logs page size; larger values are silently reduced. */
export const MAX_LOG_LIMIT = 500;
export const DEFAULT_LOG_LIMIT = 50;

/** The `meta` block: the zone the answer's dates are in and when it was computed. */
export const meta = (clock: Clock, w: ZonedWindow) => ({ timezone: w.tz, generated_at: clock.now().toISOString() });

/** Parameters every analytics endpoint reads beside its filters (part of the cache key, not echoed). */
export const ZONE_PARAMS = ["timezone"] as const;
/** What GET /v1/analytics/ask-ai reads beside its filters (cache key, not echoed). */
export const ASK_AI_PARAMS = [...ZONE_PARAMS, "compare"] as const;

/** Dependencies of the rollups. */
export interface RollupDeps {
  engine: AnalyticsEngine;
  repos: Repos;
  clock: Clock;
  /** Earlier windows' counts for `compare` (absent: always computed). */
  memo?: WindowMemo;
  /** Derived visit figures of closed days (absent: the events are read). */
  visits?: VisitCube;
}

export const opt = (q: AnalyticsQuery, name: string): string | null => {
  const v = q[name];
  return v === undefined || v === "" ? null : v;
};

/** Resolves `widget_id` to the widget's AI agent (the scope the spec gives it), 400 when not the tenant's. */
export async function widgetAgent(deps: RollupDeps, tenantId: string, q: AnalyticsQuery): Promise<string | null> {
  const id = opt(q, "widget_id");
  if (id === null) return null;
  const widget = await deps.repos.widgets.getForTenant(tenantId, id);
  if (!widget) throw analyticsErrors.widget_not_found();
  return widget.aiModelId;
}

/** The block filters of an ask-ai style request. */
export function blockFilters(tenantId: string, agent: string | null, q: AnalyticsQuery): BlockFilters {
  return {
    tenant_id: tenantId,
    ai_agent: agent,
    placement_id: opt(q, "placement_id"),
    deployment_type: opt(q, "deployment_type"),
    creative_id: opt(q, "creative_id"),
    line_item_id: opt(q, "line_item_id"),
    publisher_id: opt(q, "publisher_id"),
  };
}

/**
 * The request's window: `timezone` (default UTC; 400 when unknown), then start_date/end_date read
 * as calendar dates in that zone (today is today there).
 */
export async function requestWindow(deps: RollupDeps, q: AnalyticsQuery): Promise<ZonedWindow> {
  const tz = parseTimezone(q.timezone, await deps.engine.timezones());
  return { ...resolveWindow(q, deps.clock, dayInZone(deps.clock.now(), tz)), tz };
}

/**
 * Validates the parts of a request that do not need event data and returns the normalised query
 * (the cache key): resolved dates and zone plus every supplied parameter among `names`.
 */
export async function normaliseQuery(
  deps: RollupDeps,
  q: AnalyticsQuery,
  names: readonly string[],
): Promise<Record<string, string>> {
  const w = await requestWindow(deps, q);
  return { ...supplied(q, names), start_date: w.start, end_date: w.end, timezone: w.tz };
}

/** Daily rows and totals of a zoned window from per-day counts. */
function dailyOf(w: DateWindow, byDay: Map<string, Counts>) {
  const total = zeroCounts();
  const daily = w.days.map((date) => {
    const c = byDay.get(date) ?? zeroCounts();
    addCounts(total, c);
    return {
      date,
      widget_loads: c.widget_loads,
      viewable_sessions: c.viewable_sessions,
      engagement_queries: c.engagement_queries,
      total_clicks: c.total_clicks,
      sessions: c.sessions,
    };
  });
  return { daily, summary: summaryOf(total) };
}

/**
 * GET /v1/analytics/ask-ai (spec 2.5). With `compare`, a `comparison` block beside `summary` holds
 * the earlier window's summary and daily rows and the change of each metric; the earlier window's
 * counts come from the window memo when its files are unchanged (analytics/compare_counts.ts).
 */
export async function askAiRollup(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const mode = parseCompare(q.compare);
  const agent = await widgetAgent(deps, tenantId, q);
  const filters = blockFilters(tenantId, agent, q);
  const earlier = mode ? { ...earlierWindow(w, mode), tz: w.tz } : null;
  const [now, before] = earlier
    ? await comparedCounts(deps, w, earlier, filters, { interval: "day" })
    : [await blockCounts(deps, w, filters, { interval: "day" }), null];
  const cur = dailyOf(w, now);
  const prev = earlier && before ? dailyOf(earlier, before) : null;
  return {
    success: true,
    filters: supplied(q, ASK_AI_FILTERS),
    summary: cur.summary,
    ...comparisonEntry(mode, earlier, cur, prev),
    daily_breakdown: cur.daily,
    meta: meta(deps.clock, w),
  };
}

/** GET /v1/analytics/ask-ai/logs (spec 2.6). */
export async function askAiLogs(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const page = clampedCount(q.page, "page", 1, Infinity);
  const limit = clampedCount(q.limit, "limit", DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT);
  const agent = await widgetAgent(deps, tenantId, q);
  const interaction = opt(q, "interaction_type");
  const params = {
    ...windowParams(w),
    tenant_id: tenantId,
    ai_agent: agent,
    placement_id: opt(q, "placement_id"),
    deployment_type: opt(q, "deployment_type"),
    interaction_types: interaction === null ? [...DEFAULT_LOG_INTERACTION_TYPES] : [interaction],
  };
  const count = num((await deps.engine.query("ask_ai_logs_count", params))[0]?.count);
  const offset = (page - 1) * limit;
  const data = offset < count
    ? (await deps.engine.query("ask_ai_logs", { ...params, limit, offset })).map((r) => ({
      timestamp: String(r.timestamp),
      widget_id: String(r.widget_id),
      placement_id: String(r.placement_id),
      deployment_type: String(r.deployment_type),
      ai_agent: String(r.ai_agent),
      referring_url: String(r.referring_url),
      interaction_type: String(r.interaction_type),
      prompt: String(r.prompt),
      response: String(r.response),
    }))
    : [];
  return { data, total_pages: Math.ceil(count / limit), count, meta: meta(deps.clock, w) };
}

/** Sponsored daily rows (zero-filled) and the summary they add up to. */
function sponsoredDaily(w: DateWindow, dailyRows: Record<string, unknown>[]) {
  const byDay = new Map(dailyRows.map((r) => [String(r.date), r]));
  const t = {
    impressions: 0,
    queries: 0,
    total_clicks: 0,
    article_clicks: 0,
    cta_clicks: 0,
    sessions: 0,
    heartbeats: 0,
  };
  const daily = w.days.map((date) => {
    const r = byDay.get(date) ?? {};
    for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += num(r[k]);
    return {
      date,
      queries: num(r.queries),
      engagement_rate: pct(num(r.queries), num(r.impressions)),
      total_clicks: num(r.total_clicks),
    };
  });
  const summary = {
    impressions: t.impressions,
    queries: t.queries,
    sessions: t.sessions,
    avg_session_duration_seconds: avgInt(t.heartbeats * HEARTBEAT_SECONDS, t.sessions),
    total_clicks: t.total_clicks,
    article_clicks: t.article_clicks,
    cta_clicks: t.cta_clicks,
    engagement_rate: pct(t.queries, t.impressions),
    conversion_rate: pct(t.total_clicks, t.impressions),
    avg_queries_per_session: ratio2(t.queries, t.sessions),
  };
  return { daily, summary };
}

/** GET /v1/analytics/sponsored-conversations (spec 2.7). */
export async function sponsoredRollup(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const agentId = opt(q, "agent_id");
  if (agentId !== null && !(await deps.repos.aiModels.getForTenant(tenantId, agentId))) {
    throw analyticsErrors.agent_not_found();
  }
  const campaigns = await deps.repos.campaigns.listByTenant(tenantId);
  const byId = new Map(campaigns.map((c) => [c.id, c]));
  const campaignFilter = opt(q, "campaign_id");
  if (campaignFilter !== null && !hasIdFormat("cp", campaignFilter)) {
    throw analyticsErrors.campaign_id_malformed();
  }
  const campaignIds = campaignFilter === null ? [...byId.keys()] : byId.has(campaignFilter) ? [campaignFilter] : [];
  const params = {
    ...windowParams(w),
    tenant_id: tenantId,
    campaign_ids: campaignIds,
    ai_agent: agentId,
    placement_id: opt(q, "placement_id"),
    prompt_id: opt(q, "prompt_id"),
    creative_id: opt(q, "creative_id"),
    line_item_id: opt(q, "line_item_id"),
    publisher_id: opt(q, "publisher_id"),
  };
  const mode = parseCompare(q.compare);
  const earlier = mode ? { ...earlierWindow(w, mode), tz: w.tz } : null;
  const run = (name: RollupName) => campaignIds.length ? deps.engine.query(name, params) : Promise.resolve([]);
  const [dailyRows, campaignRows, promptRows, clickRows, earlierRows] = await Promise.all([
    run("sponsored_daily"),
    run("sponsored_campaigns"),
    run("sponsored_prompts"),
    run("sponsored_click_types"),
    earlier && campaignIds.length
      ? deps.engine.query("sponsored_daily", { ...params, ...windowParams(earlier) })
      : Promise.resolve([]),
  ]);
  const cur = sponsoredDaily(w, dailyRows);
  const prev = earlier ? sponsoredDaily(earlier, earlierRows) : null;
  return {
    success: true,
    filters: supplied(q, SPONSORED_FILTERS),
    summary: cur.summary,
    ...comparisonEntry(mode, earlier, cur, prev),
    daily_breakdown: cur.daily,
    campaign_breakdown: campaignRows.map((r) => {
      const c = byId.get(String(r.campaign_id));
      return {
        campaign_id: String(r.campaign_id),
        campaign_name: c?.name ?? "",
        creative_ids: [...(c?.creativeIds ?? [])],
        impressions: num(r.impressions),
        queries: num(r.queries),
        total_clicks: num(r.total_clicks),
        engagement_rate: pct(num(r.queries), num(r.impressions)),
      };
    }),
    prompt_breakdown: promptRows.map((r) => ({
      prompt_id: "",
      prompt_text: String(r.prompt_text),
      impressions: num(r.impressions),
      queries: num(r.queries),
      engagement_rate: pct(num(r.queries), num(r.impressions)),
    })),
    click_type_breakdown: clickRows.map((r) => ({ type: String(r.type), count: num(r.count) })),
    meta: meta(deps.clock, w),
  };
}

/** The summary and engagement-time blocks of session intelligence from its query's rows. */
function sessionFigures(rows: Record<string, unknown>[]) {
  const s = rows.find((r) => r.kind === "summary") ?? {};
  const engaged = num(s.n1);
  const totalQueries = num(s.n2);
  const twoPlus = num(s.n3);
  const single = num(s.n4);
  const seconds = num(s.n6);
  return {
    engaged,
    totalQueries,
    summary: {
      total_engaged_sessions: engaged,
      total_queries: totalQueries,
      average_queries_per_session: ratio2(totalQueries, engaged),
      sessions_with_2_plus_queries: twoPlus,
      sessions_with_2_plus_queries_percentage: pct(twoPlus, engaged),
      single_query_sessions: single,
      single_query_sessions_percentage: pct(single, engaged),
      max_queries_in_session: num(s.n5),
    },
    engagement_time: {
      total_session_time_seconds: seconds,
      average_engagement_time_per_session_seconds: avgInt(seconds, engaged),
      median_engagement_time_per_session_seconds: num(s.n7),
    },
  };
}

/** GET /v1/analytics/session-intelligence (spec 2.8). */
export async function sessionIntelligence(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const mode = parseCompare(q.compare);
  const earlier = mode ? { ...earlierWindow(w, mode), tz: w.tz } : null;
  const agent = await widgetAgent(deps, tenantId, q);
  const filters = blockFilters(tenantId, agent, q);
  const [rows, earlierRows] = await Promise.all([
    deps.engine.query("session_intelligence", { ...windowParams(w), ...filters }),
    earlier ? deps.engine.query("session_intelligence", { ...windowParams(earlier), ...filters }) : null,
  ]);
  const cur = sessionFigures(rows);
  const prev = earlierRows ? sessionFigures(earlierRows) : null;
  const { engaged, totalQueries } = cur;
  const of = (kind: string) => rows.filter((r) => r.kind === kind);
  const depth = new Map(of("depth").map((r) => [String(r.k1), num(r.n1)]));
  const byCountThenName = <T extends { n: number; k: string }>(a: T, b: T) =>
    b.n - a.n || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0);
  return {
    session_intelligence: {
      summary: cur.summary,
      ...(prev && earlier
        ? {
          comparison: {
            compare: mode,
            start_date: earlier.start,
            end_date: earlier.end,
            summary: prev.summary,
            engagement_time: prev.engagement_time,
            change: {
              ...changes(cur.summary, prev.summary),
              ...changes(cur.engagement_time, prev.engagement_time),
            },
          },
        }
        : {}),
      engagement_time: cur.engagement_time,
      intent_breakdown: of("intent").map((r) => ({ k: String(r.k1), n: num(r.n1) })).sort(byCountThenName).map((
        { k, n },
      ) => ({ intent_type: k, label: INTENT_LABELS[k] ?? k, sessions: n, percentage: pct(n, engaged) })),
      top_queried_topics: of("topic").map((r) => ({ k: String(r.k1), c: String(r.k2), n: num(r.n1) })).sort(
        byCountThenName,
      ).map(({ k, c, n }) => ({ query: k, category: c, count: n })),
      category_distribution: of("category").map((r) => ({ k: String(r.k1), n: num(r.n1) })).sort(byCountThenName)
        .map(({ k, n }) => ({ category: k, count: n, percentage: pct(n, totalQueries) })),
      session_engagement_distribution: QUERY_DEPTH_BUCKETS.map((b) => ({
        query_depth: b,
        sessions: depth.get(b) ?? 0,
        percentage: pct(depth.get(b) ?? 0, engaged),
      })),
    },
    // Beside the spec's root object, as on the other endpoints: the zone the window was read in.
    meta: meta(deps.clock, w),
  };
}
