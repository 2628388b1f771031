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
import { readStreamCapped, smallChunks } from "../bytes.ts";
import { decodeSource, SourceFormatError } from "./parse.ts";
import { guardMarkup } from "./markup_guard.ts";

/** A sitemap an index lists. */
export interface ChildSitemap {
  url: string;
  /** `lastmod` in ms since the epoch, when given and valid. */
  lastmodMs?: number;
}

/** Media types of a gzipped sitemap file. */
export const GZIP_MEDIA_TYPES = ["application/gzip", "application/x-gzip"] as const;

/** Whether a sitemap document is an index rather than a urlset. */
export function isSitemapIndex(text: string): boolean {
  return /<sitemapindex[\s>]/i.test(text.slice(0, 4000));
}

/** The host a sitemap may list children of: its own, with or without `www.`. */
const siteOf = (u: URL) => u.hostname.toLowerCase().replace(/^www\./, "");

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
