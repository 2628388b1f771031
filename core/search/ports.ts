/**
 * Seams the search engine calls out through, so the web-facing parts (page fetching and
 * extraction, tracking redirects, image resizing, analytics) plug in without the engine knowing
 * how they work. URL analysis and links are the web room's contracts (url_analyzer.ts, links.ts).
 */
import type { LinkBuilder } from "./links.ts";

export type { AnalyzedPage, UrlAnalyzer } from "./url_analyzer.ts";
export type { LinkArticle, LinkBuilder, LinkContext } from "./links.ts";

/**
 * The fallback {@link LinkBuilder}: the article's own URL and original image, no tracking and no
 * resizing. For engines built without the signed links (tools, benchmarks).
 */
export const directLinks: LinkBuilder = {
  trackingUrl: (article) => article.url,
  imageUrl: (article) => article.image,
};

/** A query and how often it was asked. */
export interface QueryCount {
  query: string;
  count: number;
}

/** Recent search queries of a data model (query events), for trending keywords. */
export interface QuerySource {
  recentQueries(dataModelId: string, since: Date, until: Date): Promise<QueryCount[]>;
}

/**
 * The queries this process has served, kept in memory per data model (bounded), as a
 * {@link QuerySource} for when analytics cannot answer. Lost on restart by design.
 */
export class RecentQueryLog implements QuerySource {
  private entries = new Map<string, { at: number; query: string }[]>();
  constructor(private readonly limitPerModel = 5000) {}

  /** Records one served query. */
  record(dataModelId: string, query: string, at: Date): void {
    let list = this.entries.get(dataModelId);
    if (!list) this.entries.set(dataModelId, list = []);
    list.push({ at: at.getTime(), query: query.trim().toLowerCase().slice(0, 200) });
    if (list.length > this.limitPerModel) list.splice(0, list.length - this.limitPerModel);
  }

  recentQueries(dataModelId: string, since: Date, until: Date): Promise<QueryCount[]> {
    const counts = new Map<string, number>();
    for (const e of this.entries.get(dataModelId) ?? []) {
      if (e.at >= since.getTime() && e.at <= until.getTime()) counts.set(e.query, (counts.get(e.query) ?? 0) + 1);
    }
    return Promise.resolve([...counts].map(([query, count]) => ({ query, count })));
  }
}
