/** Small DOM helpers: every server string goes in as text, every link must be http(s). */
import { safeHref } from "./values.ts";

/** An element with a class and text content (never parsed as HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { class?: string; text?: string; attrs?: Record<string, string> } = {},
  children: Node[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  // Own fields only: on a page whose Object.prototype was polluted (a query-string parser fed
  // `?__proto__[attrs][onmouseover]=...`), inherited ones would put handlers and text on every element.
  const own = <F extends keyof typeof props>(f: F) => Object.hasOwn(props, f) ? props[f] : undefined;
  const cls = own("class");
  const text = own("text");
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  for (const [k, v] of Object.entries(own("attrs") ?? {})) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

/** A link to `url` opening in a new tab, or plain text when the URL is not http(s). */
export function link(url: unknown, text: string, cls?: string): HTMLElement {
  const href = safeHref(url);
  if (!href) return el("span", { class: cls, text });
  return el("a", { class: cls, text, attrs: { href, target: "_blank", rel: "noopener" } });
}

/**
 * The script tag running now, read through `Document.prototype`: a page's `<img name="currentScript">`
 * (HTML a comment or a feed may carry, no script needed) hides `document.currentScript` (DOM
 * clobbering), and its `src` would become the origin our requests, questions and events go to.
 */
export function runningScript(): HTMLScriptElement | null {
  const current = Object.getOwnPropertyDescriptor(Document.prototype, "currentScript")?.get?.call(document);
  return current instanceof HTMLScriptElement ? current : null;
}
