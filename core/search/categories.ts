/** The categories of a data model's live articles and how many carry each (`GET .../categories`, MCP). */
import type { DataModelIndex } from "./index/index.ts";

/** Most categories a data model lists. */
export const MAX_LISTED_CATEGORIES = 100;

/** A category and how many live articles carry it. */
export interface CategoryCount {
  category: string;
  count: number;
}

/** Category counts per data model, recounted only after its index changed. */
export class CategoryCounts {
  private readonly cache = new Map<string, { version: number; counts: CategoryCount[] }>();

  /** The most used categories of an index, most used first (ties by name). */
  top(index: DataModelIndex, limit: number): CategoryCount[] {
    const cached = this.cache.get(index.dataModelId);
    let all = cached?.version === index.version ? cached.counts : undefined;
    if (!all) {
      // One pass over the cards, recounted only after the index changed.
      const byKey = new Map<string, CategoryCount>();
      for (const card of index.cards) {
        const keys = card.categoryKeys;
        if (!keys) continue;
        for (let i = 0; i < keys.length; i++) {
          const c = byKey.get(keys[i]!);
          if (c) c.count++;
          else byKey.set(keys[i]!, { category: card.categories![i]!, count: 1 });
        }
      }
      all = [...byKey.values()].sort((a, b) => b.count - a.count || a.category.localeCompare(b.category)).slice(
        0,
        MAX_LISTED_CATEGORIES,
      );
      this.cache.set(index.dataModelId, { version: index.version, counts: all });
    }
    return all.slice(0, Math.max(0, limit)).map((c) => ({ ...c }));
  }
}
