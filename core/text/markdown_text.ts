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
