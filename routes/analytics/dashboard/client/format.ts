/** Number, duration, date and URL formats: thousands separators, percentages with at most one decimal, s/min. */

const numberFormat = new Intl.NumberFormat("en-US");
export const pctFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
const dayFormat = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
const dayYearFormat = new Intl.DateTimeFormat("en-GB", {
  day: "numeric",
  month: "short",
  year: "numeric",
  timeZone: "UTC",
});

/** A count with thousands separators; "" for anything that is not a number. */
export const fmt = (n: unknown): string => (typeof n === "number" ? numberFormat.format(n) : "");
/** A percentage with at most one decimal; "" for anything that is not a number. */
export const pct = (n: unknown): string => (typeof n === "number" ? `${pctFormat.format(n)}%` : "");

/** Seconds as "42 s", "3 min" or "3 min 5 s". */
export const duration = (s: unknown): string => {
  if (typeof s !== "number") return "";
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
};

/** A day (unix seconds) as "25 Nov". */
export const dayLabel = (unixS: number): string => dayFormat.format(new Date(unixS * 1000));
/** A day (unix seconds) as "25 Nov 2026". */
export const dayYearLabel = (unixS: number): string => dayYearFormat.format(new Date(unixS * 1000));

/** A URL without its `http(s)://`. */
export const withoutScheme = (url: unknown): string => String(url).replace(/^https?:\/\//, "");

/** The calendar day (`YYYY-MM-DD`) of an instant in a zone, or "" for a zone the browser does not know. */
export function dayIn(zone: string, iso: string): string {
  try {
    return new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
      .format(new Date(iso));
  } catch {
    return "";
  }
}

/** `YYYY-MM-DD HH:MM` formatters by zone (the browser knows every zone the API accepts). */
const minuteFormats = new Map<string, Intl.DateTimeFormat>();

/** An instant as `YYYY-MM-DD HH:MM` in a zone; throws for a zone the browser does not know. */
export function minuteIn(zone: string, iso: string): string {
  let format = minuteFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    minuteFormats.set(zone, format);
  }
  const p: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const part of format.formatToParts(new Date(iso))) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}
