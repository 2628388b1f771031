/**
 * A cheap, linear pre-scan of untrusted markup (feeds, sitemaps, item HTML) before it reaches
 * linkedom, whose parse time grows faster than linearly with nesting (depth 60k: 5 s). It
 * refuses what no real feed needs: nesting past {@link MAX_MARKUP_DEPTH}, entity declarations
 * (the "billion laughs" expansion), and more entries than a sitemap may hold. The parse itself
 * also runs in a worker with a deadline (parser.ts); this makes the hostile cases fail fast.
 */
import { SourceFormatError } from "./errors.ts";

/** Deepest element nesting accepted; real feeds and article HTML stay under 40. */
export const MAX_MARKUP_DEPTH = 256;
/** Most entries (`item`, `entry`, `url`, `sitemap`) a document may hold: the sitemap protocol's own limit. */
export const MAX_DOCUMENT_ENTRIES = 50_000;

const ENTRY_NAMES = new Set(["item", "entry", "url", "sitemap"]);
// HTML elements that never nest (void) or whose end tag is optional: not counted as depth.
const HTML_FLAT = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
  "p",
  "li",
  "dt",
  "dd",
  "option",
  "optgroup",
  "tr",
  "td",
  "th",
  "thead",
  "tbody",
  "tfoot",
  "colgroup",
  "rb",
  "rt",
  "rp",
]);
const HTML_RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "noscript"]);

/** What a scan saw. */
export interface MarkupScan {
  maxDepth: number;
  entries: number;
}

const isNameChar = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 58 || c === 45 || c === 95 ||
  c === 46;

/**
 * Scans markup and refuses it when it is nested deeper than `maxDepth`, declares entities (XML),
 * or holds more than `maxEntries` entries (XML).
 * @param html HTML rules: void and optional-end elements do not nest; script and style are raw text
 * @throws {SourceFormatError} with a public message naming the limit
 */
export function guardMarkup(
  text: string,
  { html = false, maxDepth = MAX_MARKUP_DEPTH, maxEntries = MAX_DOCUMENT_ENTRIES }: {
    html?: boolean;
    maxDepth?: number;
    maxEntries?: number;
  } = {},
): MarkupScan {
  const what = html ? "an item's HTML" : "the document";
  let depth = 0, deepest = 0, entries = 0;
  let i = text.indexOf("<");
  const n = text.length;
  while (i >= 0 && i < n - 1) {
    const c = text.charCodeAt(i + 1);
    if (c === 33 /* ! */) {
      if (text.startsWith("<!--", i)) {
        const end = text.indexOf("-->", i + 4);
        i = end < 0 ? -1 : text.indexOf("<", end + 3);
        continue;
      }
      if (text.startsWith("<![CDATA[", i)) {
        const end = text.indexOf("]]>", i + 9);
        i = end < 0 ? -1 : text.indexOf("<", end + 3);
        continue;
      }
      // <!DOCTYPE ...> with an optional internal subset [ ... ]: entity declarations are refused.
      const close = declarationEnd(text, i);
      if (!html && /<!ENTITY/i.test(text.slice(i, close))) {
        throw new SourceFormatError(`${what} declares entities, which sources may not`);
      }
      i = text.indexOf("<", close);
      continue;
    }
    if (c === 63 /* ? */) {
      const end = text.indexOf("?>", i + 2);
      i = end < 0 ? -1 : text.indexOf("<", end + 2);
      continue;
    }
    const closing = c === 47; /* / */
    let j = i + (closing ? 2 : 1);
    const nameStart = j;
    while (j < n && isNameChar(text.charCodeAt(j))) j++;
    if (j === nameStart) {
      i = text.indexOf("<", i + 1); // a lone "<" in text
      continue;
    }
    const rawName = text.slice(nameStart, j);
    const name = html ? rawName.toLowerCase() : rawName;
    const end = tagEnd(text, j);
    if (end < 0) break;
    if (closing) {
      if (!(html && HTML_FLAT.has(name)) && depth > 0) depth--;
    } else if (text.charCodeAt(end - 1) !== 47 /* self-closing */) {
      if (html && HTML_RAW_TEXT.has(name)) {
        // Raw text: nothing inside is markup; go to its end tag.
        const closeTag = new RegExp(`</${name}`, "gi");
        closeTag.lastIndex = end;
        const m = closeTag.exec(text);
        const after = m ? tagEnd(text, m.index + 2 + name.length) : -1;
        i = after < 0 ? -1 : text.indexOf("<", after + 1);
        continue;
      }
      if (!(html && HTML_FLAT.has(name))) {
        depth++;
        if (depth > deepest) deepest = depth;
        if (depth > maxDepth) {
          throw new SourceFormatError(`${what} is nested deeper than ${maxDepth} levels`);
        }
      }
      if (!html && ENTRY_NAMES.has(name.slice(name.indexOf(":") + 1)) && ++entries > maxEntries) {
        throw new SourceFormatError(`the document has more than ${maxEntries} entries`);
      }
    }
    i = text.indexOf("<", end + 1);
  }
  return { maxDepth: deepest, entries };
}

/** Index of the `>` that ends a tag whose name ends at `from` (quoted attribute values may hold `>`). */
function tagEnd(text: string, from: number): number {
  let quote = 0;
  for (let k = from; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (quote) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) quote = c;
    else if (c === 62) return k;
  }
  return -1;
}

/** Index just past a `<!...>` declaration, its `[ ... ]` internal subset included. */
function declarationEnd(text: string, from: number): number {
  let bracket = 0;
  for (let k = from + 2; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c === 91) bracket++;
    else if (c === 93) bracket--;
    else if (c === 62 && bracket <= 0) return k + 1;
  }
  return text.length;
}
