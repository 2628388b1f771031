/**
 * Search filters agents ask for: domains to keep or drop, and a publication-date window. They are
 * a candidate predicate applied inside retrieval (before top-k), so a filtered search still
 * returns as many results as there are matching articles.
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import { domainOf } from "./articles.ts";
import type { DataModelIndex } from "./index.ts";

/** Most domains `include_domains` or `exclude_domains` take. */
export const MAX_FILTER_DOMAINS = 100;

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const HOSTNAME_RE = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`);
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?$/i;

/** A filter domain in the form site domains are stored in (`www.` and scheme dropped); "" if none. */
export function filterDomain(value: string): string {
  const d = domainOf(value);
  return HOSTNAME_RE.test(d) ? d : "";
}

/**
 * Unix seconds of an ISO date or date-time; a bare date is the start of that UTC day, or its last
 * second when `endOfDay`. A date-time without an offset is UTC. Undefined when not such a value.
 */
export function parseFilterDate(value: string, { endOfDay = false } = {}): number | undefined {
  const day = DATE_RE.exec(value);
  const full = day ?? DATE_TIME_RE.exec(value);
  if (!full) return undefined;
  const [, y, m, d] = full;
  // Date.parse rolls 2026-02-30 over to March: check the calendar day survives.
  const midnight = Date.UTC(Number(y), Number(m) - 1, Number(d));
  const check = new Date(midnight);
  if (
    check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(m) - 1 || check.getUTCDate() !== Number(d)
  ) {
    return undefined;
  }
  if (day) return Math.floor(midnight / 1000) + (endOfDay ? 86_399 : 0);
  const withZone = /(?:Z|[+-]\d{2}:\d{2})$/i.test(value) ? value : `${value}Z`;
  const ms = Date.parse(withZone);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

const domainList = (field: string) =>
  z.array(
    z.string({ error: "must be a string" }).refine((v) => filterDomain(v) !== "", {
      error: "must be a domain such as example.com",
    }),
    { error: "must be an array of domains" },
  ).max(MAX_FILTER_DOMAINS, { error: `at most ${MAX_FILTER_DOMAINS} domains` }).optional().describe(
    `${field} (up to ${MAX_FILTER_DOMAINS}); a domain also matches its subdomains`,
  );

const dateField = (description: string) =>
  z.string({ error: "must be a string" }).refine((v) => parseFilterDate(v) !== undefined, {
    error: "must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM:SSZ)",
  }).optional().describe(description);

/** The filter and explain fields of a SearchRequest (spread into its schema). */
export const searchFilterFields = {
  include_domains: domainList("Only articles from these domains"),
  exclude_domains: domainList("Never articles from these domains, with every algorithm and the `ref` quota"),
  start_date: dateField("Published on or after (ISO date, the start of that UTC day, or date-time)"),
  end_date: dateField("Published on or before (ISO date, the end of that UTC day, or date-time)"),
  explain: z.boolean({ error: "must be true or false" }).optional().describe(
    "Adds an `explain` object to every result: why it ranked where it did",
  ),
};

/** The filter fields as a request carries them (already shape-checked by the schema). */
export interface FilterFields {
  include_domains?: string[];
  exclude_domains?: string[];
  start_date?: string;
  end_date?: string;
}

/** Filters in the form retrieval applies them. */
export interface SearchFilters {
  include: string[];
  exclude: string[];
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, inclusive. */
  to?: number;
}

/**
 * The filters of a request; null when it sets none.
 * @throws {AppError} 422 when end_date is before start_date.
 */
export function filtersOf(request: FilterFields): SearchFilters | null {
  const include = [...new Set((request.include_domains ?? []).map(filterDomain).filter(Boolean))];
  const exclude = [...new Set((request.exclude_domains ?? []).map(filterDomain).filter(Boolean))];
  const from = request.start_date === undefined ? undefined : parseFilterDate(request.start_date);
  const to = request.end_date === undefined ? undefined : parseFilterDate(request.end_date, { endOfDay: true });
  if (from !== undefined && to !== undefined && to < from) {
    throw new AppError(422, "invalid_request", "end_date must be on or after start_date");
  }
  if (!include.length && !exclude.length && from === undefined && to === undefined) return null;
  return { include, exclude, from, to };
}

/** Whether a site domain is one of `domains` or a subdomain of one. */
function inDomains(siteDomain: string, domains: string[]): boolean {
  return domains.some((d) => siteDomain === d || siteDomain.endsWith(`.${d}`));
}

/** The slot predicate of the filters over one index: one mask lookup and two compares per slot. */
export function filterPredicate(index: DataModelIndex, f: SearchFilters): (slot: number) => boolean {
  const mask = index.domainMask((d) => (f.include.length === 0 || inDomains(d, f.include)) && !inDomains(d, f.exclude));
  const siteIds = index.siteIds;
  const from = f.from ?? -Infinity, to = f.to ?? Infinity;
  return (s) => {
    if (mask[siteIds[s]!] !== 1) return false;
    const t = index.pubdates[s]!;
    return t >= from && t <= to;
  };
}
