/**
 * Seams the search engine calls out through, so the web-facing parts (page fetching and
 * extraction, tracking redirects, image resizing, analytics) plug in without the engine knowing
 * how they work. URL analysis and links are the web room's contracts (url_analyzer.ts, links.ts).
 */
import type { LinkBuilder } from "../links/mod.ts";

export type { AnalyzedPage, UrlAnalyzer } from "./url_analyzer.ts";
export type { LinkArticle, LinkBuilder, LinkContext } from "../links/mod.ts";

/**
 * The fallback {@link LinkBuilder}: the article's own URL and original image, no tracking and no
 * resizing. For engines built without the signed links (tools, benchmarks).
 */
export const directLinks: LinkBuilder = {
  trackingUrl: (article) => article.url,
  imageUrl: (article) => article.image,
};

/**
 * Where a trending signal was observed: queries sent by the Ask AI widget (anyone can send
 * those), queries and searches this service answered itself, or article clicks it redirected.
 */
export type TrendChannel = "widget" | "server" | "click";

/**
 * A query (or, on the `click` channel, a clicked article) and how often it was seen. With a
 * `sender`, the entry stands for one sender in one session however often it asked: a keyword then
 * counts distinct senders and sessions, not events (core/search/rank/trending.ts).
 */
export interface QueryCount {
  query: string;
  count: number;
  /** Pseudonymous key of who asked (sender network, agent identity), when known. */
  sender?: string;
  /** The session it was asked in, when known. */
  session?: string;
  /** Its signal; `server` when absent. */
  channel?: TrendChannel;
  /** `click` channel: the clicked article's URL (its title's words are the signal). */
  articleUrl?: string;
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
  private entries = new Map<string, { at: number; query: string; sender?: string }[]>();
  constructor(private readonly limitPerModel = 5000) {}

  /**
   * Records one served query.
   * @param sender who asked, when one caller stands behind many requests (a paying agent): its
   *   queries then count once per keyword, however often it asks
   */
  record(dataModelId: string, query: string, at: Date, sender?: string): void {
    let list = this.entries.get(dataModelId);
    if (!list) this.entries.set(dataModelId, list = []);
    list.push({ at: at.getTime(), query: query.trim().toLowerCase().slice(0, 200), ...(sender ? { sender } : {}) });
    if (list.length > this.limitPerModel) list.splice(0, list.length - this.limitPerModel);
  }

  recentQueries(dataModelId: string, since: Date, until: Date): Promise<QueryCount[]> {
    const counts = new Map<string, QueryCount>();
    for (const e of this.entries.get(dataModelId) ?? []) {
      if (e.at < since.getTime() || e.at > until.getTime()) continue;
      const key = `${e.sender ?? ""}\n${e.query}`;
      const seen = counts.get(key);
      if (seen) seen.count++;
      else {
        counts.set(key, {
          query: e.query,
          count: 1,
          channel: "server",
          ...(e.sender ? { sender: e.sender, session: e.sender } : {}),
        });
      }
    }
    return Promise.resolve([...counts.values()]);
  }
}
