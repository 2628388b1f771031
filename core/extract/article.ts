/**
 * Main-text extraction from an HTML page with `@mozilla/readability` over a `linkedom` DOM.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";

/** What a page says about itself. */
export interface ExtractedArticle {
  title: string;
  /** Main text, paragraphs separated by blank lines. */
  text: string;
  byline?: string;
  siteName?: string;
  /** ISO 8601 when the page states it. */
  publishedTime?: string;
  /** The page's own description (meta description / og:description). */
  excerpt?: string;
  lang?: string;
}

/** The slice of the DOM this module touches (Deno's type library has no DOM). */
interface DomElement {
  textContent: string | null;
  className: string;
  id: string;
  closest(selector: string): DomElement | null;
  innerHTML: string;
  getAttribute(name: string): string | null;
  remove(): void;
}
interface DomDocument {
  body: DomElement | null;
  documentElement: DomElement | null;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): Iterable<DomElement>;
}
const parse = (html: string): DomDocument => (parseHTML(html) as unknown as { document: DomDocument }).document;

const BLOCK_CLOSE =
  /<\/(p|h[1-6]|li|ul|ol|blockquote|pre|div|section|article|main|header|tr|figure|figcaption|dd|dt)\s*>|<br\s*\/?>/gi;
// Readability's parse is O(n^2) in places; pages past this many elements are cut before parsing.
const MAX_HTML_CHARS = 2 * 1024 * 1024;

/** Collapses whitespace inside lines and keeps single blank lines between paragraphs. */
function tidy(text: string): string {
  return text.split(/\n+/).map((l) => l.replace(/\s+/g, " ").trim()).filter(Boolean).join("\n\n");
}

/** Text of an HTML fragment with block elements on their own lines. */
function blockText(html: string): string {
  const document = parse(`<!doctype html><html><body>${html.replace(BLOCK_CLOSE, (m) => `${m}\n`)}</body></html>`);
  return tidy(document.body?.textContent ?? "");
}

function meta(document: DomDocument, ...names: string[]): string | undefined {
  for (const name of names) {
    const el = document.querySelector(`meta[property="${name}"], meta[name="${name}"], meta[itemprop="${name}"]`);
    const v = el?.getAttribute("content")?.trim();
    if (v) return v;
  }
  return undefined;
}

// Class or id tokens of page furniture that Readability does not always drop (inline ads, banners).
const BOILERPLATE_TOKEN =
  /^(ads?|ad[-_].*|.*[-_]ads?|adsbygoogle|advert.*|.*advertisement.*|sponsor.*|promo(tion)?s?|newsletter.*|cookie.*|consent.*|paywall.*|subscribe.*)$/i;

/** Removes site chrome and ad containers before extraction. */
function removeBoilerplate(doc: DomDocument): void {
  for (
    const el of [
      ...doc.querySelectorAll(
        "script, style, noscript, template, nav, aside, footer, form, iframe, svg, button, input",
      ),
    ]
  ) {
    el.remove();
  }
  // A header inside the article holds its headline; the site header does not.
  for (const el of [...doc.querySelectorAll("header")]) if (!el.closest("article, main")) el.remove();
  for (const el of [...doc.querySelectorAll("[class], [id]")]) {
    const tokens = `${el.className ?? ""} ${el.id ?? ""}`.split(/\s+/).filter(Boolean);
    if (tokens.some((t) => BOILERPLATE_TOKEN.test(t))) el.remove();
  }
}

/** Normalises a date string to ISO 8601, or `undefined` when it does not parse. */
function isoDate(value: string | undefined | null): string | undefined {
  if (!value) return undefined;
  const t = Date.parse(value.trim());
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}

/**
 * Extracts the main article from `html`. Falls back to the body text without navigation,
 * scripts and boilerplate when Readability finds no article (very short pages).
 * @param html the page source, already decoded
 */
export function extractArticle(html: string): ExtractedArticle {
  const source = html.length > MAX_HTML_CHARS ? html.slice(0, MAX_HTML_CHARS) : html;
  const doc = parse(source);
  // Read metadata before Readability, which mutates the document.
  const metaTitle = meta(doc, "og:title", "twitter:title");
  const docTitle = doc.querySelector("title")?.textContent?.trim();
  const siteName = meta(doc, "og:site_name", "application-name");
  const byline = meta(doc, "author", "article:author", "parsely-author", "dc.creator");
  const published = isoDate(
    meta(doc, "article:published_time", "og:published_time", "datePublished", "pubdate", "date", "dc.date") ??
      doc.querySelector("time[datetime]")?.getAttribute("datetime"),
  );
  const description = meta(doc, "og:description", "description", "twitter:description");
  const lang = doc.documentElement?.getAttribute("lang") ?? undefined;

  removeBoilerplate(doc);
  let parsed: ReturnType<Readability<string>["parse"]> = null;
  try {
    parsed = new Readability(doc as never, { charThreshold: 200 }).parse();
  } catch {
    parsed = null; // malformed markup: fall through to the plain-text fallback
  }
  let text = parsed?.content ? blockText(parsed.content) : "";
  if (!text) {
    const fresh = parse(source);
    removeBoilerplate(fresh);
    text = blockText(fresh.body?.innerHTML ?? "");
  }
  return {
    title: parsed?.title?.trim() || metaTitle || docTitle || "",
    text,
    byline: parsed?.byline?.trim() || byline,
    siteName: parsed?.siteName?.trim() || siteName,
    publishedTime: isoDate(parsed?.publishedTime) ?? published,
    excerpt: parsed?.excerpt?.trim() || description,
    lang: parsed?.lang || lang,
  };
}
