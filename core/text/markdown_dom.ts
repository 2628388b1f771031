/**
 * A parsed HTML body to clean Markdown (the DOM walk of {@link htmlToMarkdown}), for a caller that
 * already holds a DOM: this module loads no HTML parser.
 */
import { clipMarkdown, escapeText } from "./markdown_text.ts";

/** Markdown characters kept per article. */
export const MAX_MARKDOWN_CHARS = 20_000;
// Past this many elements the rest of the document is not converted (cost grows with markup).
const MAX_ELEMENTS = 20_000;
const MAX_DEPTH = 64;

// deno-lint-ignore no-explicit-any
type Node = any;

const DROP = new Set([
  "SCRIPT",
  "STYLE",
  "NOSCRIPT",
  "TEMPLATE",
  "IFRAME",
  "OBJECT",
  "EMBED",
  "SVG",
  "CANVAS",
  "NAV",
  "ASIDE",
  "FOOTER",
  "HEADER",
  "FORM",
  "BUTTON",
  "INPUT",
  "SELECT",
  "TEXTAREA",
  "DIALOG",
  "MENU",
]);
// Class or id words of page furniture that sits inside an article's markup.
const BOILERPLATE =
  /(?:^|[\s_-])(share|sharing|social|newsletter|subscribe|subscription|signup|related|recommended|promo|advert|ads?|sponsor|comments?|cookie|paywall|byline-share|outbrain|taboola)(?:$|[\s_-])/i;
const BLOCKS = new Set(["P", "DIV", "SECTION", "ARTICLE", "MAIN", "FIGURE", "TABLE", "TR", "DL", "DD", "DT"]);

/**
 * Converts a parsed `<body>` to Markdown.
 * @param baseUrl resolves relative links; links that are not http(s) keep only their text
 */
