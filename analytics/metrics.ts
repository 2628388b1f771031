/**
 * The Ask AI metric block (spec 2.5 summary) of any filtered set of events, grouped by a dimension
 * or by local time buckets. The ask-ai rollup, the breakdown and the comparison all read it, so a
 * figure means the same everywhere; ratios are computed here from the integer counts beside them.
 */
import { daysRead } from "./day_swaps.ts";
import type { AnalyticsEngine } from "./engine.ts";
import { VisitCube } from "./visit_cube.ts";
import { avgInt, type DateWindow, formatDay, parseDay, pct, utcDay } from "./filters.ts";
import { HEARTBEAT_SECONDS } from "./schema.ts";
import { num } from "./sql_util.ts";
import { dayStartMs } from "./timezone.ts";

const DAY_MS = 86_400_000;

/** A date window read in a time zone. */
export interface ZonedWindow extends DateWindow {
  /** IANA zone the dates are read in and buckets are cut in. */
  tz: string;
}

/** An instant as a DuckDB TIMESTAMP literal (UTC, like the `ts` column). */
const sqlTimestamp = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "");

/**
 * Bound parameters naming a zoned window: `start_ts` .. `end_ts` (exclusive) are the UTC instants of
 * the zone's first local midnight and of the one after the last day (computed here: see
 * {@link dayStartMs}); `from_date`/`to_date` the UTC day folders they fall in, so only those
 * folders are read; `tz` the zone buckets are labelled in.
 */
export function windowParams(w: ZonedWindow, edges = windowEdgesMs(w)) {
  const { start: first, end: after } = edges;
  return {
    from_date: formatDay(Math.floor(first / DAY_MS) * DAY_MS),
    to_date: formatDay(Math.floor((after - 1) / DAY_MS) * DAY_MS),
    start_ts: sqlTimestamp(first),
    end_ts: sqlTimestamp(after),
    tz: w.tz,
  };
}

/** The UTC instants of a zoned window's first local midnight and of the one after its last day. */
export function windowEdgesMs(w: ZonedWindow): { start: number; end: number } {
  return { start: dayStartMs(parseDay(w.start)!, w.tz), end: dayStartMs(parseDay(w.end)! + DAY_MS, w.tz) };
}

/** Filters of the Ask AI block (null = not filtered). */
export interface BlockFilters {
  tenant_id: string;
  ai_agent: string | null;
  placement_id: string | null;
  deployment_type: string | null;
  creative_id: string | null;
  line_item_id: string | null;
  publisher_id: string | null;
}

/** Columns a breakdown can group by (the SQL maps each to its column). */
export const COLUMN_DIMENSIONS = [
  "widget_id",
  "placement_id",
  "deployment_type",
  "interaction_type",
  "referring_url",
  "ai_agent",
  "intent",
  "category",
] as const;
export type ColumnDimension = (typeof COLUMN_DIMENSIONS)[number];
/** Local time buckets of the `date` dimension. */
export const INTERVALS = ["hour", "day", "week", "month"] as const;
export type Interval = (typeof INTERVALS)[number];

/**
 * A column grouping: every value of the column, or (a dimension may hold millions of values) only
 * the first `top.limit` in a breakdown's order, or only the values in `keys`; the whole block always.
 */
export interface ColumnGrouping {
  dimension: ColumnDimension;
  top?: { sort: string; descending: boolean; limit: number };
  keys?: string[];
}

/** Group by a column, or by local time buckets. */
export type Grouping = ColumnGrouping | { interval: Interval };

/** The bound parameters of a column grouping's pick (analytics/sql/ask_ai_by_column.sql). */
const pickParams = ({ top, keys }: ColumnGrouping) => ({
  sort: top?.sort ?? "key",
  descending: top?.descending ?? false,
  limit: top?.limit ?? Number.MAX_SAFE_INTEGER,
  keyed: keys !== undefined,
  keys: keys ?? [],
  heartbeat_seconds: HEARTBEAT_SECONDS,
});

/** The integer counts of one block. */
export interface Counts {
  widget_loads: number;
  viewable_sessions: number;
  engagement_queries: number;
  total_clicks: number;
  article_clicks: number;
  cta_clicks: number;
  sessions: number;
  engaged_sessions: number;
  heartbeats: number;
}

const COUNT_KEYS: (keyof Counts)[] = [
  "widget_loads",
  "viewable_sessions",
  "engagement_queries",
  "total_clicks",
  "article_clicks",
  "cta_clicks",
  "sessions",
  "engaged_sessions",
  "heartbeats",
];

/** All-zero counts. */
export const zeroCounts = (): Counts => Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])) as unknown as Counts;

