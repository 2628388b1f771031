// Publisher analytics dashboard. Data goes into the page only through textContent and element
// properties, never innerHTML, so prompts, responses and titles are shown as text. The API key
// lives in sessionStorage and travels only in the Authorization header; the view (dates, zone,
// filters) lives in the URL so it can be shared.
"use strict";

(function () {
  const KEY = "analytics_api_key";
  const VIEW = ["start_date", "end_date", "timezone", "compare", "widget_id", "placement_id", "deployment_type"];
  const FILTERS = ["start_date", "end_date", "timezone", "widget_id", "placement_id", "deployment_type"];
  const $ = (id) => document.getElementById(id);
  let chart = null;
  let realtimeTimer = null;

  class AuthError extends Error {}

  function el(tag, props, children) {
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

  function view() {
    const p = new URLSearchParams(location.search);
    const v = {};
    for (const k of VIEW) if (p.get(k)) v[k] = p.get(k);
    if (!("compare" in v) && !p.has("compare")) v.compare = "previous_period";
    return v;
  }

  function qs(params) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") p.set(k, v);
    return p.toString();
  }

  async function api(path, params) {
    const key = sessionStorage.getItem(KEY);
    const res = await fetch(`/v1/analytics/${path}?${qs(params)}`, {
      headers: { authorization: `Bearer ${key}` },
      cache: "no-store",
      credentials: "omit",
    });
    if (res.status === 401 || res.status === 403) throw new AuthError("key");
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(typeof body.message === "string" ? body.message : `HTTP ${res.status}`);
    return body;
  }

  const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "");

  function table(columns, rows) {
    if (!rows.length) return el("p", { className: "muted", text: "No data in this range." });
    const head = el("tr", null, columns.map((c) => el("th", { className: c.num ? "n" : "", text: c.label })));
    const body = rows.map((r) =>
      el(
        "tr",
        null,
        columns.map((c) => {
          const v = c.get(r);
          return el("td", { className: c.num ? "n" : "", text: c.num ? fmt(v) : String(v ?? "") });
        }),
      )
    );
    return el("table", null, [el("thead", null, [head]), el("tbody", null, body)]);
  }

  function put(id, node) {
    $(id).replaceChildren(node);
  }

  function bars(rows) {
    const max = Math.max(1, ...rows.map((r) => r.value));
    return el(
      "div",
      null,
      rows.map((r) => {
        const fill = el("div", { className: "fill" });
        fill.style.width = `${(100 * r.value) / max}%`;
        return el("div", { className: "bar" }, [
          el("span", { text: r.label }),
          el("div", { className: "track" }, [fill]),
          el("span", { className: "n", text: r.note }),
        ]);
      }),
    );
  }

  function renderCards(a) {
    const s = a.summary;
    const ch = a.comparison ? a.comparison.change : {};
    const items = [
      ["sessions", "Sessions"],
      ["widget_loads", "Widget loads"],
      ["engagement_queries", "Queries"],
      ["total_clicks", "Clicks"],
      ["viewability_rate", "Viewability %"],
      ["engagement_rate", "Engagement %"],
      ["query_to_click_rate", "Query to click %"],
      ["avg_session_duration_seconds", "Avg session (s)"],
    ];
    put(
      "cards",
      el(
        "div",
        { className: "cards" },
        items.map(([k, label]) => {
          const c = ch[k];
          const change = c === undefined ? "" : c === null ? "new" : `${c > 0 ? "+" : ""}${c}% vs earlier`;
          return el("div", { className: "card" }, [
            el("div", { className: "v", text: fmt(s[k]) }),
            el("div", { className: "l", text: label }),
            el("div", { className: `c ${c > 0 ? "up" : c < 0 ? "down" : ""}`, text: change }),
          ]);
        }),
      ),
    );
  }

  function renderChart(a) {
    const days = a.daily_breakdown;
    const xs = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const data = [xs, days.map((d) => d.sessions), days.map((d) => d.engagement_queries)];
    const series = [
      {},
      { label: "Sessions", stroke: "#2f6fed", width: 2 },
      { label: "Queries", stroke: "#7a5af8", width: 2 },
    ];
    if (a.comparison) {
      const prev = a.comparison.daily_breakdown;
      data.push(days.map((_, i) => (prev[i] ? prev[i].sessions : null)));
      series.push({ label: "Sessions (earlier)", stroke: "#98a2b3", dash: [6, 4], width: 1.5 });
    }
    const target = $("chart");
    const width = Math.max(320, target.clientWidth || 800);
    if (chart) chart.destroy();
    target.replaceChildren();
    chart = new uPlot(
      {
        width,
        height: 260,
        series,
        scales: { x: { time: true } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      },
      data,
      target,
    );
  }

  function renderBreakdown(id, b) {
    put(
      id,
      table([
        { label: b.breakdown.dimension, get: (r) => (r.key === null ? "(none)" : r.key) },
        { label: "Sessions", num: true, get: (r) => r.sessions },
        { label: "Queries", num: true, get: (r) => r.engagement_queries },
        { label: "Clicks", num: true, get: (r) => r.total_clicks },
        { label: "Engagement %", num: true, get: (r) => r.engagement_rate },
      ], b.rows),
    );
  }

  async function loadRealtime() {
    const v = view();
    const r = await api("realtime", { widget_id: v.widget_id, timezone: v.timezone });
    const tile = (label, a, b) =>
      el("div", { className: "card" }, [
        el("div", { className: "v", text: fmt(a) }),
        el("div", { className: "l", text: `${label} (5 min)` }),
        el("div", { className: "c", text: `${fmt(b)} in 30 min` }),
      ]);
    $("realtime").replaceChildren(
      tile("Active sessions", r.last_5_minutes.active_sessions, r.last_30_minutes.active_sessions),
      tile("Queries", r.last_5_minutes.queries, r.last_30_minutes.queries),
      tile("Clicks", r.last_5_minutes.clicks, r.last_30_minutes.clicks),
    );
  }

  async function load() {
    const v = view();
    const base = {};
    for (const k of FILTERS) if (v[k]) base[k] = v[k];
    $("status").textContent = "Loading…";
    const [a, place, dep, ref, arts, agents, si, logs] = await Promise.all([
      api("ask-ai", { ...base, compare: v.compare }),
      api("ask-ai/breakdown", { ...base, dimension: "placement_id", limit: 10 }),
      api("ask-ai/breakdown", { ...base, dimension: "deployment_type", limit: 10 }),
      api("ask-ai/breakdown", { ...base, dimension: "referring_url", limit: 10 }),
      api("articles", { start_date: v.start_date, end_date: v.end_date, timezone: v.timezone, limit: 10 }),
      api("agents", { start_date: v.start_date, end_date: v.end_date, timezone: v.timezone, limit: 10 }),
      api("session-intelligence", base),
      api("ask-ai/logs", { ...base, limit: 20 }),
      loadRealtime(),
    ]);
    renderCards(a);
    renderChart(a);
    renderBreakdown("by-placement", place);
    renderBreakdown("by-deployment", dep);
    renderBreakdown("by-referrer", ref);
    put(
      "articles",
      table([
        { label: "Article", get: (r) => r.title || r.url },
        { label: "Site", get: (r) => r.site },
        { label: "Clicks", num: true, get: (r) => r.clicks },
        { label: "Impressions", num: true, get: (r) => r.impressions },
        { label: "CTR %", num: true, get: (r) => r.ctr },
      ], arts.articles),
    );
    put(
      "agents",
      table([
        { label: "Agent", get: (r) => r.agent_identity },
        { label: "Queries", num: true, get: (r) => r.queries },
        { label: "Surfaced", num: true, get: (r) => r.results_surfaced },
        { label: "Clicks", num: true, get: (r) => r.clicks },
        { label: "CTR %", num: true, get: (r) => r.click_through_rate },
      ], agents.agents),
    );
    const s = si.session_intelligence;
    put(
      "depth",
      bars(s.session_engagement_distribution.map((d) => ({
        label: `${d.query_depth} ${d.query_depth === "1" ? "query" : "queries"}`,
        value: d.sessions,
        note: `${d.percentage}%`,
      }))),
    );
    put(
      "intents",
      bars(s.intent_breakdown.map((d) => ({ label: d.label, value: d.sessions, note: `${d.percentage}%` }))),
    );
    put(
      "logs",
      table([
        { label: "Time (UTC)", get: (r) => r.timestamp.replace("T", " ").slice(0, 19) },
        { label: "Question", get: (r) => r.prompt },
        { label: "Answer", get: (r) => (r.response.length > 160 ? `${r.response.slice(0, 160)}…` : r.response) },
        { label: "Type", get: (r) => r.interaction_type },
      ], logs.data),
    );
    $("status").textContent = `${a.filters.start_date || a.daily_breakdown[0].date} to ${
      a.filters.end_date || a.daily_breakdown[a.daily_breakdown.length - 1].date
    } · ${a.meta.timezone}`;
    document.body.dataset.loaded = "true";
  }

  function showSignIn(message) {
    clearInterval(realtimeTimer);
    $("app").classList.add("hidden");
    $("signin").classList.remove("hidden");
    $("message").textContent = message || "";
    $("key").focus();
  }

  async function start() {
    if (!sessionStorage.getItem(KEY)) return showSignIn("");
    $("signin").classList.add("hidden");
    $("app").classList.remove("hidden");
    const v = view();
    const form = $("filters");
    for (const k of VIEW) if (form.elements[k]) form.elements[k].value = v[k] || (k === "compare" ? "" : "");
    try {
      await load();
      clearInterval(realtimeTimer);
      realtimeTimer = setInterval(() => loadRealtime().catch(() => {}), 30000);
    } catch (err) {
      if (err instanceof AuthError) {
        sessionStorage.removeItem(KEY);
        showSignIn("That API key was not accepted. Check it and sign in again.");
      } else {
        $("status").textContent = `Could not load: ${err.message}`;
        document.body.dataset.loaded = "error";
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("signin").addEventListener("submit", (e) => {
      e.preventDefault();
      const key = $("key").value.trim();
      $("key").value = "";
      if (!/^ak_[A-Za-z0-9_-]+$/.test(key)) return showSignIn("An API key starts with ak_.");
      sessionStorage.setItem(KEY, key);
      start();
    });
    $("signout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      showSignIn("Signed out.");
    });
    $("filters").addEventListener("submit", (e) => {
      e.preventDefault();
      const form = e.target;
      const p = new URLSearchParams();
      for (const k of VIEW) {
        const val = form.elements[k] ? form.elements[k].value.trim() : "";
        if (val) p.set(k, val);
        else if (k === "compare") p.set(k, "");
      }
      history.replaceState(null, "", `${location.pathname}?${p}`);
      start();
    });
    start();
  });
})();
