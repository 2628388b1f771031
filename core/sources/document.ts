/**
 * A source document before parsing: its media types, its bytes to text (gzip, charset), and the
 * items parsing gives. Nothing here loads a parser, so the poller and the registration path import
 * it freely; the parsers (linkedom) are in parse.ts and sitemap_index.ts, which run in workers.
 */
import { readStreamCapped, smallChunks } from "../bytes.ts";
import { SourceFormatError } from "./errors.ts";
import type { SourceKind } from "./source.ts";

/** One entry of a source, before it becomes an article. */
export interface FeedItem {
  url: string;
  title?: string;
  body?: string;
  summary?: string;
  author?: string;
  pubdate?: string;
  image?: string;
  site?: string;
  /** The body's markup, when the source gave HTML (kept as Markdown for full text). */
  bodyHtml?: string;
  /** Feed `<category>`, JSON Feed `tags`, sitemap `news:keywords`. */
  categories?: string[];
}

/** Media types a source of each kind may be served as. */
export const SOURCE_MEDIA_TYPES: Record<SourceKind, readonly string[]> = {
  rss: ["application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/xml", "text/xml"],
  atom: ["application/atom+xml", "application/rss+xml", "application/xml", "text/xml"],
  jsonfeed: ["application/feed+json", "application/json"],
  // Gzipped sitemaps (`.xml.gz`) are common in sitemap indexes; see sitemap_index.ts.
  sitemap: ["application/xml", "text/xml", "application/gzip", "application/x-gzip"],
};

/** An item "carries only a summary" when its text is shorter than this (see docs/sources.md). */
export const FULL_TEXT_MIN_CHARS = 500;

/** Decodes a source document by the Content-Type charset, else the XML declaration, else UTF-8. */
export function decodeSource(bytes: Uint8Array, charset?: string): string {
  const label = charset ??
    new TextDecoder("latin1").decode(bytes.subarray(0, 200)).match(/encoding\s*=\s*["']([\w-]+)["']/i)?.[1];
  try {
    return new TextDecoder(label ?? "utf-8").decode(bytes);
  } catch {
    return new TextDecoder("utf-8").decode(bytes);
  }
}

/** At most `maxItems` items, newest first when the items carry dates. */
export function newestFirst(items: FeedItem[], maxItems: number): FeedItem[] {
  const time = (i: FeedItem) => {
    const t = i.pubdate ? Date.parse(i.pubdate) : NaN;
    return Number.isFinite(t) ? t : -Infinity;
  };
  if (items.some((i) => i.pubdate)) items.sort((a, b) => time(b) - time(a));
  return items.slice(0, maxItems);
}

/** Media types of a gzipped sitemap file. */
export const GZIP_MEDIA_TYPES = ["application/gzip", "application/x-gzip"] as const;

/** Whether a sitemap document is an index rather than a urlset. */
export function isSitemapIndex(text: string): boolean {
  return /<sitemapindex[\s>]/i.test(text.slice(0, 4000));
}

/**
 * Inflates a gzipped sitemap, refusing output past `maxBytes` (a small file can inflate to
 * gigabytes).
 * @throws {SourceFormatError} when the data is not gzip or inflates past the limit
 */
export async function gunzipCapped(bytes: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  // Small pieces in: a bomb's output then comes a few MB per step, and stops at the cap.
  const inflated = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(smallChunks())
    .pipeThrough(new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>);
  let out: Uint8Array | null;
  try {
    out = await readStreamCapped(inflated, maxBytes);
  } catch {
    throw new SourceFormatError("the gzipped sitemap could not be inflated");
  }
  if (!out) throw new SourceFormatError(`the gzipped sitemap inflates past ${maxBytes} bytes`);
  return out;
}

/**
 * The text of a fetched source document: a gzipped body (by media type or magic bytes) is
 * inflated, capped at `maxBytes`, then decoded by its charset.
 */
export async function sourceText(
  res: { body: Uint8Array; contentType: string; charset?: string },
  maxBytes: number,
): Promise<string> {
  const gzipped = (GZIP_MEDIA_TYPES as readonly string[]).includes(res.contentType) ||
    (res.body[0] === 0x1f && res.body[1] === 0x8b);
  return decodeSource(gzipped ? await gunzipCapped(res.body, maxBytes) : res.body, gzipped ? undefined : res.charset);
}

/** The site a sitemap may list children and entries of: its own, with or without `www.`. */
export const siteOf = (u: URL) => u.hostname.toLowerCase().replace(/^www\./, "");

/**
 * The entries of a sitemap on its own site (with or without `www.`): the protocol requires it, and
 * a sitemap elsewhere must not name, date or retitle another site's articles.
 * @param sitemapUrl the URL the sitemap was read from (after redirects)
 */
export function entriesOfOwnSite<T extends { url: string }>(entries: T[], sitemapUrl: string): T[] {
  const site = siteOf(new URL(sitemapUrl));
  return entries.filter((e) => {
    const u = URL.parse(e.url);
    return u !== null && siteOf(u) === site;
  });
}
