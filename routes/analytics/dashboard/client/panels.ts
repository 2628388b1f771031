/** The panels drawn from one answer each: summary cards, articles, agents, sessions, questions, right now, today. */
import { $, current, el, put } from "./dom.ts";
import { duration, fmt, minuteIn, pct, pctFormat, withoutScheme } from "./format.ts";
import { bars, table } from "./tables.ts";
import type {
  AgentRow,
  Agents,
  ArticleRow,
  Articles,
  AskAi,
  LogRow,
  Logs,
  Realtime,
  SessionIntelligence,
  SiteRow,
  Summary,
} from "./types.ts";

/** How the comparison is named: "previous year" or "previous period". */
export const comparedTo = (
  a: AskAi,
): string => (a.comparison && a.comparison.compare === "previous_year" ? "previous year" : "previous period");

/** The summary's figures as cards, each with its change against the earlier period. */
export function renderCards(a: AskAi): void {
  const s = a.summary;
  const ch = a.comparison ? a.comparison.change : {};
  // One line names the period compared with, so each card's change stays short.
  const against = a.comparison
    ? `Change against the ${comparedTo(a)}, ${a.comparison.start_date} to ${a.comparison.end_date}.`
    : "";
  const items: [keyof Summary, string, (n: unknown) => string][] = [
    ["sessions", "Sessions", fmt],
    ["widget_loads", "Widget loads", fmt],
    ["engagement_queries", "Queries", fmt],
    ["total_clicks", "Clicks", fmt],
    ["viewability_rate", "Viewability", pct],
    ["engagement_rate", "Queries per 100 loads", (n) => pctFormat.format(n as number)],
    ["query_to_click_rate", "Query to click", pct],
    ["avg_session_duration_seconds", "Avg engaged time", duration],
  ];
  const cards = el(
    "div",
    { className: "cards" },
    items.map(([k, label, format]) => {
      const c = ch[k];
      const change = c === undefined
        ? ""
        : c === null
        ? (s[k] ? "new (none before)" : "")
        : `${c > 0 ? "+" : c < 0 ? "\u2212" : "±"}${pctFormat.format(Math.abs(c))}%`;
      const direction = c === undefined || c === null ? "" : c > 0 ? "up" : c < 0 ? "down" : "";
      return el("div", { className: "card" }, [
        el("div", { className: "v", text: format(s[k]) }),
        el("div", { className: "l", text: label }),
        el("div", { className: `c ${direction}`, text: change }),
      ]);
    }),
  );
  put("cards", against ? el("div", null, [el("p", { className: "muted note", text: against }), cards]) : cards);
}

/** Top articles, and the sites they are on. */
export function renderArticles(arts: Articles): void {
  put(
    "articles",
    table<ArticleRow>(
      [
        {
          label: "Article",
          get: (r) =>
            el("div", null, [
              el("div", { className: "title", text: r.title || withoutScheme(r.url) }),
              el("div", { className: "muted small", text: withoutScheme(r.url), title: r.url }),
            ]),
        },
        { label: "Clicks", num: true, get: (r) => r.clicks },
        { label: "Impressions", num: true, get: (r) => r.impressions },
        { label: "CTR", num: true, get: (r) => r.ctr, format: pct },
      ],
      arts.articles,
      "No article was shown or clicked in this range.",
    ),
  );
  put(
    "sites",
    table<SiteRow>(
      [
        { label: "Site", get: (r) => r.site || "(unknown)" },
        { label: "Clicks", num: true, get: (r) => r.clicks },
        { label: "Impr.", num: true, get: (r) => r.impressions },
        { label: "CTR", num: true, get: (r) => r.ctr, format: pct },
      ],
      arts.sites,
      "No site was shown or clicked in this range.",
    ),
  );
}

/** The AI agents that called the API. */
export function renderAgents(agents: Agents): void {
  put(
    "agents",
    table<AgentRow>(
      [
        { label: "Agent", get: (r) => r.agent_identity, className: "key" },
        { label: "Searches", num: true, get: (r) => r.searches },
        { label: "Answers", num: true, get: (r) => r.answers },
        { label: "Results shown", num: true, get: (r) => r.results_surfaced },
        { label: "Articles", num: true, get: (r) => r.articles_surfaced },
        { label: "Clicks", num: true, get: (r) => r.clicks },
        { label: "CTR", num: true, get: (r) => r.click_through_rate, format: pct },
      ],
      agents.agents,
      "No AI agent called the API in this range.",
    ),
  );
}

/** Sessions by query depth and by intent. */
export function renderSessions(si: SessionIntelligence): void {
  const s = si.session_intelligence;
  put(
    "depth",
    bars(s.session_engagement_distribution.map((d) => ({
      label: `${d.query_depth} ${d.query_depth === "1" ? "query" : "queries"}`,
      value: d.sessions,
      note: pct(d.percentage),
    }))),
  );
  put(
    "intents",
    bars(s.intent_breakdown.map((d) => ({ label: d.label, value: d.sessions, note: pct(d.percentage) }))),
  );
}

/** The latest questions and answers. */
export function renderLogs(logs: Logs): void {
  // Times in the view's zone, like the days of every other panel; UTC if the browser lacks it.
  let zone = logs.meta && logs.meta.timezone ? logs.meta.timezone : "UTC";
  try {
    minuteIn(zone, new Date().toISOString());
  } catch {
    zone = "UTC";
  }
  put(
    "logs",
    table<LogRow>(
      [
        { label: `Time (${zone})`, get: (r) => minuteIn(zone, r.timestamp), className: "nowrap" },
        { label: "Question", get: (r) => r.prompt },
        { label: "Answer", get: (r) => (r.response.length > 160 ? `${r.response.slice(0, 160)}…` : r.response) },
        { label: "Type", get: (r) => r.interaction_type.replace(/_/g, " "), className: "nowrap" },
      ],
      logs.data,
      "No questions in this range.",
    ),
  );
}

/** The last 5 and 30 minutes. */
export function renderRealtime(r: Realtime): void {
  const tile = (label: string, a: number, b: number) =>
    el("div", { className: "card" }, [
      el("div", { className: "v", text: fmt(a) }),
      el("div", { className: "l", text: `${label}, last 5 min` }),
      el("div", { className: "c", text: `${fmt(b)} in the last 30 min` }),
    ]);
  $("realtime").replaceChildren(
    tile("Active sessions", r.last_5_minutes.active_sessions, r.last_30_minutes.active_sessions),
    tile("Queries", r.last_5_minutes.queries, r.last_30_minutes.queries),
    tile("Clicks", r.last_5_minutes.clicks, r.last_30_minutes.clicks),
  );
  current("realtime");
}

/** Today so far in the view's zone: apart from the whole days above, and compared with nothing. */
export function renderToday(a: AskAi): void {
  const s = a.summary;
  put(
    "today",
    el("p", {
      className: "muted note",
      text: `Today so far (${a.filters.start_date}, ${a.meta.timezone}): ${fmt(s.sessions)} sessions, ` +
        `${fmt(s.engagement_queries)} queries, ${fmt(s.total_clicks)} clicks. ` +
        "Not in the summary below unless the range ends today.",
    }),
  );
}
