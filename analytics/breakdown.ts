/**
 * GET /v1/analytics/ask-ai/breakdown: the Ask AI summary metrics per value of one dimension (a
 * column, or local time buckets with `dimension=date&interval=...`), sortable and limited, with an
 * optional comparison against an earlier window.
 */
import { analyticsErrors } from "./errors.ts";
import { INTENT_LABELS } from "./classifier.ts";
import { changes, earlierWindow, parseCompare } from "./compare.ts";
import { comparedCounts } from "./compare_counts.ts";
import type { ExportColumn } from "./export.ts";
import { clampedCount, supplied } from "./filters.ts";
import {
  addCounts,
  BLOCK_TOTAL,
  blockCounts,
  bucketLabels,
  COLUMN_DIMENSIONS,
  type Counts,
  type Grouping,
  type Interval,
  INTERVALS,
  summaryOf,
  zeroCounts,
} from "./metrics.ts";
import {
  type AnalyticsQuery,
  ASK_AI_FILTERS,
  blockFilters,
  meta,
  requestWindow,
  type RollupDeps,
  widgetAgent,
} from "./rollups.ts";

/** Dimensions a breakdown accepts. */
export const DIMENSIONS = ["date", ...COLUMN_DIMENSIONS] as const;
/** Fields rows can be sorted by. */
export const SORT_FIELDS = [
  "key",
  "widget_loads",
  "viewable_sessions",
  "engagement_queries",
  "total_clicks",
  "article_clicks",
  "cta_clicks",
  "sessions",
  "total_session_time_seconds",
  "avg_session_duration_seconds",
  "viewability_rate",
  "engagement_rate",
  "engagement_session_rate",
  "query_to_click_rate",
] as const;
export type SortField = (typeof SORT_FIELDS)[number];
/** The metrics that are percentages (DOUBLE in a Parquet export); the others are whole numbers. */
const RATE_FIELDS: readonly SortField[] = [
  "viewability_rate",
  "engagement_rate",
  "engagement_session_rate",
  "query_to_click_rate",
];

/** The columns of a breakdown export, in order, with their types: `key` (and `label` for intents), then every metric. */
export function breakdownExportColumns(dimension: string | undefined): ExportColumn[] {
  return [
    ["key", "VARCHAR"],
    ...(dimension === "intent" ? [["label", "VARCHAR"] as const] : []),
    ...SORT_FIELDS.filter((f) => f !== "key").map((f) => [f, RATE_FIELDS.includes(f) ? "DOUBLE" : "BIGINT"] as const),
  ];
}
/** Query parameters of the breakdown besides the ask-ai filters (cache key, not echoed). */
export const BREAKDOWN_PARAMS = ["dimension", "interval", "sort", "order", "limit", "compare"] as const;
/** Default number of rows of a column dimension (a date series is whole by default), and the largest. */
export const DEFAULT_BREAKDOWN_LIMIT = 100;
export const MAX_BREAKDOWN_LIMIT = 10_000;

const oneOf = <T extends string>(q: AnalyticsQuery, name: string, allowed: readonly T[], fallback: T | null): T => {
  const v = q[name];
  if (v === undefined || v === "") {
    if (fallback === null) throw analyticsErrors.choice_required({ name, allowed });
    return fallback;
  }
  if (!(allowed as readonly string[]).includes(v)) {
    throw analyticsErrors.choice_invalid({ name, allowed });
  }
  return v as T;
};

/** The validated breakdown options of a request. @throws 400 naming the bad parameter. */
export function breakdownOptions(q: AnalyticsQuery) {
  const dimension = oneOf(q, "dimension", DIMENSIONS, null);
  if (dimension !== "date" && q.interval !== undefined && q.interval !== "") {
    throw analyticsErrors.interval_needs_date();
  }
  const interval: Interval = oneOf(q, "interval", INTERVALS, "day");
  const sort: SortField = oneOf(q, "sort", SORT_FIELDS, dimension === "date" ? "key" : "sessions");
  const order = oneOf(q, "order", ["asc", "desc"] as const, sort === "key" ? "asc" : "desc");
  // A time series is whole unless a limit is asked for (366 days of hours fit), so its rows add up
  // to the summary; 100 is the default of the top-N lists of a column.
  const fallback = dimension === "date" ? MAX_BREAKDOWN_LIMIT : DEFAULT_BREAKDOWN_LIMIT;
  const limit = clampedCount(q.limit, "limit", fallback, MAX_BREAKDOWN_LIMIT);
  return { dimension, interval, sort, order, limit, compare: parseCompare(q.compare) };
}

