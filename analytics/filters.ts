/**
 * Query-string rules shared by the four analytics endpoints: dates, the default window, the
 * 365-day limit, and the echo of supplied filters.
 */
import type { Clock } from "../core/clock.ts";
import { analyticsErrors } from "./errors.ts";

/** Largest allowed difference between end_date and start_date, in days. */
export const MAX_WINDOW_DAYS = 365;
/** Days in the default window (today and the 6 days before it). */
export const DEFAULT_WINDOW_DAYS = 7;

const DAY_MS = 86_400_000;

/**
 * UTC midnight ms of a calendar date, for any year 0 to 9999 (`Date.UTC` reads the years 0 to 99
 * as 1900 to 1999). Month and day may overflow, as with `Date.UTC`.
 */
export function utcDay(year: number, monthIndex: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, monthIndex, day);
  return d.getTime();
}

/** Parses a strict `YYYY-MM-DD` calendar date (years 0000 to 9999) to UTC midnight ms, or null. */
export function parseDay(value: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const ms = utcDay(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return formatDay(ms) === value ? ms : null;
}

/**
 * The first date a request may name: the calendar has no year 0, and with it every earlier window
 * a comparison reads (at most 366 days, or a year, before) still has a four-digit year.
 */
const FIRST_DAY_MS = utcDay(1, 0, 1);

/** A request's date parameter, or null when malformed, impossible or before 0001-01-01. */
const requestDay = (value: string): number | null => {
  const ms = parseDay(value);
  return ms === null || ms < FIRST_DAY_MS ? null : ms;
};

/** UTC midnight ms to `YYYY-MM-DD`. */
export const formatDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The resolved date window. */
export interface DateWindow {
  start: string;
  end: string;
  /** Every day of the window, ascending. */
  days: string[];
}

/**
 * Resolves start_date/end_date: end defaults to today (`today`, the date in the request's time
 * zone; UTC from `clock` by default), start to end minus 6 days (so with neither given: the
 * trailing 7 days ending today).
 * @throws 400 for a malformed date, an end before the start, or a window over 365 days.
 */
export function resolveWindow(
  q: { start_date?: string; end_date?: string },
  clock: Clock,
  today: string = formatDay(clock.now().getTime()),
): DateWindow {
  const todayMs = parseDay(today)!;
  let startMs: number | null = null;
  let endMs: number | null = null;
  if (q.start_date !== undefined) {
    startMs = requestDay(q.start_date);
    if (startMs === null) throw analyticsErrors.start_date_invalid();
  }
  if (q.end_date !== undefined) {
    endMs = requestDay(q.end_date);
    if (endMs === null) throw analyticsErrors.end_date_invalid();
  }
  endMs ??= todayMs;
  startMs ??= endMs - (DEFAULT_WINDOW_DAYS - 1) * DAY_MS;
  if (endMs < startMs) throw analyticsErrors.end_before_start();
  if ((endMs - startMs) / DAY_MS > MAX_WINDOW_DAYS) {
    throw analyticsErrors.range_too_long({ maxDays: MAX_WINDOW_DAYS });
  }
  const days: string[] = [];
  for (let d = startMs; d <= endMs; d += DAY_MS) days.push(formatDay(d));
  return { start: formatDay(startMs), end: formatDay(endMs), days };
}

/**
 * The supplied filters among `names`, in that order, for the `filters` echo. Empty values count as
 * not supplied.
 */
export function supplied(query: Record<string, string | undefined>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = query[n];
    if (v !== undefined && v !== "") out[n] = v;
  }
  return out;
}

/**
 * A row-count parameter (`limit`): `fallback` when absent or empty, a whole number >= 1 otherwise,
 * silently reduced to `max` however many digits it has (as the logs page size, spec section 8).
 * @throws 400 `<name> must be an integer >= 1`
 */
export function clampedCount(value: string | undefined, name: string, fallback: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw analyticsErrors.count_invalid({ name });
  return Math.min(Number(value), max);
}

/** A percentage of `n` over `d`, rounded half up to 2 decimals; 0 when `d` is 0. */
export function pct(n: number, d: number): number {
  return d === 0 ? 0 : Math.round((n * 10_000) / d) / 100;
}

/** `n / d` rounded half up to 2 decimals; 0 when `d` is 0. */
export function ratio2(n: number, d: number): number {
  return d === 0 ? 0 : Math.round((n * 100) / d) / 100;
}

/** `n / d` rounded half up to a whole number; 0 when `d` is 0. */
export function avgInt(n: number, d: number): number {
  return d === 0 ? 0 : Math.round(n / d);
}
