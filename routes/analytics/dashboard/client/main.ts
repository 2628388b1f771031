/**
 * Publisher analytics dashboard, the entry of the bundle served as /dashboard/assets/dashboard.js
 * (`deno task dashboard:build`). Data goes into the page only through textContent and element
 * properties, never innerHTML, so prompts, responses and titles are shown as text. The API key
 * lives in sessionStorage and travels only in the Authorization header; the view (dates, zone,
 * filters) lives in the URL so it can be shared (./view.ts). One call brings every panel (./load.ts).
 */
import { apiKey, AuthError, forgetKey, listWidgets, LoadError, saveKey } from "./api.ts";
import { destroyChart, resizeChart } from "./chart.ts";
import { $, el, PANEL_IDS, put } from "./dom.ts";
import { clearProblem, dropLoads, load, realtimeCall, showProblem } from "./load.ts";
import { renderRealtime } from "./panels.ts";
import { showView, submittedView, view } from "./view.ts";

let realtimeTimer: ReturnType<typeof setInterval> | undefined;

/** Every panel back to its placeholder: a signed-out tab keeps none of the tenant's figures. */
function clearPanels(): void {
  destroyChart();
  for (const id of PANEL_IDS) put(id, el("p", { className: "muted placeholder", text: "Loading…" }));
  $("chart").removeAttribute("role");
  $("chart").removeAttribute("aria-label");
  $("status").textContent = "";
  $("widgets").replaceChildren();
  $("chart-note").classList.add("hidden");
  clearProblem();
  delete document.body.dataset.loaded;
}

/** The sign-in form, with `message` as an error (`kind` "error") or a plain notice ("info"). */
function showSignIn(message: string, kind?: "error" | "info"): void {
  clearInterval(realtimeTimer);
  dropLoads();
  clearPanels();
  $("app").classList.add("hidden");
  $("signin").classList.remove("hidden");
  $("message").textContent = message || "";
  $("message").classList.toggle("info", kind === "info");
  $("key").focus();
}

/** The time zones the browser knows, offered in the zone field. */
function fillZones(): void {
  const list = $("zones");
  if (list.children.length || typeof Intl.supportedValuesOf !== "function") return;
  list.replaceChildren(...Intl.supportedValuesOf("timeZone").map((z) => el("option", { value: z })));
}

/**
 * The tenant's widgets, offered by name in the widget field: their ids appear nowhere else on the
 * page. Once per sign-in; without them the field still takes an id.
 */
async function fillWidgets(): Promise<void> {
  const list = $("widgets");
  if (list.children.length) return;
  try {
    const body = await listWidgets();
    if (!body) return;
    const widgets = Array.isArray(body.data) ? body.data : [];
    list.replaceChildren(...widgets.map((w) => el("option", { value: String(w.id), label: String(w.name || w.id) })));
  } catch {
    // The field still takes an id typed in.
  }
}

/**
 * Shows the app for the key in the tab (or the sign-in form without one) and loads the URL's view.
 * @param fresh true from the Refresh button: every panel computed now, past the server cache.
 */
async function start(fromSignIn?: boolean, fresh?: boolean): Promise<void> {
  if (!apiKey()) return showSignIn("");
  fillZones();
  fillWidgets();
  $("signin").classList.add("hidden");
  $("app").classList.remove("hidden");
  // The focused Sign in button is gone: keyboard and screen-reader users start at the page's heading.
  if (fromSignIn) $("title").focus();
  showView($<HTMLFormElement>("filters"), view());
  try {
    await load(fresh);
    clearInterval(realtimeTimer);
    realtimeTimer = setInterval(() => realtimeCall().then(renderRealtime).catch(() => {}), 30000);
  } catch (err) {
    if (err instanceof AuthError) {
      forgetKey();
      showSignIn("That API key was not accepted. Check it and sign in again.");
    } else {
      showProblem("Could not load", (err as Error).message, err instanceof LoadError && err.retryable);
    }
  }
}

let resizeTimer: ReturnType<typeof setTimeout> | undefined;
globalThis.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(resizeChart, 150);
});

document.addEventListener("DOMContentLoaded", () => {
  $("signin").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $<HTMLInputElement>("key").value.trim();
    $<HTMLInputElement>("key").value = "";
    if (!/^ak_[A-Za-z0-9_-]+$/.test(key)) return showSignIn("An API key starts with ak_.");
    saveKey(key);
    start(true);
  });
  $("signout").addEventListener("click", () => {
    forgetKey();
    showSignIn("Signed out.", "info");
  });
  $("retry").addEventListener("click", () => start());
  $("refresh").addEventListener("click", () => start(false, true));
  $("filters").addEventListener("submit", (e) => {
    e.preventDefault();
    // Each new view is a history entry (Back returns to the previous one); the key never is.
    const next = `?${submittedView(e.target as HTMLFormElement)}`;
    if (next !== location.search) history.pushState(null, "", `${location.pathname}${next}`);
    start();
  });
  globalThis.addEventListener("popstate", () => start());
  start();
});
