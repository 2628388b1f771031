/**
 * Search filters agents ask for: domains to keep or drop, a publication-date window, categories
 * to keep or drop, authors, and phrases that must or must not appear. They are a candidate
 * predicate applied inside retrieval (before top-k), so a filtered search still returns as many
 * results as there are matching articles.
 */
import { z } from "zod";
import { searchErrors } from "../errors.ts";
import { categoryKey, domainOf, MAX_CATEGORY_CHARS } from "../store/articles.ts";
import type { DataModelIndex } from "../index/index.ts";
import { terms } from "../text/tokenizer.ts";

/** Most domains `include_domains` or `exclude_domains` take. */
export const MAX_FILTER_DOMAINS = 100;
/** Most entries `categories`, `exclude_categories` and `authors` take. */
export const MAX_FILTER_VALUES = 50;
/** Most phrases `include_text` or `exclude_text` take, and characters per phrase. */
export const MAX_FILTER_PHRASES = 10;
export const MAX_PHRASE_CHARS = 100;

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

const valueList = (what: string, max: number, description: string) =>
  z.array(
    z.string({ error: "must be a string" }).trim().min(1, { error: "must not be empty" }).max(max, {
      error: `must be at most ${max} characters`,
    }),
    { error: `must be an array of ${what}` },
  ).max(MAX_FILTER_VALUES, { error: `at most ${MAX_FILTER_VALUES} ${what}` }).optional().describe(description);

const phraseList = (description: string) =>
  z.array(
    z.string({ error: "must be a string" }).trim().max(MAX_PHRASE_CHARS, {
      error: `must be at most ${MAX_PHRASE_CHARS} characters`,
    }).refine((v) => terms(v).length > 0, { error: "must hold at least one word that is not a stopword" }),
    { error: "must be an array of phrases" },
  ).max(MAX_FILTER_PHRASES, { error: `at most ${MAX_FILTER_PHRASES} phrases` }).optional().describe(description);

/** The filter and explain fields of a SearchRequest (spread into its schema). */
export const searchFilterFields = {
  categories: valueList(
    "categories",
    MAX_CATEGORY_CHARS,
    "Only articles in at least one of these categories (case-insensitive; see the data model's top categories)",
  ),
  exclude_categories: valueList("categories", MAX_CATEGORY_CHARS, "Never articles in any of these categories"),
  authors: valueList("authors", 200, "Only articles by one of these authors (case-insensitive, whole name)"),
  include_text: phraseList(
    `Phrases that must appear (up to ${MAX_FILTER_PHRASES}): every word of each, as indexed (stemmed), in the ` +
      "title, summary or body opening",
  ),
  exclude_text: phraseList("Phrases that must not appear: an article holding every word of one of them is left out"),
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
  categories?: string[];
  exclude_categories?: string[];
  authors?: string[];
  include_text?: string[];
  exclude_text?: string[];
}

/** Filters in the form retrieval applies them. */
export interface SearchFilters {
  include: string[];
  exclude: string[];
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, inclusive. */
  to?: number;
  /** Category keys (see categoryKey); empty for any. */
  categories?: string[];
  excludeCategories?: string[];
  /** Author keys; empty for any. */
  authors?: string[];
  /** Per phrase, its index terms. */
  includeText?: string[][];
  excludeText?: string[][];
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
    throw searchErrors.date_range_reversed();
  }
  const keys = (list: string[] | undefined) => [...new Set((list ?? []).map(categoryKey).filter(Boolean))];
  const phrases = (list: string[] | undefined) =>
    (list ?? []).map((p) => [...new Set(terms(p))]).filter((t) => t.length > 0);
  const categories = keys(request.categories), excludeCategories = keys(request.exclude_categories);
  const authors = keys(request.authors);
  const includeText = phrases(request.include_text), excludeText = phrases(request.exclude_text);
  const more = categories.length + excludeCategories.length + authors.length + includeText.length +
    excludeText.length;
  if (!include.length && !exclude.length && from === undefined && to === undefined && !more) return null;
  return {
    include,
    exclude,
    from,
    to,
    ...(more ? { categories, excludeCategories, authors, includeText, excludeText } : {}),
  };
}

/** Whether a site domain is one of `domains` or a subdomain of one. */
function inDomains(siteDomain: string, domains: string[]): boolean {
  return domains.some((d) => siteDomain === d || siteDomain.endsWith(`.${d}`));
}

/**
 * The slot predicate of the filters over one index: one mask lookup and two compares per slot,
 * plus, when asked, a set lookup per category, one per author and one bitmap lookup for phrases.
 */
export function filterPredicate(index: DataModelIndex, f: SearchFilters): (slot: number) => boolean {
  const mask = index.domainMask((d) => (f.include.length === 0 || inDomains(d, f.include)) && !inDomains(d, f.exclude));
  const siteIds = index.siteIds;
  const from = f.from ?? -Infinity, to = f.to ?? Infinity;
  const base = (s: number) => {
    if (mask[siteIds[s]!] !== 1) return false;
    const t = index.pubdates[s]!;
    return t >= from && t <= to;
  };
  const checks: ((s: number) => boolean)[] = [];
  const cards = index.cards;
  if (f.categories?.length) {
    const want = new Set(f.categories);
    checks.push((s) => cards[s]!.categoryKeys?.some((k) => want.has(k)) ?? false);
  }
  if (f.excludeCategories?.length) {
    const drop = new Set(f.excludeCategories);
    checks.push((s) => !(cards[s]!.categoryKeys?.some((k) => drop.has(k)) ?? false));
  }
  if (f.authors?.length) {
    const want = new Set(f.authors);
    const memo = new Map<string, boolean>();
    checks.push((s) => {
      const a = cards[s]!.author;
      if (!a) return false;
      let ok = memo.get(a);
      if (ok === undefined) memo.set(a, ok = want.has(categoryKey(a)));
      return ok;
    });
  }
  if (f.includeText?.length || f.excludeText?.length) {
    const ok = phraseMask(index, f.includeText ?? [], f.excludeText ?? []);
    checks.push((s) => ok[s] === 1);
  }
  if (checks.length === 0) return base;
  return (s) => {
    if (!base(s)) return false;
    for (const check of checks) if (!check(s)) return false;
    return true;
  };
}

/**
 * 1 per slot that holds every term of each included phrase and not every term of any excluded
 * one, from the postings (no article is read).
 */
function phraseMask(index: DataModelIndex, include: string[][], exclude: string[][]): Uint8Array {
  const n = index.size;
  const out = new Uint8Array(n);
  if (include.length === 0) out.fill(1);
  else {
    const count = new Uint16Array(n);
    let needed = 0;
    for (const phrase of include) {
      for (const t of phrase) {
        needed++;
        for (const s of index.bm25.postings(t)) if (s < n) count[s]!++;
      }
    }
    for (let s = 0; s < n; s++) if (count[s] === needed) out[s] = 1;
  }
  for (const phrase of exclude) {
    const count = new Uint16Array(n);
    for (const t of phrase) for (const s of index.bm25.postings(t)) if (s < n) count[s]!++;
    for (let s = 0; s < n; s++) if (count[s] === phrase.length) out[s] = 0;
  }
  return out;
}
