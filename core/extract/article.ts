/**
 * Main-text extraction from an HTML page with `@mozilla/readability` over a `linkedom` DOM.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { bodyToMarkdown } from "../text/mod.ts";

/** What a page says about itself. */
export interface ExtractedArticle {
  title: string;
  /** Main text, paragraphs separated by blank lines. */
  text: string;
  /** Main text as Markdown (headings, lists, links kept), when Readability found the article. */
  markdown?: string;
  byline?: string;
  siteName?: string;
  /** ISO 8601 when the page states it. */
  publishedTime?: string;
  /** The page's own description (meta description / og:description). */
  excerpt?: string;
  lang?: string;
}

/** The slice of the DOM this module touches (Deno's type library has no DOM). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}
interface DomElement extends DomNode {
  textContent: string | null;
  children: ArrayLike<DomElement>;
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

const BLOCK_TAGS = new Set([
  "P",
  "H1",
  "H2",
  "H3",
  "H4",
  "H5",
  "H6",
  "LI",
  "UL",
  "OL",
  "BLOCKQUOTE",
  "PRE",
  "DIV",
  "SECTION",
  "ARTICLE",
  "MAIN",
  "HEADER",
  "TR",
  "TABLE",
  "FIGURE",
  "FIGCAPTION",
  "DD",
  "DT",
  "DL",
  "BR",
  "HR",
  "BODY",
]);
// Bounds on what is parsed at all: the main text of an article sits well inside these.
const MAX_HTML_CHARS = 2 * 1024 * 1024;
const MAX_TAGS = 20_000;

/** Collapses whitespace inside lines and keeps single blank lines between paragraphs. */
function tidy(text: string): string {
  return text.split(/\n+/).map((l) => l.replace(/\s+/g, " ").trim()).filter(Boolean).join("\n\n");
}

/** Text under `root` with block elements on their own lines; iterative, so depth cannot overflow the stack. */
function domText(root: DomNode | null | undefined): string {
  if (!root) return "";
  const out: string[] = [];
  const stack: (DomNode | null)[] = [root]; // null marks the end of a block element
  while (stack.length) {
    const node = stack.pop();
    if (node === null) {
      out.push("\n");
      continue;
    }
    if (node!.nodeType === 3) {
      out.push(node!.textContent ?? "");
      continue;
    }
    if (node!.nodeType !== 1 && node!.nodeType !== 9) continue;
    const block = BLOCK_TAGS.has(node!.nodeName);
    if (block) {
      out.push("\n");
      stack.push(null);
    }
    const kids = node!.childNodes;
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  }
  return tidy(out.join(""));
}

/**
 * Drops scripts (but not JSON-LD, which carries article metadata), styles and comments, and cuts
 * the page after {@link MAX_TAGS} tags: parsing cost grows with markup, not with the text we keep.
 */
function trimSource(html: string): string {
  let source = html.length > MAX_HTML_CHARS ? html.slice(0, MAX_HTML_CHARS) : html;
  source = source
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<script\b(?![^>]*application\/ld\+json)[^>]*>[\s\S]*?<\/script\s*>/gi, "")
    .replace(/<style\b[^>]*>[\s\S]*?<\/style\s*>/gi, "");
  const tag = /<[a-zA-Z]/g;
  for (let n = 0; tag.exec(source); n++) {
    if (n === MAX_TAGS) return source.slice(0, tag.lastIndex - 2);
  }
  return source;
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

/**
 * Readability's work grows steeply with nesting depth (a 400-deep chain of divs takes seconds) and
 * with element count. Past these limits the page is read as plain text instead.
 */
export const READABILITY_LIMITS = { maxDepth: 80, maxElements: 5000 } as const;

/** Whether the tree under `root` stays within {@link READABILITY_LIMITS}; stops walking as soon as it does not. */
function withinLimits(root: DomElement | null): boolean {
  if (!root) return true;
  const stack: [DomElement, number][] = [[root, 1]];
  let count = 0;
  while (stack.length) {
    const [el, depth] = stack.pop()!;
    if (++count > READABILITY_LIMITS.maxElements || depth > READABILITY_LIMITS.maxDepth) return false;
    const kids = el.children;
    for (let i = 0; i < kids.length; i++) stack.push([kids[i]!, depth + 1]);
  }
  return true;
}

/** Normalises a date string to ISO 8601, or `undefined` when it does not parse. */
function isoDate(value: string | undefined | null): string | undefined {
  if (!value) return undefined;
  const t = Date.parse(value.trim());
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}

/**
 * Extracts the main article from `html`. Falls back to the body text without navigation,
 * scripts and boilerplate when Readability finds no article (very short pages) or when the page
 * is too deep or too large for it ({@link READABILITY_LIMITS}). CPU-bound: for untrusted pages
 * prefer {@link ArticleExtractor} (core/extract/extractor.ts), which runs this in a worker with a deadline.
 * @param html the page source, already decoded
 */
export function extractArticle(html: string): ExtractedArticle {
  const source = trimSource(html);
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
  const ranReadability = withinLimits(doc.documentElement);
  if (ranReadability) {
    try {
      parsed = new Readability(doc as never, { charThreshold: 200 }).parse();
    } catch {
      parsed = null; // malformed markup: fall through to the plain-text fallback
    }
  }
  let text = parsed?.content ? domText(parse(`<!doctype html><html><body>${parsed.content}</body></html>`).body) : "";
  if (!text) {
    // Readability changes the document it reads: start again from the source if it ran.
    const fresh = ranReadability ? parse(source) : doc;
    if (fresh !== doc) removeBoilerplate(fresh);
    text = domText(fresh.body);
  }
  const markdown = parsed?.content
    ? bodyToMarkdown(parse(`<!doctype html><html><body>${parsed.content}</body></html>`).body)
    : "";
  return {
    title: parsed?.title?.trim() || metaTitle || docTitle || "",
    text,
    ...(markdown ? { markdown } : {}),
    byline: parsed?.byline?.trim() || byline,
    siteName: parsed?.siteName?.trim() || siteName,
    publishedTime: isoDate(parsed?.publishedTime) ?? published,
    excerpt: parsed?.excerpt?.trim() || description,
    lang: parsed?.lang || lang,
  };
}
