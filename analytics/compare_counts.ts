/**
 * Block counts of a window and of the earlier window it is compared with (`compare`). The earlier
 * window's counts come from the window memo when its files have not changed since they were
 * computed; otherwise both windows' queries run side by side. Every figure is what the window's own
 * query gives.
 *
 * Reading both windows in one scan (each event tagged with its window, every group kept per window)
 * was measured and dropped: the cost is the per-event GROUP BY over sessions, linear in the events
 * read, so one scan of both windows took as much CPU as the two queries (1.5 to 2.2 s against 1.5 to
 * 1.7 s, the plain rollup 0.8 s) and needed a second copy of the rollup's SQL.
 */
import {
  blockCounts,
  type BlockFilters,
  type BlockSource,
  type Counts,
  type Grouping,
  type ZonedWindow,
} from "./metrics.ts";
import type { WindowMemo } from "./window_memo.ts";

/** What {@link comparedCounts} reads. */
export interface CompareDeps extends BlockSource {
  /** Keeps earlier windows' counts across requests (absent: always computed). */
  memo?: WindowMemo;
}

/**
 * The counts of `w` and of `earlier` (same zone and filters). The earlier window is grouped as `w`,
 * or, with `earlierGrouping`, as it says from the counts of `w` (a top-N column breakdown compares
 * the same values: `w`'s are counted first).
 */
export async function comparedCounts(
  deps: CompareDeps,
  w: ZonedWindow,
  earlier: ZonedWindow,
  filters: BlockFilters,
  grouping: Grouping,
  earlierGrouping?: (now: Map<string, Counts>) => Grouping,
): Promise<[Map<string, Counts>, Map<string, Counts>]> {
  const memo = deps.memo?.enabled ? deps.memo : null;
  const rollups = "interval" in grouping ? ["ask_ai_by_time"] as const : ["ask_ai_by_column"] as const;
  const memoKey = (g: Grouping) =>
    memo ? memo.key(filters.tenant_id, rollups, { filters, grouping: g }, earlier) : null;
  if (earlierGrouping) {
    const now = await blockCounts(deps, w, filters, grouping);
    const g = earlierGrouping(now);
    const key = await memoKey(g);
    const kept = key ? await memo!.get(key) : null;
    if (kept) return [now, kept];
    const before = await blockCounts(deps, earlier, filters, g);
    if (key) await memo!.set(key, before);
    return [now, before];
  }
  const key = await memoKey(grouping);
  const kept = key ? await memo!.get(key) : null;
  if (kept) return [await blockCounts(deps, w, filters, grouping), kept];
  const both = await Promise.all([
    blockCounts(deps, w, filters, grouping),
    blockCounts(deps, earlier, filters, grouping),
  ]);
  if (key) await memo!.set(key, both[1]);
  return both;
}
