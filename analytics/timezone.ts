/**
 * The `timezone` query parameter of the analytics endpoints: an IANA zone name in which dates are
 * read and days, hours, weeks and months are bucketed. DuckDB does the bucketing (ICU); this module
 * checks names, finds "today" in a zone and the instant a local day starts (a window's edges).
 */
import { analyticsErrors } from "./errors.ts";
import { formatDay } from "./filters.ts";

/** The zone used when none is given. */
export const DEFAULT_TIMEZONE = "UTC";

const NAME = /^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+){0,2}$/;
const dayFormats = new Map<string, Intl.DateTimeFormat>();

function dayFormat(zone: string): Intl.DateTimeFormat | null {
  let f = dayFormats.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });
    } catch {
      return null;
    }
    if (dayFormats.size > 1000) dayFormats.clear();
    dayFormats.set(zone, f);
  }
  return f;
}

/**
 * The zone a request asks for, or UTC.
 * @param known zone names DuckDB knows (from `pg_timezone_names()`), so a name the runtime accepts
 *   but the query engine does not is refused too.
 * @throws 400 `timezone must be a valid IANA time zone name` (the input is not echoed).
 */
export function parseTimezone(value: string | undefined, known: ReadonlySet<string>): string {
  if (value === undefined || value === "") return DEFAULT_TIMEZONE;
  if (value.length > 64 || !NAME.test(value) || !known.has(value) || !dayFormat(value)) {
    throw analyticsErrors.timezone_invalid();
  }
  return value;
}

/** The calendar date (`YYYY-MM-DD`) of an instant in a zone. */
export function dayInZone(instant: Date, zone: string): string {
  return dayFormat(zone)!.format(instant);
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset in ms at an instant (east positive). */
export function offsetMs(instantMs: number, zone: string): number {
  let f = offsetFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    if (offsetFormats.size > 1000) offsetFormats.clear();
    offsetFormats.set(zone, f);
  }
  const name = f.formatToParts(instantMs).find((p) => p.type === "timeZoneName")?.value ?? "GMT";
  const m = /GMT([+-])(\d{2}):(\d{2})(?::(\d{2}))?/.exec(name);
  return m ? (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 3600_000 + Number(m[3]) * 60_000 + Number(m[4] ?? 0) * 1000) : 0;
}

const HOUR_MS = 3600_000;

/**
 * The first instant (UTC ms) of a local calendar day (`YYYY-MM-DD` as UTC-midnight ms) in a zone.
 * Where local midnight comes twice (a fall-back at midnight, e.g. America/Havana) it is the first
 * one; where midnight is skipped (a spring-forward at midnight, e.g. America/Santiago) it is the
 * instant the day begins. ICU's local-to-UTC conversion picks the later midnight in the first case,
 * so the window's edges are computed here and bound as instants.
 */
export function dayStartMs(dayMs: number, zone: string): number {
  const day = formatDay(dayMs);
  // Every offset in force around that midnight gives a candidate; the earliest on the day is its start.
  const candidates = [dayMs - 18 * HOUR_MS, dayMs, dayMs + 18 * HOUR_MS].map((t) => dayMs - offsetMs(t, zone));
  const onDay = candidates.filter((t) => dayInZone(new Date(t), zone) === day);
  return onDay.length ? Math.min(...onDay) : candidates[1]!;
}
