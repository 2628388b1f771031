/** Markdown helpers without dependencies (ingest and search use them; the HTML converter is markdown.ts). */

/**
 * Cuts Markdown to at most `max` characters at the end of a block (or a sentence, or a word),
 * never inside a word; unchanged when it fits.
 */
export function clipMarkdown(md: string, max: number): string {
  if (md.length <= max) return md;
  const head = md.slice(0, max);
  const block = head.lastIndexOf("\n\n");
  if (block > max * 0.5) return head.slice(0, block).trimEnd();
  const sentence = Math.max(head.lastIndexOf(". "), head.lastIndexOf(".\n"));
  if (sentence > max * 0.5) return head.slice(0, sentence + 1);
  const word = head.search(/\s\S*$/);
  return word > 0 ? head.slice(0, word).trimEnd() : "";
}

/** Escapes the characters that would start Markdown syntax where the publisher meant text. */
export function escapeText(text: string): string {
  return text.replace(/([\\`*_[\]<>])/g, "\\$1");
}

/**
 * Plain text as Markdown (a body stored without markup): paragraphs kept, Markdown characters
 * escaped so the text reads as written.
 */
export function textToMarkdown(text: string): string {
  return text.split(/\n\s*\n/).map((p) => escapeText(p.replace(/\s+/g, " ").trim())).filter(Boolean).join("\n\n");
}

/** Most tags, and deepest nesting, of markup converted on the ingest path (the parse grows with both). */
export const MAX_CONVERTED_TAGS = 3000;
export const MAX_CONVERTED_DEPTH = 128;
const VOID_TAGS = /^(?:area|base|br|col|embed|hr|img|input|link|meta|source|track|wbr)$/i;

/**
 * Whether markup is small and shallow enough to parse on a request path: at most
 * {@link MAX_CONVERTED_TAGS} tags nested at most {@link MAX_CONVERTED_DEPTH} deep (counted by a
 * scan of the tags, without parsing).
 */
export function markupWithinLimits(html: string): boolean {
  let tags = 0, depth = 0;
  for (const m of html.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(\/?)>/g)) {
    if (++tags > MAX_CONVERTED_TAGS) return false;
    if (m[1]) depth = Math.max(0, depth - 1);
    else if (!m[3] && !VOID_TAGS.test(m[2]!)) {
      if (++depth > MAX_CONVERTED_DEPTH) return false;
    }
  }
  return true;
}

/** Plain text of markup without parsing it: tags dropped, a few entities decoded, blocks as paragraphs. */
export function stripTags(html: string): string {
  return html
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, " ")
    .replace(/<\/(?:p|div|h[1-6]|li|blockquote|section|article)>/gi, "\n\n")
    .replace(/<[^>]*>/g, " ")
    .replace(/&nbsp;/g, " ").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]+/g, " ").replace(/\n\s*\n+/g, "\n\n").trim();
}