/** Adds `b` into `a`. */
export function addCounts(a: Counts, b: Counts): Counts {
  for (const k of COUNT_KEYS) a[k] += b[k];
  return a;
}

/** The 13 summary metrics of spec 2.5 from a block's counts. */
export function summaryOf(t: Counts) {
  const totalSeconds = t.heartbeats * HEARTBEAT_SECONDS;
  return {
    widget_loads: t.widget_loads,
    viewable_sessions: t.viewable_sessions,
    engagement_queries: t.engagement_queries,
    total_clicks: t.total_clicks,
    article_clicks: t.article_clicks,
    cta_clicks: t.cta_clicks,
    sessions: t.sessions,
    total_session_time_seconds: totalSeconds,
    avg_session_duration_seconds: avgInt(totalSeconds, t.sessions),
    viewability_rate: pct(t.viewable_sessions, t.sessions),
    engagement_rate: pct(t.engagement_queries, t.widget_loads),
    engagement_session_rate: pct(t.engaged_sessions, t.sessions),
    query_to_click_rate: pct(t.total_clicks, t.engagement_queries),
  };
}
export type Summary = ReturnType<typeof summaryOf>;

/**
 * Runs the block query. Keys are the dimension's values (`""` where an event has none) or local
 * bucket labels: `YYYY-MM-DDTHH:00` (hour), `YYYY-MM-DD` (day, and the Monday of a week), `YYYY-MM`.
 */
export async function blockCounts(
  source: BlockSource,
  w: ZonedWindow,
  filters: BlockFilters,
  grouping: Grouping,
): Promise<Map<string, Counts>> {
  const { engine } = source;
  if (!("interval" in grouping)) {
    return countsOf(
      await engine.query("ask_ai_by_column", {
        ...windowParams(w),
        ...filters,
        ...pickParams(grouping),
        dimension: grouping.dimension,
      }),
    );
  }
  const edges = windowEdgesMs(w);
  const params = { ...windowParams(w, edges), ...filters, interval: grouping.interval };
  const visits = source.visits && VisitCube.fits(edges.start, edges.end) ? source.visits : null;
  if (!visits) return countsOf(await engine.query("ask_ai_by_time", params));
  // The plan lists the day folders: under the swap guard with the query, or a day being swapped
  // (no file listed) would be in neither the figure files nor the raw days, and left out.
  return await engine.listingThenQuery(daysRead(params), async () => {
    const plan = await visits.plan(params.from_date, params.to_date);
    if (!plan.files.length) return countsOf(await engine.query("ask_ai_by_time", params));
    const raw = plan.rawDays;
    return countsOf(
      await engine.query("ask_ai_by_time_derived", {
        ...params,
        derived_files: plan.files,
        raw_days: raw,
        raw_from: raw[0] ?? null,
        raw_to: raw.at(-1) ?? null,
      }),
    );
  });
}

/** Where {@link blockCounts} reads: the engine, and derived visit figures where they exist. */
export interface BlockSource {
  engine: AnalyticsEngine;
  /** Derived figures of closed days (absent: every day's events are read). */
  visits?: VisitCube;
}

function countsOf(rows: Record<string, unknown>[]): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const r of rows) {
    const c = zeroCounts();
    for (const k of COUNT_KEYS) c[k] = num(r[k]);
    out.set(r.key === null ? BLOCK_TOTAL : String(r.key), c);
  }
  return out;
}

/** Key of the whole block in a column grouping's result (each session once; no data key holds NUL). */
export const BLOCK_TOTAL = "\u0000total";

/** Every local bucket label of a window, ascending (zero-filling time series). */
export function bucketLabels(w: DateWindow, interval: Interval): string[] {
  const start = parseDay(w.start)!;
  const end = parseDay(w.end)!;
  const out: string[] = [];
  if (interval === "day") return [...w.days];
  if (interval === "hour") {
    for (const d of w.days) for (let h = 0; h < 24; h++) out.push(`${d}T${String(h).padStart(2, "0")}:00`);
    return out;
  }
  if (interval === "week") {
    // ISO weeks start on Monday (what DuckDB's date_trunc('week') gives).
    const dow = (new Date(start).getUTCDay() + 6) % 7;
    for (let d = start - dow * DAY_MS; d <= end; d += 7 * DAY_MS) out.push(formatDay(d));
    return out;
  }
  const s = new Date(start);
  for (let y = s.getUTCFullYear(), m = s.getUTCMonth(); utcDay(y, m, 1) <= end; m === 11 ? (y++, m = 0) : m++) {
    out.push(`${String(y).padStart(4, "0")}-${String(m + 1).padStart(2, "0")}`);
  }
  return out;
}
