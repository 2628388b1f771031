/**
 * Sitemap indexes (https://www.sitemaps.org/protocol.html#index) and gzipped sitemaps.
 *
 * Large sites publish a `sitemapindex` that lists their `urlset` files, newest usually first or
 * dated by `lastmod`, often as `.xml.gz`. A `sitemap` source may point at either: the poller reads
 * the index, then the newest few child sitemaps of the same site (a bounded number), and merges
 * their entries. Indexes are one level deep, as the protocol says: an index listed by an index is
 * skipped.
 */
import { DOMParser } from "linkedom";
import { isSitemapIndex, siteOf } from "./document.ts";
import { SourceFormatError } from "./errors.ts";
import { guardMarkup } from "./markup_guard.ts";

// Moved to document.ts (no parser there); named here too for the modules that import them from here.
export { gunzipCapped, GZIP_MEDIA_TYPES, isSitemapIndex, sourceText } from "./document.ts";

/** A sitemap an index lists. */
export interface ChildSitemap {
  url: string;
  /** `lastmod` in ms since the epoch, when given and valid. */
  lastmodMs?: number;
}

/**
 * The child sitemaps of an index on the index's own site (the protocol forbids others),
 * deduplicated, newest `lastmod` first; undated ones follow in document order.
 * @param indexUrl the URL the index was read from (after redirects)
 * @throws {SourceFormatError} when the document is not an index or lists no usable sitemap
 */
export function parseSitemapIndex(xml: string, indexUrl: string): ChildSitemap[] {
  if (!isSitemapIndex(xml)) throw new SourceFormatError("the document is not a sitemap index");
  const site = siteOf(new URL(indexUrl));
  guardMarkup(xml);
  const doc = new DOMParser().parseFromString(xml, "text/xml");
  const seen = new Set<string>();
  const out: (ChildSitemap & { order: number })[] = [];
  // deno-lint-ignore no-explicit-any
  for (const el of [...doc.getElementsByTagName("sitemap")] as any[]) {
    const loc = el.getElementsByTagName("loc")[0]?.textContent?.trim();
    if (!loc) continue;
    let u: URL;
    try {
      u = new URL(loc, indexUrl);
    } catch {
      continue;
    }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || siteOf(u) !== site) continue;
    u.hash = "";
    if (seen.has(u.href)) continue;
    seen.add(u.href);
    const lastmod = Date.parse(el.getElementsByTagName("lastmod")[0]?.textContent?.trim() ?? "");
    out.push({ url: u.href, lastmodMs: Number.isFinite(lastmod) ? lastmod : undefined, order: out.length });
  }
  if (!out.length) throw new SourceFormatError("the sitemap index lists no sitemap of its own site");
  out.sort((a, b) => (b.lastmodMs ?? -Infinity) - (a.lastmodMs ?? -Infinity) || a.order - b.order);
  return out.map(({ url, lastmodMs }) => ({ url, lastmodMs }));
}
