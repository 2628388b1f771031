/**
 * The embed script: `<script src="{BASE_URL}/widget/v1/loader.js" data-widget-id="wd_..." async>`.
 * It places an `<ask-ai-widget>` (in `data-target`, or the one the page placed by hand, or a docked
 * one at the end of the body), copies the tag's attributes onto it and loads the widget script.
 * It runs after the page's own parsing (async) and does nothing else, so it never blocks rendering.
 */

import { runningScript } from "./dom.ts";

/** Replaced when served with the path of the current hashed widget script (routes/widget/assets.ts). */
const WIDGET_PATH = "__ASK_AI_WIDGET_PATH__";
/** Replaced when served with the SHA-384 Subresource Integrity of that script's exact bytes. */
const WIDGET_INTEGRITY = "__ASK_AI_WIDGET_INTEGRITY__";

/** Attributes passed from the script tag to the element (each also as `data-...`). */
const PASSED = [
  "widget-id",
  "mode",
  "placement-id",
  "deployment-type",
  "creative-id",
  "line-item-id",
  "publisher-id",
  "theme",
  "initial-query",
  "prompt-suggestions",
  "recommendations",
];

(() => {
  const script = runningScript();
  if (!script?.src) return;
  const get = (name: string) => script.getAttribute(`data-${name}`) ?? script.getAttribute(name);
  const widgetId = get("widget-id");
  if (!widgetId) return;

  const place = () => {
    const target = get("target");
    const host = target ? document.querySelector(target) : null;
    let widget: Element | null = host?.tagName === "ASK-AI-WIDGET"
      ? host
      : (host ?? document).querySelector("ask-ai-widget");
    if (!widget) {
      widget = document.createElement("ask-ai-widget");
      // No place given: docked (floating), so nothing on the page moves.
      if (!host && !get("mode")) widget.setAttribute("mode", "docked");
      (host ?? document.body).append(widget);
    }
    for (const name of PASSED) {
      const v = get(name);
      if (v !== null && !widget.hasAttribute(name)) widget.setAttribute(name, v);
    }
    if (script.hasAttribute("data-no-track")) widget.setAttribute("data-no-track", "");
    // The configuration is fetched while the widget script loads (one round trip saved); the
    // element takes the request over. Only for this tag's widget, not one placed with another id.
    const el = widget as Element & { askAiConfig?: Promise<Response> };
    if ((el.getAttribute("widget-id") ?? el.getAttribute("data-widget-id")) === widgetId && !el.askAiConfig) {
      const url = new URL(`/widget/v1/${encodeURIComponent(widgetId)}/config`, script.src).href;
      el.askAiConfig = fetch(url, { credentials: "omit" });
      el.askAiConfig.catch(() => {}); // reported by the element when it reads it
    }
    if (!customElements.get("ask-ai-widget") && !document.querySelector("script[data-ask-ai-widget]")) {
      const s = document.createElement("script");
      s.src = new URL(WIDGET_PATH, script.src).href;
      // The browser runs the script only if its bytes are the ones built with this loader (a
      // tampered copy or cache is refused); integrity on another origin needs a CORS fetch.
      s.integrity = WIDGET_INTEGRITY;
      s.crossOrigin = "anonymous";
      s.async = true;
      s.setAttribute("data-ask-ai-widget", "");
      document.head.append(s);
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", place, { once: true });
  else place();
})();
