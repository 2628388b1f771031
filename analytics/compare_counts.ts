/**
 * Block counts of a window and of the earlier window it is compared with (`compare`). The earlier
 * window's counts come from the window memo when its files have not changed since they were
 * computed; otherwise a time series reads both windows in one scan, and a column grouping runs its
 * two queries side by side. Every figure is what the window's own query gives.
 */
import type { AnalyticsEngine } from "./engine.ts";
import {
  blockCounts,
  blockCountsPair,
  type BlockFilters,
  type Counts,
  type Grouping,
  type ZonedWindow,
} from "./metrics.ts";
import type { WindowMemo } from "./window_memo.ts";

/** What {@link comparedCounts} reads. */
export interface CompareDeps {
  engine: AnalyticsEngine;
  /** Keeps earlier windows' counts across requests (absent: always computed). */
  memo?: WindowMemo;
}

/** Whether two windows of the same zone share a day. */
const overlaps = (a: ZonedWindow, b: ZonedWindow) => a.start <= b.end && b.start <= a.end;

/** The counts of `w` and of `earlier` (same zone, filters and grouping). */
export async function comparedCounts(
  deps: CompareDeps,
  w: ZonedWindow,
  earlier: ZonedWindow,
  filters: BlockFilters,
  grouping: Grouping,
): Promise<[Map<string, Counts>, Map<string, Counts>]> {
  const memo = deps.memo?.enabled ? deps.memo : null;
  const rollups = "interval" in grouping
    ? ["ask_ai_by_time", "ask_ai_by_time_pair"] as const
    : ["ask_ai_by_column"] as const;
  const key = memo ? await memo.key(filters.tenant_id, rollups, { filters, grouping }, earlier) : null;
  const kept = key ? await memo!.get(key) : null;
  if (kept) return [await blockCounts(deps.engine, w, filters, grouping), kept];
  // A 366-day window compared with the year before shares a day with it: each then runs alone.
  const both = "interval" in grouping && !overlaps(w, earlier)
    ? await blockCountsPair(deps.engine, w, earlier, filters, grouping.interval)
    : await Promise.all([
      blockCounts(deps.engine, w, filters, grouping),
      blockCounts(deps.engine, earlier, filters, grouping),
    ]);
  if (key) await memo!.set(key, both[1]);
  return both;
}
