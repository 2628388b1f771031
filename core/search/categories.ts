/** The categories of a data model's live articles and how many carry each (`GET .../categories`, MCP). */
import type { ArticleCard, DataModelIndex } from "./index/index.ts";

/** Most categories a data model lists. */
export const MAX_LISTED_CATEGORIES = 100;

/**
 * How far past the retention cut-off a count keeps the articles it will subtract when the cut-off
 * passes them (a day): a moving cut-off costs a step per article it passes, and a recount of the
 * index at most once per this span (besides the recount after each change of the index).
 */
const EXPIRY_WINDOW_S = 86_400;

/** A category and how many live articles carry it. */
export interface CategoryCount {
  category: string;
  count: number;
}

/** The counts of one index version, from a cut-off on (see {@link CategoryCounts.top}). */
interface Tally {
  version: number;
  /** Articles published before this were left out of `byKey` (-Infinity without retention). */
  from: number;
  /** The categorised articles published in [from, until) are in `expiring`; later ones never leave before a recount. */
  until: number;
  byKey: Map<string, CategoryCount>;
  /** Categorised articles published in [from, until), oldest first. */
  expiring: ArticleCard[];
  /** How many of `expiring` are subtracted from `byKey` (published before the cut-off last applied). */
  passed: number;
  /** The listing of the current counts, or null after they changed. */
  listed: CategoryCount[] | null;
}

/**
 * Category counts per data model, over the articles published at or after its retention cut-off.
 * Counted in one pass after the index changed; between changes, a cut-off that moves on subtracts
 * only the articles it passes (kept oldest first), so articles past retention stop counting at
 * once, before the sweep deletes them, without a pass per request.
 */
export class CategoryCounts {
  private readonly cache = new Map<string, Tally>();

  /**
   * The most used categories of an index, most used first (ties by name).
   * @param since the data model's retention cut-off (unix seconds; see `liveSince`): articles
   * published before it are not counted; undefined: every article counts
   */
  top(index: DataModelIndex, limit: number, since = -Infinity): CategoryCount[] {
    let tally = this.cache.get(index.dataModelId);
    if (!tally || tally.version !== index.version || since < tally.from || since > tally.until) {
      tally = count(index, since);
      this.cache.set(index.dataModelId, tally);
    }
    moveCutoff(tally, since);
    tally.listed ??= ranked(tally.byKey);
    return tally.listed.slice(0, Math.max(0, limit)).map((c) => ({ ...c }));
  }
}

/** One pass over the cards: counts from `since` on, and the articles the next day's cut-offs will pass. */
function count(index: DataModelIndex, since: number): Tally {
  const until = since + EXPIRY_WINDOW_S;
  const byKey = new Map<string, CategoryCount>();
  const expiring: ArticleCard[] = [];
  for (const card of index.cards) {
    const keys = card.categoryKeys;
    if (!keys || card.pubdateUnix < since) continue;
    if (card.pubdateUnix < until) expiring.push(card);
    for (let i = 0; i < keys.length; i++) {
      const c = byKey.get(keys[i]!);
      if (c) c.count++;
      else byKey.set(keys[i]!, { category: card.categories![i]!, count: 1 });
    }
  }
  expiring.sort((a, b) => a.pubdateUnix - b.pubdateUnix);
  return { version: index.version, from: since, until, byKey, expiring, passed: 0, listed: null };
}

/** Subtracts the articles a later cut-off passed, or adds back those an earlier one keeps again. */
function moveCutoff(tally: Tally, since: number): void {
  const { expiring, byKey } = tally;
  const shift = (card: ArticleCard, by: number) => {
    for (const key of card.categoryKeys!) byKey.get(key)!.count += by;
    tally.listed = null;
  };
  while (tally.passed < expiring.length && expiring[tally.passed]!.pubdateUnix < since) {
    shift(expiring[tally.passed++]!, -1);
  }
  while (tally.passed > 0 && expiring[tally.passed - 1]!.pubdateUnix >= since) shift(expiring[--tally.passed]!, 1);
}

/** The counted categories, most used first (ties by name), at most {@link MAX_LISTED_CATEGORIES}. */
function ranked(byKey: Map<string, CategoryCount>): CategoryCount[] {
  const counted: CategoryCount[] = [];
  for (const c of byKey.values()) if (c.count > 0) counted.push(c);
  return counted.sort((a, b) => b.count - a.count || a.category.localeCompare(b.category))
    .slice(0, MAX_LISTED_CATEGORIES).map((c) => ({ ...c }));
}
