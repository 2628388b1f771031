/**
 * Loading a view: one call brings every panel, streamed one line per panel as each is ready, and
 * each is drawn as it arrives, so a slow panel holds back nothing else. What fails is said in a
 * banner and in the panels it leaves empty.
 */
import { api, AuthError, LoadError, streamPanels } from "./api.ts";
import { noteToday, renderChart } from "./chart.ts";
import { $, el, put, staleAll } from "./dom.ts";
import {
  renderAgents,
  renderArticles,
  renderCards,
  renderLogs,
  renderRealtime,
  renderSessions,
  renderToday,
} from "./panels.ts";
import { breakdownTable } from "./tables.ts";
import type { Agents, Articles, AskAi, Breakdown, Logs, Realtime, SessionIntelligence } from "./types.ts";
import { showInEffect, VIEW, type View, view } from "./view.ts";

// Each load() bumps it; answers of an older load are dropped.
let generation = 0;

/** Drops the answers of every load under way (the tab signs out). */
export function dropLoads(): void {
  generation++;
}

/**
 * Says what went wrong in a banner above the panels (the status line says only that it failed);
 * a failure that may pass (rate limit, server error, network) gets a Retry button, a refused view
 * does not.
 */
export function showProblem(headline: string, detail: string | undefined, retryable: boolean): void {
  $("status").textContent = headline;
  $("status").classList.add("error");
  $("problem-text").textContent = detail ? `${headline}: ${detail}` : headline;
  $("retry").classList.toggle("hidden", !retryable);
  $("problem").classList.remove("hidden");
  document.body.dataset.loaded = "error";
}

export function clearProblem(): void {
  $("status").classList.remove("error");
  $("problem").classList.add("hidden");
}

/** The view filters a panel does not apply, named for a note under its heading. */
const SCOPE_FILTERS: Partial<Record<keyof View, string>> = {
  widget_id: "widget",
  placement_id: "placement",
  deployment_type: "deployment type",
};

function scopeNote(id: string, v: View, applies: (keyof View)[]): void {
  const ignored = (Object.keys(SCOPE_FILTERS) as (keyof View)[]).filter((k) => v[k] && !applies.includes(k));
  const note = $(`${id}-scope`);
  note.textContent = ignored.length
    ? `Not filtered by ${ignored.map((k) => SCOPE_FILTERS[k]).join(" or ")}: these figures include every one.`
    : "";
  note.classList.toggle("hidden", !ignored.length);
}

/** The realtime panel's own call, for the refresh every 30 s. */
export async function realtimeCall(): Promise<Realtime> {
  const v = view();
  return await api("realtime", { widget_id: v.widget_id, timezone: v.timezone }) as Realtime;
}

/** How a panel of the combined answer is drawn, and the page parts it fills. */
type PanelEntry = [draw: (body: never) => void, ids: string[]];

/**
 * Loads the URL's view into every panel. Throws {@link AuthError} when the key is refused (and
 * errors of a load that is no longer the latest); any other failure is shown on the page.
 * @param fresh true from the Refresh button: every panel computed now, past the server cache.
 */
export async function load(fresh?: boolean): Promise<void> {
  const gen = ++generation;
  const v = view();
  const params: Record<string, string> = {};
  for (const k of VIEW) if (v[k]) params[k] = v[k];
  delete document.body.dataset.loaded;
  clearProblem();
  staleAll();
  $("chart-note").classList.add("hidden");
  $("status").textContent = "Loading…";
  scopeNote("realtime", v, ["widget_id"]);
  scopeNote("articles", v, []);
  scopeNote("agents", v, []);
  const form = $<HTMLFormElement>("filters");
  const panels: Record<string, PanelEntry> = {
    "ask-ai": [(a: AskAi) => {
      renderCards(a);
      renderChart(a);
      noteToday(a);
      const days = a.daily_breakdown;
      const start = days.length ? days[0]!.date : a.filters.start_date;
      const end = days.length ? days[days.length - 1]!.date : a.filters.end_date;
      showInEffect(form, "start_date", start);
      showInEffect(form, "end_date", end);
      showInEffect(form, "timezone", a.meta.timezone);
      // A view without dates follows the calendar; the status line says so.
      const range = `${start} to ${end} · ${a.meta.timezone}`;
      // Without dates the view is the last whole days (the server's default), so changes compare like with like.
      $("status").textContent = !v.start_date && !v.end_date ? `Last ${days.length} whole days: ${range}` : range;
    }, ["cards", "chart"]],
    "realtime": [(r: Realtime) => renderRealtime(r), ["realtime"]],
    "today": [(a: AskAi) => renderToday(a), ["today"]],
    "articles": [(a: Articles) => renderArticles(a), ["articles", "sites"]],
    "agents": [(a: Agents) => renderAgents(a), ["agents"]],
    "by-placement": [(b: Breakdown) => put("by-placement", breakdownTable(b)), ["by-placement"]],
    "by-deployment": [(b: Breakdown) => put("by-deployment", breakdownTable(b)), ["by-deployment"]],
    "by-referrer": [(b: Breakdown) => put("by-referrer", breakdownTable(b)), ["by-referrer"]],
    "session-intelligence": [(s: SessionIntelligence) => renderSessions(s), ["depth", "intents"]],
    "logs": [(l: Logs) => renderLogs(l), ["logs"]],
  };
  const failed = (ids: string[], message: string) => {
    for (const id of ids) put(id, el("p", { className: "error", text: `Could not load: ${message}` }));
  };
  const notLoaded = (ids: string[]) => {
    for (const id of ids) put(id, el("p", { className: "muted empty", text: "Not loaded." }));
  };
  const drawn = new Set<string>();
  const failures: Error[] = [];
  try {
    await streamPanels(params, (line) => {
      const entry = Object.hasOwn(panels, line.panel) ? panels[line.panel] : null;
      if (gen !== generation || !entry) return;
      drawn.add(line.panel);
      try {
        if (line.status === 200) entry[0](line.body as never);
        else throw new Error(bodyMessage(line.body) ?? "error");
      } catch (err) {
        failures.push(err as Error);
        failed(entry[1], (err as Error).message);
      }
    }, fresh);
  } catch (err) {
    if (gen !== generation || err instanceof AuthError) throw err;
    if (drawn.size === 0) {
      // The view itself was refused (a bad date or zone) or the call failed: one message, not one per panel.
      for (const entry of Object.values(panels)) notLoaded(entry[1]);
      for (const id of ["realtime", "articles", "agents"]) scopeNote(id, {}, []);
      showProblem("Could not load", (err as Error).message, err instanceof LoadError && err.retryable);
      return;
    }
    failures.push(err as Error);
  }
  if (gen !== generation) return;
  for (const [name, entry] of Object.entries(panels)) {
    if (!drawn.has(name)) failed(entry[1], failures[0] ? failures[0].message : "no answer");
  }
  if (failures.length || drawn.size < Object.keys(panels).length) {
    showProblem("Some panels could not load", failures[0] && failures[0].message, true);
  } else {
    document.body.dataset.loaded = "true";
  }
}

/** The `message` of an error body, if it has one. */
function bodyMessage(body: unknown): string | undefined {
  const message = body && (body as { message?: unknown }).message;
  return typeof message === "string" ? message : undefined;
}