export function bodyToMarkdown(body: Node, baseUrl?: string): string {
  const state = { elements: 0 };
  const out = blocks(body, { baseUrl, list: null, depth: 0 }, state);
  // White space before a line end goes; a run is matched from its start only (retried at each of its
  // characters, 90,000 spaces in a code block took 4 s).
  return clipMarkdown(out.replace(/(?<![ \t])[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim(), MAX_MARKDOWN_CHARS);
}

interface Ctx {
  baseUrl?: string;
  list: { ordered: boolean; n: number; indent: string } | null;
  depth: number;
}

function isBoilerplate(el: Node): boolean {
  if (DROP.has(el.nodeName)) return true;
  const marks = `${el.getAttribute?.("class") ?? ""} ${el.getAttribute?.("id") ?? ""}`;
  if (marks.trim() && BOILERPLATE.test(marks)) return true;
  return el.getAttribute?.("aria-hidden") === "true" || el.hasAttribute?.("hidden");
}

/** The block-level Markdown of an element's children. */
function blocks(el: Node, ctx: Ctx, state: { elements: number }): string {
  let out = "";
  let inline = "";
  const flush = () => {
    const t = inline.replace(/\s+/g, " ").trim();
    if (t) out += `${t}\n\n`;
    inline = "";
  };
  for (const child of el?.childNodes ?? []) {
    if (child.nodeType === 3) {
      inline += escapeText(child.textContent ?? "");
      continue;
    }
    if (child.nodeType !== 1) continue;
    if (++state.elements > MAX_ELEMENTS || ctx.depth > MAX_DEPTH) break;
    if (isBoilerplate(child)) continue;
    const name = child.nodeName;
    const deeper = { ...ctx, depth: ctx.depth + 1 };
    if (/^H[1-6]$/.test(name)) {
      flush();
      const t = inlines(child, deeper, state).replace(/\s+/g, " ").trim();
      if (t) out += `${"#".repeat(Number(name[1]))} ${t}\n\n`;
    } else if (name === "UL" || name === "OL") {
      flush();
      const indent = ctx.list ? `${ctx.list.indent}   ` : "";
      const items = listItems(child, { ...deeper, list: { ordered: name === "OL", n: 0, indent } }, state);
      if (items) out += `${items}\n`;
    } else if (name === "BLOCKQUOTE") {
      flush();
      const inner = blocks(child, deeper, state).trim();
      if (inner) out += `${inner.split("\n").map((l) => (l ? `> ${l}` : ">")).join("\n")}\n\n`;
    } else if (name === "PRE") {
      flush();
      const code = withoutTrailingNewlines(child.textContent ?? "");
      if (code.trim()) out += `\`\`\`\n${code.replaceAll("```", "ʼʼʼ")}\n\`\`\`\n\n`;
    } else if (name === "BR") {
      inline += "\n";
    } else if (name === "HR") {
      flush();
    } else if (BLOCKS.has(name) || name === "LI") {
      flush();
      out += blocks(child, deeper, state);
    } else {
      inline += inlineOf(child, deeper, state);
    }
  }
  flush();
  return out;
}

function listItems(list: Node, ctx: Ctx, state: { elements: number }): string {
  let out = "";
  for (const li of list.childNodes ?? []) {
    if (li.nodeType !== 1 || li.nodeName !== "LI" || isBoilerplate(li)) continue;
    if (++state.elements > MAX_ELEMENTS) break;
    const l = ctx.list!;
    l.n++;
    const marker = l.ordered ? `${l.n}.` : "-";
    const body = blocks(li, ctx, state).trim().replace(/\n\n+/g, "\n");
    if (!body) continue;
    const [first, ...rest] = body.split("\n");
    out += `${l.indent}${marker} ${first}\n`;
    for (const line of rest) out += /^\s*(?:-|\d+\.) /.test(line) ? `${line}\n` : `${l.indent}   ${line}\n`;
  }
  return out;
}

function inlines(el: Node, ctx: Ctx, state: { elements: number }): string {
  let out = "";
  for (const child of el.childNodes ?? []) {
    if (child.nodeType === 3) out += escapeText(child.textContent ?? "");
    else if (child.nodeType === 1 && !isBoilerplate(child)) {
      if (++state.elements > MAX_ELEMENTS || ctx.depth > MAX_DEPTH) break;
      out += inlineOf(child, { ...ctx, depth: ctx.depth + 1 }, state);
    }
  }
  return out;
}

function inlineOf(el: Node, ctx: Ctx, state: { elements: number }): string {
  const name = el.nodeName;
  if (name === "BR") return "\n";
  if (name === "IMG") return "";
  const inner = inlines(el, ctx, state);
  if (!inner.trim()) return inner;
  if (name === "A") {
    const href = safeHref(el.getAttribute("href"), ctx.baseUrl);
    const text = inner.replace(/\s+/g, " ").trim();
    return href ? `[${text.replace(/[[\]]/g, "\\$&")}](${href})` : inner;
  }
  if (name === "STRONG" || name === "B") return wrap(inner, "**");
  if (name === "EM" || name === "I") return wrap(inner, "_");
  if (name === "CODE") return `\`${(el.textContent ?? "").replaceAll("`", "ʼ")}\``;
  return inner;
}

/** `text` without its trailing newlines. By hand: `/\n+$/` was retried at every newline of a run inside it. */
function withoutTrailingNewlines(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 10) end--;
  return text.slice(0, end);
}

function wrap(text: string, mark: string): string {
  // Trimmed by hand: `/\s*$/` was retried at each character of a run of white space inside the
  // text (2.5 s for `<b>x</b>` around 90,000 spaces).
  const lead = text.slice(0, text.length - text.trimStart().length), trail = text.slice(text.trimEnd().length);
  return `${lead}${mark}${text.trim()}${mark}${trail}`;
}

/** An http(s) link target, absolute, with parentheses and spaces escaped; null for anything else. */
function safeHref(href: string | null, baseUrl?: string): string | null {
  if (!href) return null;
  try {
    const u = new URL(href.trim(), baseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") return null;
    return u.toString().replace(/[()\s]/g, (c) => encodeURIComponent(c));
  } catch {
    return null;
  }
}
