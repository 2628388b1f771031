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
  // Every tag ends at a `>`: none starts after the last one, and there each `<a` scanned to the
  // end of the text looking for one (2.5 s for 100k characters of `<a`).
  const tagged = html.slice(0, html.lastIndexOf(">") + 1);
  for (const m of tagged.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(\/?)>/g)) {
    if (++tags > MAX_CONVERTED_TAGS) return false;
    if (m[1]) depth = Math.max(0, depth - 1);
    else if (!m[3] && !VOID_TAGS.test(m[2]!)) {
      if (++depth > MAX_CONVERTED_DEPTH) return false;
    }
  }
  return true;
}

/**
 * Markup without its `<script>` and `<style>` elements (an unclosed one runs to the end, as in a
 * browser), found by forward searches only: one pass however many unclosed tags the text has.
 */
function withoutScripts(html: string): string {
  const open = /<(script|style)\b/gi;
  let out = "", at = 0, m: RegExpExecArray | null;
  while ((m = open.exec(html))) {
    out += html.slice(at, m.index) + " ";
    const close = new RegExp(`</${m[1]}\\s*>`, "gi");
    close.lastIndex = open.lastIndex;
    if (!close.exec(html)) return out;
    at = open.lastIndex = close.lastIndex;
  }
  return out + html.slice(at);
}

/**
 * Plain text of markup without parsing it: tags dropped, a few entities decoded, blocks as
 * paragraphs. Linear in the length: every pattern stops at the next `<`.
 */
export function stripTags(html: string): string {
  return withoutScripts(html)
    .replace(/<\/(?:p|div|h[1-6]|li|blockquote|section|article)>/gi, "\n\n")
    .replace(/<[^<>]*>/g, " ")
    .replace(/&nbsp;/g, " ").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]+/g, " ").replace(/\n\s*\n+/g, "\n\n").trim();
}

// Link targets kept in Markdown a caller sent: web and mail addresses, and relative ones whose
// first segment has no scheme (a `:`, or an entity or escape that a renderer would turn into one).
const SAFE_TARGET = /^(?:https?:\/\/|mailto:|[#/?.]|[\w-]+(?:[/?#.]|$))/i;
const INLINE_TARGET = /(\]\(\s*)(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)/g;
// A reference definition applies to the whole document wherever it stands, in a block quote or a
// list item too: the container markers before it are read first (each consumes a marker, so the
// pattern cannot split white space two ways), and a label may hold escaped brackets.
const CONTAINER_PREFIX = String.raw`(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)]))*[ \t]*`;
const REFERENCE_LABEL = String.raw`\[(?:\\.|[^\]\\\n])+\]:`;
const REFERENCE_TARGET = new RegExp(String.raw`^(${CONTAINER_PREFIX}${REFERENCE_LABEL}[ \t]*)(<[^<>\n]*>|\S+)`);
// A definition whose target is on the next line (after that line's own block-quote markers).
const REFERENCE_SPLIT = new RegExp(
  String.raw`^(${CONTAINER_PREFIX}${REFERENCE_LABEL})[ \t]*\n(?:[ \t]*>)*[ \t]*`,
  "gm",
);
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
// A backslash escape (kept), or a `<` that would open raw HTML, a comment or an autolink.
const OPENING_TAG = /\\[\s\S]|<(?=[A-Za-z/!?])/g;

function safeTarget(target: string): string {
  const bare = target.startsWith("<") ? target.slice(1, -1).trim() : target;
  return SAFE_TARGET.test(bare) && !/\s/.test(bare) ? bare : "#";
}

function safeLine(line: string): string {
  // Code spans are shown as written: only the text around them is rewritten.
  return splitCodeSpans(line).map((part, i) => {
    if (i % 2 === 1) return part;
    return part.replace(INLINE_TARGET, (_, open: string, target: string) => open + safeTarget(target))
      .replace(REFERENCE_TARGET, (_, open: string, target: string) => open + safeTarget(target))
      .replace(OPENING_TAG, (m) => m === "<" ? "\\<" : m);
  }).join("");
}

/**
 * `line` cut into text and code spans, alternating (text first): a code span opens with a run of
 * backticks and closes at the next run of exactly as many (CommonMark 6.1); a run with no such
 * closer is text. Linear: each run is looked at once, the next run of its length found by a cursor.
 * @example splitCodeSpans("a ``b`` `c") // ["a ", "``b``", " `c"]
 */
export function splitCodeSpans(line: string): string[] {
  const runs: { start: number; end: number }[] = [];
  for (const m of line.matchAll(/`+/g)) runs.push({ start: m.index, end: m.index + m[0].length });
  const byLength = new Map<number, number[]>();
  runs.forEach((r, i) => byLength.set(r.end - r.start, [...byLength.get(r.end - r.start) ?? [], i]));
  const cursor = new Map<number, number>();
  const parts: string[] = [];
  let text = 0;
  for (let i = 0; i < runs.length; i++) {
    const length = runs[i]!.end - runs[i]!.start;
    const same = byLength.get(length)!;
    let at = cursor.get(length) ?? 0;
    while (at < same.length && same[at]! <= i) at++;
    cursor.set(length, at);
    if (at === same.length) continue; // no closer: these backticks are text
    const close = runs[same[at]!]!;
    parts.push(line.slice(text, runs[i]!.start), line.slice(runs[i]!.start, close.end));
    text = close.end;
    i = same[at]!;
  }
  parts.push(line.slice(text));
  return parts;
}

/**
 * Markdown a caller sent, made as safe as the Markdown converted from HTML: raw HTML and
 * autolinks are escaped (shown as text), and link and image targets that are not http(s), mailto
 * or relative become `#`, so no `javascript:` link or `<script>` reaches a reader's renderer.
 * Fenced code blocks and code spans are kept as written.
 */
export function safeMarkdown(md: string): string {
  let fence: string | undefined;
  // A target may follow its `](` or `]:` on the next line: joined, the line rules below see it.
  const joined = md.replace(/\]\([ \t]*\n[ \t]*/g, "](").replace(REFERENCE_SPLIT, "$1 ");
  return joined.split("\n").map((line) => {
    const open = line.match(FENCE)?.[1];
    if (fence) {
      if (open && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      return line;
    }
    if (open) {
      fence = open;
      return line;
    }
    return safeLine(line);
  }).join("\n");
}
