/**
 * Reads a fetched source document into feed items, per source type: RSS 2.0 and Atom (through
 * the importer's reader in core/sources/feeds.ts), JSON Feed 1.x, and XML sitemaps (urlset, with
 * the Google News and image extensions).
 */
import { DOMParser } from "linkedom";
import { htmlToText, isFeed, labelText, parseFeed } from "./feeds.ts";
import type { SourceKind } from "./source.ts";
import { type FeedItem, newestFirst } from "./document.ts";

import { SourceFormatError } from "./errors.ts";
import { guardMarkup, MAX_DOCUMENT_ENTRIES } from "./markup_guard.ts";

export { SourceFormatError };
// Moved to document.ts (no parser there); named here too for the modules that import them from here.
export { decodeSource, type FeedItem, FULL_TEXT_MIN_CHARS, newestFirst, SOURCE_MEDIA_TYPES } from "./document.ts";

const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);

/** Items of a JSON Feed (https://jsonfeed.org/version/1.1). */
export function parseJsonFeed(text: string): FeedItem[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new SourceFormatError("the document is not valid JSON");
  }
  const d = doc as { version?: unknown; items?: unknown; title?: unknown };
  if (!d || typeof d !== "object" || typeof d.version !== "string" || !d.version.startsWith("https://jsonfeed.org/")) {
    throw new SourceFormatError("the document is not a JSON Feed");
  }
  if (!Array.isArray(d.items)) throw new SourceFormatError("the JSON Feed has no items list");
  if (d.items.length > MAX_DOCUMENT_ENTRIES) {
    throw new SourceFormatError(`the document has more than ${MAX_DOCUMENT_ENTRIES} entries`);
  }
  const out: FeedItem[] = [];
  for (const raw of d.items) {
    if (!raw || typeof raw !== "object") continue;
    const it = raw as Record<string, unknown>;
    const url = str(it.url) ?? str(it.external_url) ?? (str(it.id)?.startsWith("http") ? str(it.id) : undefined);
    if (!url) continue;
    const html = str(it.content_html);
    const body = str(it.content_text) ?? (html ? htmlToText(html) : undefined);
    const authors = Array.isArray(it.authors) ? it.authors : it.author ? [it.author] : [];
    const author = authors.map((a) => str((a as { name?: unknown })?.name)).find(Boolean);
    out.push({
      url,
      title: str(it.title),
      body,
      summary: str(it.summary),
      author,
      pubdate: str(it.date_modified) ?? str(it.date_published),
      image: str(it.image) ?? str(it.banner_image),
      site: str(d.title),
      ...(html ? { bodyHtml: html } : {}),
      ...(Array.isArray(it.tags) ? { categories: it.tags.filter((t): t is string => typeof t === "string") } : {}),
    });
  }
  return out;
}

// deno-lint-ignore no-explicit-any
type El = any;

const SITEMAP_FIELDS = ["loc", "news:title", "news:publication_date", "lastmod", "image:loc", "news:keywords"];

/**
 * The trimmed text of the first descendant of each name, in one pre-order walk of a (small) entry.
 * One `getElementsByTagName` per field costs a scan per miss: 50,000 entries x 4 fields took seconds.
 */
function firstTexts(el: El, names: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const stack: El[] = [...el.children].reverse();
  while (stack.length && out.size < names.length) {
    const node = stack.pop();
    const name = node.tagName;
    if (!out.has(name) && names.includes(name)) out.set(name, node.textContent?.trim() ?? "");
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
  }
  return out;
}

/** Entries of an XML sitemap `urlset` (an index is read by sitemap_index.ts, not here). */
export function parseSitemap(xml: string): FeedItem[] {
  const head = xml.slice(0, 4000);
  if (/<sitemapindex[\s>]/i.test(head)) throw new SourceFormatError("the document is a sitemap index");
  if (!/<urlset[\s>]/i.test(head)) throw new SourceFormatError("the document is not an XML sitemap");
  guardMarkup(xml);
  const doc = new DOMParser().parseFromString(xml, "text/xml");
  const out: FeedItem[] = [];
  for (const el of [...doc.getElementsByTagName("url")] as El[]) {
    const t = firstTexts(el, SITEMAP_FIELDS);
    const url = t.get("loc") || undefined;
    if (!url) continue;
    out.push({
      url,
      title: labelText(t.get("news:title") ?? "") || undefined, // text, as a feed item's title is
      pubdate: t.get("news:publication_date") || t.get("lastmod") || undefined,
      image: t.get("image:loc") || undefined,
      ...keywordsOf(t.get("news:keywords") || undefined),
    });
  }
  return out;
}

/** Google News sitemap keywords (comma-separated) as categories. */
function keywordsOf(text: string | undefined): { categories?: string[] } {
  const list = (text ?? "").split(",").map((k) => k.trim()).filter(Boolean);
  return list.length ? { categories: list } : {};
}

/** Items of an RSS or Atom feed. */
export function parseXmlFeed(xml: string): FeedItem[] {
  if (!isFeed(xml)) throw new SourceFormatError("the document is not an RSS or Atom feed");
  // Entries without a link or title are skipped here; the poller reports how many items it read.
  return parseFeed(xml).items.map((i) => ({
    url: String(i.url),
    title: str(i.title),
    body: str(i.body),
    summary: str(i.summary),
    author: str(i.author),
    pubdate: str(i.pubdate),
    image: str(i.image),
    site: str(i.site),
    ...(typeof i.body_html === "string" ? { bodyHtml: i.body_html } : {}),
    ...(Array.isArray(i.categories) ? { categories: i.categories as string[] } : {}),
  }));
}

/**
 * Parses a source document by the source's type and keeps at most `maxItems`, newest first
 * when the items carry dates (sitemaps list thousands of old pages).
 * @throws {SourceFormatError} when the document is not of that type
 */
export function parseSourceDocument(kind: SourceKind, text: string, maxItems: number): FeedItem[] {
  const items = kind === "jsonfeed"
    ? parseJsonFeed(text)
    : kind === "sitemap"
    ? parseSitemap(text)
    : parseXmlFeed(text);
  return newestFirst(items, maxItems);
}
