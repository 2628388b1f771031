/**
 * Building the page: elements made with text and attributes only (never innerHTML, so prompts,
 * answers and titles show as text), and the panels' states.
 */

/** The page's element with this id (the shell in page.ts has every id the dashboard uses). */
export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

/** Properties of {@link el}: `text` is the text content, `className` the class; any other is an attribute. */
export type ElProps = Record<string, string>;

/** A new element with `props` and `children`. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: ElProps | null,
  children?: (Node | string)[],
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") e.textContent = v;
      else if (k === "className") e.className = v;
      else e.setAttribute(k, v);
    }
  }
  for (const c of children || []) e.append(c);
  return e;
}

/** The elements the panels draw into. */
export const PANEL_IDS = [
  "realtime",
  "today",
  "cards",
  "chart",
  "articles",
  "sites",
  "agents",
  "by-placement",
  "by-deployment",
  "by-referrer",
  "depth",
  "intents",
  "logs",
];

/** `node` as the whole content of the panel `id`, current. */
export function put(id: string, node: Node): void {
  $(id).replaceChildren(node);
  current(id);
}

/** Marks a panel's content as belonging to the view being loaded (see `staleAll`). */
export function current(id: string): void {
  $(id).classList.remove("stale");
  $(id).removeAttribute("aria-busy");
}

/**
 * While a new view loads, every panel still shows the previous view's figures: they are dimmed and
 * marked busy until their own line arrives, so no old number passes for the new filters.
 */
export function staleAll(): void {
  for (const id of PANEL_IDS) {
    $(id).classList.add("stale");
    $(id).setAttribute("aria-busy", "true");
  }
}
