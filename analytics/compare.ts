/**
 * `compare=previous_period|previous_year`: the earlier window a request is compared with, and the
 * change of each metric.
 */
import { analyticsErrors } from "./errors.ts";
import { type DateWindow, formatDay, parseDay, utcDay } from "./filters.ts";

/** Comparison modes. */
export const COMPARE_MODES = ["previous_period", "previous_year"] as const;
export type CompareMode = (typeof COMPARE_MODES)[number];

const DAY_MS = 86_400_000;

/** The compare mode a request asks for, or null. @throws 400 for another value. */
export function parseCompare(value: string | undefined): CompareMode | null {
  if (value === undefined || value === "") return null;
  if (!(COMPARE_MODES as readonly string[]).includes(value)) {
    throw analyticsErrors.compare_invalid();
  }
  return value as CompareMode;
}

/** The same calendar date a year earlier (29 February becomes 28 February). */
function yearEarlier(day: string): string {
  const [y, m, d] = day.split("-").map(Number) as [number, number, number];
  const last = new Date(utcDay(y - 1, m, 0)).getUTCDate();
  return formatDay(utcDay(y - 1, m - 1, Math.min(d, last)));
}

/**
 * The earlier window: `previous_period` is as many days ending the day before the start;
 * `previous_year` the same dates a year earlier.
 */
export function earlierWindow(w: DateWindow, mode: CompareMode): DateWindow {
  let start: number;
  let end: number;
  if (mode === "previous_period") {
    end = parseDay(w.start)! - DAY_MS;
    start = end - (w.days.length - 1) * DAY_MS;
  } else {
    start = parseDay(yearEarlier(w.start))!;
    end = parseDay(yearEarlier(w.end))!;
  }
  const days: string[] = [];
  for (let d = start; d <= end; d += DAY_MS) days.push(formatDay(d));
  return { start: formatDay(start), end: formatDay(end), days };
}

/**
 * Relative change of every numeric field, in percent rounded to 2 decimals; null where the
 * earlier value is 0 (no meaningful ratio).
 */
export function changes<T extends Record<string, number>>(current: T, earlier: T): Record<keyof T, number | null> {
  const out = {} as Record<keyof T, number | null>;
  for (const k of Object.keys(current) as (keyof T)[]) {
    const a = current[k];
    const b = earlier[k];
    out[k] = b === 0 ? null : Math.round(((a - b) * 10_000) / Math.abs(b)) / 100;
  }
  return out;
}

/** A window's summary and daily rows. */
export interface SummaryAndDaily<S extends Record<string, number>, D> {
  summary: S;
  daily: D[];
}

/**
 * The `comparison` entry of an answer that has `summary` and `daily_breakdown`: the earlier
 * window's dates, summary, daily rows and the change per metric; nothing without `compare`.
 */
export function comparisonEntry<S extends Record<string, number>, D>(
  mode: CompareMode | null,
  earlier: DateWindow | null,
  cur: SummaryAndDaily<S, D>,
  prev: SummaryAndDaily<S, D> | null,
) {
  if (!mode || !earlier || !prev) return {};
  return {
    comparison: {
      compare: mode,
      start_date: earlier.start,
      end_date: earlier.end,
      summary: prev.summary,
      change: changes(cur.summary, prev.summary),
      daily_breakdown: prev.daily,
    },
  };
}
