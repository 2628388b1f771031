/**
 * Query-string rules shared by the four analytics endpoints: dates, the default window, the
 * 365-day limit, and the echo of supplied filters.
 */
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";

/** Largest allowed difference between end_date and start_date, in days. */
export const MAX_WINDOW_DAYS = 365;
/** Days in the default window (today and the 6 days before it). */
export const DEFAULT_WINDOW_DAYS = 7;

const DAY_MS = 86_400_000;

/** A 400 with the analytics `{message}` body. */
export const analyticsBadRequest = (message: string) => new AppError(400, "invalid_query", message);

/** Parses a strict `YYYY-MM-DD` calendar date to UTC midnight ms, or null. */
export function parseDay(value: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return formatDay(ms) === value ? ms : null;
}

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
    startMs = parseDay(q.start_date);
    if (startMs === null) throw analyticsBadRequest("start_date must be a valid date in YYYY-MM-DD format");
  }
  if (q.end_date !== undefined) {
    endMs = parseDay(q.end_date);
    if (endMs === null) throw analyticsBadRequest("end_date must be a valid date in YYYY-MM-DD format");
  }
  endMs ??= todayMs;
  startMs ??= endMs - (DEFAULT_WINDOW_DAYS - 1) * DAY_MS;
  if (endMs < startMs) throw analyticsBadRequest("end_date must be on or after start_date");
  if ((endMs - startMs) / DAY_MS > MAX_WINDOW_DAYS) {
    throw analyticsBadRequest(`date range must not exceed ${MAX_WINDOW_DAYS} days`);
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
