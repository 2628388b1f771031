import { DOMParser } from "linkedom";
import { guardMarkup } from "./markup_guard.ts";
import { stripTags } from "../text/mod.ts";

/**
 * Readers for the article import formats: JSON Lines (one article object per line, the bulk
 * API's item shape) and RSS 2.0 / Atom feeds. URLs are fetched by the caller through the
 * SSRF-guarded fetcher (core/net/safe_fetch.ts).
 */

/** Media types an import source may be served as. */
export const SOURCE_TYPES = [
  "application/rss+xml",
  "application/atom+xml",
  "application/xml",
  "text/xml",
  "application/x-ndjson",
  "application/jsonl",
  "application/json",
  "text/plain",
  "application/octet-stream",
] as const;

/** Items read from a source, with the lines or entries that could not be read. */
export interface ParsedSource {
  items: Record<string, unknown>[];
  errors: { at: number; error: string }[];
}

/** Parses JSON Lines; blank lines are skipped, bad lines reported by 1-based line number. */
export function parseJsonl(text: string): ParsedSource {
  const out: ParsedSource = { items: [], errors: [] };
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const v = JSON.parse(line);
      if (v && typeof v === "object" && !Array.isArray(v)) out.items.push(v);
      else out.errors.push({ at: i + 1, error: "line is not a JSON object" });
    } catch (err) {
      out.errors.push({ at: i + 1, error: `invalid JSON: ${(err as Error).message}` });
    }
  });
  return out;
}

const BLOCK_END = /<\/(?:p|div|h[1-6]|li|tr|blockquote|section|article|figure)>|<br\s*\/?>/gi;

/**
 * Plain text of an HTML fragment, keeping paragraph breaks.
 * @throws {SourceFormatError} when the fragment is nested too deep to parse safely (see markup_guard.ts)
 */
export function htmlToText(html: string): string {
  if (!/[<&]/.test(html)) return html.trim();
  guardMarkup(html, { html: true });
  const doc = new DOMParser().parseFromString(
    `<!doctype html><html><body>${html.replace(BLOCK_END, "$&\n\n")}</body></html>`,
    "text/html",
  );
  for (const el of [...doc.querySelectorAll("script,style,noscript")]) el.remove();
  return (doc.body?.textContent ?? "").replace(/[ \t]+/g, " ").replace(/\n\s*\n+/g, "\n\n").trim();
}

/**
 * Plain text of a short label a feed gives (byline, site, category, sitemap title): markup read as
 * text without a parse (stripTags is one linear pass), so thousands of entries cost little; the head is enough.
 */
export function labelText(value: string): string {
  return /[<&]/.test(value) ? stripTags(value.slice(0, 2000)).replace(/\s+/g, " ") : value.trim();
}

// deno-lint-ignore no-explicit-any
type El = any;
const child = (el: El, ...names: string[]): El | undefined => {
  for (const n of names) {
    const found = el.getElementsByTagName(n)[0];
    if (found) return found;
  }
  return undefined;
};
const textOf = (el: El, ...names: string[]): string | undefined => {
  const c = child(el, ...names);
  const t = c?.textContent?.trim();
  return t ? t : undefined;
};

/** Whether a text looks like an RSS or Atom document. */
export function isFeed(text: string): boolean {
  const head = text.slice(0, 2000).trimStart();
  return /^<\?xml|^<rss[\s>]|^<feed[\s>]|^<rdf:RDF/i.test(head);
}

/**
 * Reads RSS 2.0 items or Atom entries into article objects (url, title, author, pubdate, image, body).
 * @throws {SourceFormatError} when the guards refuse the document (nesting, entities, entry count)
 */
export function parseFeed(xml: string): ParsedSource {
  guardMarkup(xml);
  const doc = new DOMParser().parseFromString(xml, "text/xml");
  const out: ParsedSource = { items: [], errors: [] };
  const rss = [...doc.getElementsByTagName("item")];
  const atom = [...doc.getElementsByTagName("entry")];
  const siteTitle = textOf(doc, "title");
  (rss.length ? rss : atom).forEach((el: El, i: number) => {
    let url: string | undefined;
    if (rss.length) {
      url = textOf(el, "link") ?? (textOf(el, "guid")?.startsWith("http") ? textOf(el, "guid") : undefined);
    } else {
      const links = [...el.getElementsByTagName("link")] as El[];
      const alt = links.find((l) => (l.getAttribute("rel") ?? "alternate") === "alternate") ?? links[0];
      url = alt?.getAttribute("href") ?? undefined;
    }
    const title = textOf(el, "title");
    if (!url || !title) {
      out.errors.push({ at: i + 1, error: `entry ${i + 1} has no ${url ? "title" : "link"}` });
      return;
    }
    const author = textOf(el, "dc:creator") ??
      (child(el, "author") ? textOf(child(el, "author"), "name") : undefined) ??
      textOf(el, "author");
    const pubdate = textOf(el, "pubDate", "published", "dc:date", "updated");
    const bodyHtml = textOf(el, "content:encoded", "content") ?? textOf(el, "description", "summary") ?? "";
    const summaryHtml = textOf(el, "description", "summary");
    const media = child(el, "media:content", "media:thumbnail");
    const enclosure = child(el, "enclosure");
    const image = media?.getAttribute("url") ??
      (enclosure && /^image\//.test(enclosure.getAttribute("type") ?? "") ? enclosure.getAttribute("url") : undefined);
    const item: Record<string, unknown> = { url, title: htmlToText(title), body: htmlToText(bodyHtml) };
    // The markup too, kept as Markdown for licensed full text.
    if (/<[a-z]/i.test(bodyHtml)) item.body_html = bodyHtml;
    // Byline, site and categories are text as the title is: markup in them (often CDATA) is read, not kept.
    if (author) item.author = labelText(author);
    if (pubdate) item.pubdate = pubdate;
    if (image) {
      // Feeds often give image paths relative to the article; an unusable one is dropped, not fatal.
      try {
        const abs = new URL(image, url);
        if (abs.protocol === "http:" || abs.protocol === "https:") item.image = abs.toString();
      } catch { /* no image */ }
    }
    if (summaryHtml && summaryHtml !== bodyHtml) item.summary = htmlToText(summaryHtml).slice(0, 1000);
    if (siteTitle && rss.length) item.site = labelText(siteTitle);
    // RSS <category>text</category>, Atom <category term="..."/>.
    const categories = ([...el.getElementsByTagName("category")] as El[]).slice(0, 200)
      .map((c) => labelText(c.getAttribute("term") ?? c.textContent ?? "")).filter(Boolean);
    if (categories.length) item.categories = categories;
    out.items.push(item);
  });
  return out;
}

/** Parses a source by its content: a feed when it starts like XML, otherwise JSON Lines. */
export function parseSource(text: string, format: "auto" | "jsonl" | "feed" = "auto"): ParsedSource {
  if (format === "feed" || (format === "auto" && isFeed(text))) return parseFeed(text);
  return parseJsonl(text);
}