type Row = { key: string | null; label?: string } & ReturnType<typeof summaryOf>;

function rowsOf(counts: Map<string, Counts>, keys: string[] | null, dimension: string): Row[] {
  const list = keys ?? [...counts.keys()];
  return list.map((k) => {
    const row: Row = { key: k === "" ? null : k, ...summaryOf(counts.get(k) ?? zeroCounts()) };
    if (dimension === "intent") row.label = k === "" ? "" : INTENT_LABELS[k] ?? k;
    return row;
  });
}

function sortRows(rows: Row[], sort: SortField, order: "asc" | "desc"): Row[] {
  const dir = order === "asc" ? 1 : -1;
  const keyCmp = (a: Row, b: Row) => ((a.key ?? "") < (b.key ?? "") ? -1 : (a.key ?? "") > (b.key ?? "") ? 1 : 0);
  return rows.sort((a, b) => {
    if (sort === "key") return dir * keyCmp(a, b);
    return dir * (a[sort] - b[sort]) || keyCmp(a, b);
  });
}

/** The breakdown answer. */
export async function askAiBreakdown(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const opts = breakdownOptions(q);
  const w = await requestWindow(deps, q);
  const agent = await widgetAgent(deps, tenantId, q);
  const filters = blockFilters(tenantId, agent, q);
  // A column's values come from the query already cut to the rows shown (a column may hold millions
  // of values, placements and referrers come from pages); the earlier window counts the same values.
  const column = opts.dimension === "date" ? null : opts.dimension;
  const grouping: Grouping = column === null ? { interval: opts.interval } : {
    dimension: column,
    top: { sort: opts.sort, descending: opts.order === "desc", limit: opts.limit },
  };
  const sameValues = column === null ? undefined : (now: Map<string, Counts>): Grouping => ({
    dimension: column,
    keys: [...now.keys()].filter((k) => k !== BLOCK_TOTAL),
  });
  const earlier = opts.compare ? { ...earlierWindow(w, opts.compare), tz: w.tz } : null;
  // A column grouping carries the whole block (each session once) under BLOCK_TOTAL; the day
  // series adds up to it.
  const [counts, earlierCounts] = earlier
    ? await comparedCounts(deps, w, earlier, filters, grouping, sameValues)
    : [await blockCounts(deps, w, filters, grouping), null];
  const totalOf = (m: Map<string, Counts>) => {
    if (opts.dimension === "date") return [...m.values()].reduce(addCounts, zeroCounts());
    const t = m.get(BLOCK_TOTAL) ?? zeroCounts();
    m.delete(BLOCK_TOTAL);
    return t;
  };
  const total = totalOf(counts);
  const earlierTotal = earlierCounts ? totalOf(earlierCounts) : null;
  const keys = opts.dimension === "date" ? bucketLabels(w, opts.interval) : null;
  const rows = sortRows(rowsOf(counts, keys, opts.dimension), opts.sort, opts.order).slice(0, opts.limit);
  const summary = summaryOf(total);
  let comparison = null;
  if (earlier && earlierCounts) {
    const before = summaryOf(earlierTotal ?? zeroCounts());
    const earlierRows = opts.dimension === "date"
      ? rowsOf(earlierCounts, bucketLabels(earlier, opts.interval), opts.dimension)
      : rowsOf(earlierCounts, rows.map((r) => r.key ?? ""), opts.dimension);
    comparison = {
      compare: opts.compare,
      start_date: earlier.start,
      end_date: earlier.end,
      summary: before,
      change: changes(summary, before),
      // Dates: the earlier window's buckets in order; columns: the same keys as `rows`.
      rows: earlierRows,
    };
  }
  return {
    success: true,
    filters: supplied(q, ASK_AI_FILTERS),
    breakdown: {
      dimension: opts.dimension,
      ...(opts.dimension === "date" ? { interval: opts.interval } : {}),
      sort: opts.sort,
      order: opts.order,
      limit: opts.limit,
    },
    summary,
    ...(comparison ? { comparison } : {}),
    rows,
    meta: meta(deps.clock, w),
  };
}
