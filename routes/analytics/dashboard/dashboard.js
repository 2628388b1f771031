// Publisher analytics dashboard. Data goes into the page only through textContent and element
// properties, never innerHTML, so prompts, responses and titles are shown as text. The API key
// lives in sessionStorage and travels only in the Authorization header; the view (dates, zone,
// filters) lives in the URL so it can be shared. One call brings every panel, streamed one line
// per panel as each is ready, and each is drawn as it arrives: a slow panel holds back nothing else.
"use strict";

(function () {
  const KEY = "analytics_api_key";
  const VIEW = ["start_date", "end_date", "timezone", "compare", "widget_id", "placement_id", "deployment_type"];
  const DIMENSION_LABELS = { placement_id: "Placement", deployment_type: "Deployment type", referring_url: "Page" };
  const $ = (id) => document.getElementById(id);
  /** The elements the panels draw into. */
  const PANEL_IDS = [
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
  let chart = null;
  let realtimeTimer = null;
  // Each load() bumps it; answers of an older load are dropped.
  let generation = 0;

  class AuthError extends Error {}
  /** A refused or failed call: `retryable` when the same view may work later (429, 5xx, network). */
  class LoadError extends Error {
    constructor(message, retryable) {
      super(message);
      this.retryable = retryable;
    }
  }

  /** What a failed answer means to the reader, from its status, body and Retry-After. */
  async function loadError(res) {
    const body = await res.json().catch(() => ({}));
    const said = typeof body.message === "string" ? body.message : "";
    if (res.status === 429) {
      const wait = Number(res.headers.get("retry-after"));
      const when = Number.isFinite(wait) && wait > 0 ? `in ${Math.ceil(wait)} s` : "in a minute";
      return new LoadError(`too many requests with this key; try again ${when}`, true);
    }
    if (res.status >= 500) return new LoadError(`the server failed (HTTP ${res.status}); try again`, true);
    return new LoadError(said || `HTTP ${res.status}`, false);
  }

  /** fetch, with a network failure told in words (the browser's own says only "Failed to fetch"). */
  async function request(url, init) {
    try {
      return await fetch(url, init);
    } catch {
      throw new LoadError("the server could not be reached; check the connection and try again", true);
    }
  }

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

  /**
   * How a call treats the server's 30-minute analytics cache: a normal load lets it answer (the
   * browser adds no Cache-Control: its own cache is bypassed by the answers' `no-store`); Refresh asks
   * for figures computed now with `Cache-Control: no-cache`.
   */
  const cacheMode = (fresh) =>
    fresh ? { headers: { "cache-control": "no-cache" }, cache: "no-store" } : { headers: {}, cache: "default" };

  async function api(path, params, fresh) {
    const key = sessionStorage.getItem(KEY);
    const mode = cacheMode(fresh);
    const res = await request(`/v1/analytics/${path}?${qs(params)}`, {
      headers: { ...mode.headers, authorization: `Bearer ${key}` },
      cache: mode.cache,
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (res.status === 401 || res.status === 403) throw new AuthError("key");
    if (!res.ok) throw await loadError(res);
    return await res.json();
  }

  // Number formats: thousands separators, percentages with at most one decimal, durations in s/min.
  const numberFormat = new Intl.NumberFormat("en-US");
  const pctFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
  const dayFormat = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
  const fmt = (n) => (typeof n === "number" ? numberFormat.format(n) : "");
  const pct = (n) => (typeof n === "number" ? `${pctFormat.format(n)}%` : "");
  const duration = (s) => {
    if (typeof s !== "number") return "";
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  };
  const dayLabel = (unixS) => dayFormat.format(new Date(unixS * 1000));
  const dayYearFormat = new Intl.DateTimeFormat("en-GB", {
    day: "numeric",
    month: "short",
    year: "numeric",
    timeZone: "UTC",
  });
  const dayYearLabel = (unixS) => dayYearFormat.format(new Date(unixS * 1000));
  const COUNT_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];
  const withoutScheme = (url) => String(url).replace(/^https?:\/\//, "");

  /** A table; `columns` are `{label, get, kind}` with kind "num" (right-aligned) or "text". */
  function table(columns, rows, empty) {
    if (!rows.length) return el("p", { className: "muted empty", text: empty || "No data in this range." });
    const head = el("tr", null, columns.map((c) => el("th", { className: c.num ? "n" : "", text: c.label })));
    const body = rows.map((r) =>
      el(
        "tr",
        null,
        columns.map((c) => {
          const v = c.get(r);
          if (v instanceof Node) return el("td", { className: c.className || "" }, [v]);
          const text = c.format ? c.format(v) : c.num ? fmt(v) : String(v ?? "");
          // A key cut short with an ellipsis keeps its whole text in the tooltip.
          return el("td", {
            className: c.num ? "n" : c.className || "",
            text,
            ...(c.className === "key" ? { title: text } : {}),
          });
        }),
      )
    );
    return el("div", { className: "scroll" }, [
      el("table", null, [el("thead", null, [head]), el("tbody", null, body)]),
    ]);
  }

  function put(id, node) {
    $(id).replaceChildren(node);
    current(id);
  }

  /** Marks a panel's content as belonging to the view being loaded (see `staleAll`). */
  function current(id) {
    $(id).classList.remove("stale");
    $(id).removeAttribute("aria-busy");
  }

  /**
   * While a new view loads, every panel still shows the previous view's figures: they are dimmed and
   * marked busy until their own line arrives, so no old number passes for the new filters.
   */
  function staleAll() {
    for (const id of PANEL_IDS) {
      $(id).classList.add("stale");
      $(id).setAttribute("aria-busy", "true");
    }
  }

  function bars(rows) {
    if (!rows.some((r) => r.value > 0)) {
      return el("p", { className: "muted empty", text: "No sessions in this range." });
    }
    const max = Math.max(1, ...rows.map((r) => r.value));
    return el(
      "div",
      { className: "bars" },
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

  /** How the comparison is named: "previous year" or "previous period". */
  const comparedTo = (
    a,
  ) => (a.comparison && a.comparison.compare === "previous_year" ? "previous year" : "previous period");

  function renderCards(a) {
    const s = a.summary;
    const ch = a.comparison ? a.comparison.change : {};
    // One line names the period compared with, so each card's change stays short.
    const against = a.comparison
      ? `Change against the ${comparedTo(a)}, ${a.comparison.start_date} to ${a.comparison.end_date}.`
      : "";
    const items = [
      ["sessions", "Sessions", fmt],
      ["widget_loads", "Widget loads", fmt],
      ["engagement_queries", "Queries", fmt],
      ["total_clicks", "Clicks", fmt],
      ["viewability_rate", "Viewability", pct],
      ["engagement_rate", "Queries per 100 loads", (n) => pctFormat.format(n)],
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
        return el("div", { className: "card" }, [
          el("div", { className: "v", text: format(s[k]) }),
          el("div", { className: "l", text: label }),
          el("div", { className: `c ${c > 0 ? "up" : c < 0 ? "down" : ""}`, text: change }),
        ]);
      }),
    );
    put("cards", against ? el("div", null, [el("p", { className: "muted note", text: against }), cards]) : cards);
  }

  function chartSize(target) {
    const width = Math.max(260, target.clientWidth || 800);
    return { width, height: width < 500 ? 200 : 260 };
  }

  /** The calendar day (`YYYY-MM-DD`) of an instant in a zone. */
  function dayIn(zone, iso) {
    try {
      return new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
        .format(new Date(iso));
    } catch {
      return "";
    }
  }

  /**
   * A range that ends today ends on a day still under way: its drop is not a fall in traffic. The
   * server's clock and the view's zone say which day that is.
   */
  function noteToday(a) {
    const days = a.daily_breakdown;
    const last = days.length ? days[days.length - 1].date : "";
    const today = a.meta && a.meta.generated_at ? dayIn(a.meta.timezone || "UTC", a.meta.generated_at) : "";
    const note = $("chart-note");
    const shown = Boolean(last) && last === today && Boolean($("chart").querySelector("canvas"));
    note.textContent = shown ? `${dayLabel(Date.parse(`${last}T00:00:00Z`) / 1000)} is today: counted up to now.` : "";
    note.classList.toggle("hidden", !shown);
  }

  function renderChart(a) {
    const days = a.daily_breakdown;
    // A range across New Year names the year with each day: "25 Nov" alone would be either year.
    const spansYears = days.length > 0 && days[0].date.slice(0, 4) !== days[days.length - 1].date.slice(0, 4);
    const label = spansYears ? dayYearLabel : dayLabel;
    const xs = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const data = [xs, days.map((d) => d.sessions), days.map((d) => d.engagement_queries)];
    const series = [
      { label: "Day", value: (_u, v) => (v == null ? "–" : label(v)) },
      { label: "Sessions", stroke: "#2f6fed", width: 2, value: (_u, v) => fmt(v) },
      // Blue and orange stay apart for colour-blind readers; the earlier period is a dashed grey.
      // Every line has at least 3:1 contrast on white.
      { label: "Queries", stroke: "#c4320a", width: 2, value: (_u, v) => fmt(v) },
    ];
    if (a.comparison) {
      const prev = a.comparison.daily_breakdown;
      data.push(days.map((_, i) => (prev[i] ? prev[i].sessions : null)));
      series.push({
        label: `Sessions, ${comparedTo(a)}`,
        stroke: "#667085",
        dash: [6, 4],
        width: 1.5,
        value: (_u, v) => fmt(v),
      });
    }
    const target = $("chart");
    if (chart) chart.destroy();
    chart = null;
    const total = (k) => days.reduce((n, d) => n + (d[k] || 0), 0);
    const earlier = a.comparison ? a.comparison.daily_breakdown.reduce((n, d) => n + (d.sessions || 0), 0) : 0;
    if (!total("sessions") && !total("engagement_queries") && !earlier) {
      target.removeAttribute("role");
      target.removeAttribute("aria-label");
      put("chart", el("p", { className: "muted empty", text: "No sessions or queries in this range." }));
      return;
    }
    // The canvas says nothing to a screen reader: the container carries what it shows.
    target.setAttribute("role", "img");
    target.setAttribute(
      "aria-label",
      `Daily sessions and queries, ${days[0].date} to ${days[days.length - 1].date}: ` +
        `${fmt(total("sessions"))} sessions, ${fmt(total("engagement_queries"))} queries` +
        (a.comparison ? `; ${fmt(earlier)} sessions in the ${comparedTo(a)}` : ""),
    );
    const size = chartSize(target);
    target.replaceChildren();
    current("chart");
    // One tick per day, thinned so labels never overlap.
    const daySplits = (u) => {
      const room = Math.max(2, Math.floor(u.width / (spansYears ? 96 : 64)));
      const step = Math.max(1, Math.ceil(xs.length / room));
      return xs.filter((_, i) => i % step === 0);
    };
    chart = new uPlot(
      {
        ...size,
        series,
        // Counts start at zero, so a quiet day reads as quiet.
        scales: {
          // A single day sits in the middle, not on the left edge of an empty axis.
          x: { time: true, range: (_u, min, max) => (xs.length === 1 ? [xs[0] - 43200, xs[0] + 43200] : [min, max]) },
          y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
        },
        axes: [
          { splits: daySplits, values: (_u, splits) => splits.map(label), space: 40 },
          // Whole numbers only: these are counts.
          { values: (_u, splits) => splits.map(fmt), size: 56, incrs: COUNT_STEPS },
        ],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
        // The legend's marker is drawn like its line: the earlier period's is dashed there too.
        legend: { markers: { dash: (u, i) => (u.series[i].dash ? "dashed" : "solid") } },
      },
      data,
      target,
    );
  }

  function breakdownTable(b) {
    const dim = b.breakdown.dimension;
    return table([
      {
        label: DIMENSION_LABELS[dim] || dim,
        get: (r) => (r.key === null || r.key === "" ? "(not set: API traffic)" : r.key),
        format: (v) => (dim === "referring_url" ? withoutScheme(v) : v),
        className: "key",
      },
      { label: "Sessions", num: true, get: (r) => r.sessions },
      { label: "Queries", num: true, get: (r) => r.engagement_queries },
      { label: "Clicks", num: true, get: (r) => r.total_clicks },
      // A row with no widget load (API traffic) has no rate per load: a dash, not a 0.
      {
        label: "Queries / 100 loads",
        num: true,
        get: (r) => (r.widget_loads ? r.engagement_rate : null),
        format: (n) => (typeof n === "number" ? pctFormat.format(n) : "\u2013"),
      },
    ], b.rows);
  }

  function renderArticles(arts) {
    put(
      "articles",
      table(
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
      table(
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

  function renderAgents(agents) {
    put(
      "agents",
      table(
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

  function renderSessions(si) {
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

  /** `YYYY-MM-DD HH:MM` formatters by zone (the browser knows every zone the API accepts). */
  const minuteFormats = new Map();
  function minuteIn(zone, iso) {
    if (!minuteFormats.has(zone)) {
      minuteFormats.set(
        zone,
        new Intl.DateTimeFormat("en-CA", {
          timeZone: zone,
          year: "numeric",
          month: "2-digit",
          day: "2-digit",
          hour: "2-digit",
          minute: "2-digit",
          hourCycle: "h23",
        }),
      );
    }
    const p = {};
    for (const part of minuteFormats.get(zone).formatToParts(new Date(iso))) p[part.type] = part.value;
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
  }

  function renderLogs(logs) {
    // Times in the view's zone, like the days of every other panel; UTC if the browser lacks it.
    let zone = logs.meta && logs.meta.timezone ? logs.meta.timezone : "UTC";
    try {
      minuteIn(zone, new Date().toISOString());
    } catch {
      zone = "UTC";
    }
    put(
      "logs",
      table(
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

  function renderRealtime(r) {
    const tile = (label, a, b) =>
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
  function renderToday(a) {
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

  const realtimeCall = () => {
    const v = view();
    return api("realtime", { widget_id: v.widget_id, timezone: v.timezone });
  };

  /**
   * Every panel of the view in one call (GET /v1/analytics/dashboard): NDJSON lines
   * `{panel, status, body}` in the order the panels finish, each handed to `onPanel` as it arrives.
   */
  async function streamPanels(params, onPanel, fresh) {
    const key = sessionStorage.getItem(KEY);
    const mode = cacheMode(fresh);
    const res = await request(`/v1/analytics/dashboard?${qs(params)}`, {
      headers: { ...mode.headers, authorization: `Bearer ${key}` },
      cache: mode.cache,
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (res.status === 401 || res.status === 403) throw new AuthError("key");
    if (!res.ok) throw await loadError(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch {
        throw new LoadError("the connection broke while loading; try again", true);
      }
      const { value, done } = chunk;
      if (done) break;
      buffer += value;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) onPanel(JSON.parse(line));
      }
    }
  }

  /**
   * Shows in an empty view field the value the API answered with (the default range, the default
   * zone) and marks it as such, so the submit leaves it out of the URL: a URL without dates keeps
   * meaning "the latest days" when shared. A field the user has typed into is left alone.
   */
  function showInEffect(name, value) {
    const field = $("filters").elements[name];
    if (!field || !value) return;
    if (field.value !== "" && field.value !== field.dataset.inEffect) return;
    field.value = value;
    field.dataset.inEffect = value;
  }

  /** The view a submit of the filters form asks for, as URL parameters. */
  function submittedView(form) {
    const shown = view();
    const value = (k) => (form.elements[k] ? form.elements[k].value.trim() : "");
    const fromAnswer = (k) => form.elements[k] && form.elements[k].dataset.inEffect === value(k);
    // A date the user changed fixes the range: both dates go in, as shown. Otherwise each date is
    // kept as the URL had it, so a rolling view stays rolling.
    const dates = ["start_date", "end_date"];
    const dateEdited = dates.some((k) => value(k) !== (shown[k] || form.elements[k].dataset.inEffect || ""));
    const p = new URLSearchParams();
    for (const k of VIEW) {
      const val = dates.includes(k) ? (dateEdited ? value(k) : shown[k]) : fromAnswer(k) ? "" : value(k);
      if (val) p.set(k, val);
      else if (k === "compare") p.set(k, "");
    }
    return p;
  }

  /**
   * Says what went wrong in a banner above the panels (the status line says only that it failed);
   * a failure that may pass (rate limit, server error, network) gets a Retry button, a refused view
   * does not.
   */
  function showProblem(headline, detail, retryable) {
    $("status").textContent = headline;
    $("status").classList.add("error");
    $("problem-text").textContent = detail ? `${headline}: ${detail}` : headline;
    $("retry").classList.toggle("hidden", !retryable);
    $("problem").classList.remove("hidden");
    document.body.dataset.loaded = "error";
  }

  function clearProblem() {
    $("status").classList.remove("error");
    $("problem").classList.add("hidden");
  }

  /** The view filters a panel does not apply, named for a note under its heading. */
  const SCOPE_FILTERS = { widget_id: "widget", placement_id: "placement", deployment_type: "deployment type" };
  function scopeNote(id, v, applies) {
    const ignored = Object.keys(SCOPE_FILTERS).filter((k) => v[k] && !applies.includes(k));
    const note = $(`${id}-scope`);
    note.textContent = ignored.length
      ? `Not filtered by ${ignored.map((k) => SCOPE_FILTERS[k]).join(" or ")}: these figures include every one.`
      : "";
    note.classList.toggle("hidden", !ignored.length);
  }

  async function load(fresh) {
    const gen = ++generation;
    const v = view();
    const params = {};
    for (const k of VIEW) if (v[k]) params[k] = v[k];
    delete document.body.dataset.loaded;
    clearProblem();
    staleAll();
    $("chart-note").classList.add("hidden");
    $("status").textContent = "Loading…";
    scopeNote("realtime", v, ["widget_id"]);
    scopeNote("articles", v, []);
    scopeNote("agents", v, []);
    // How each panel of the combined answer is drawn, and the page parts it fills.
    const panels = {
      "ask-ai": [(a) => {
        renderCards(a);
        renderChart(a);
        noteToday(a);
        const days = a.daily_breakdown;
        const start = days.length ? days[0].date : a.filters.start_date;
        const end = days.length ? days[days.length - 1].date : a.filters.end_date;
        showInEffect("start_date", start);
        showInEffect("end_date", end);
        showInEffect("timezone", a.meta.timezone);
        // A view without dates follows the calendar; the status line says so.
        const range = `${start} to ${end} · ${a.meta.timezone}`;
        // Without dates the view is the last whole days (the server's default), so changes compare like with like.
        $("status").textContent = !v.start_date && !v.end_date ? `Last ${days.length} whole days: ${range}` : range;
      }, ["cards", "chart"]],
      "realtime": [renderRealtime, ["realtime"]],
      "today": [renderToday, ["today"]],
      "articles": [renderArticles, ["articles", "sites"]],
      "agents": [renderAgents, ["agents"]],
      "by-placement": [(b) => put("by-placement", breakdownTable(b)), ["by-placement"]],
      "by-deployment": [(b) => put("by-deployment", breakdownTable(b)), ["by-deployment"]],
      "by-referrer": [(b) => put("by-referrer", breakdownTable(b)), ["by-referrer"]],
      "session-intelligence": [renderSessions, ["depth", "intents"]],
      "logs": [renderLogs, ["logs"]],
    };
    const failed = (ids, message) => {
      for (const id of ids) put(id, el("p", { className: "error", text: `Could not load: ${message}` }));
    };
    const notLoaded = (ids) => {
      for (const id of ids) put(id, el("p", { className: "muted empty", text: "Not loaded." }));
    };
    const drawn = new Set();
    const failures = [];
    try {
      await streamPanels(params, (line) => {
        const entry = Object.hasOwn(panels, line.panel) ? panels[line.panel] : null;
        if (gen !== generation || !entry) return;
        drawn.add(line.panel);
        try {
          if (line.status === 200) entry[0](line.body);
          else throw new Error(line.body && typeof line.body.message === "string" ? line.body.message : "error");
        } catch (err) {
          failures.push(err);
          failed(entry[1], err.message);
        }
      }, fresh);
    } catch (err) {
      if (gen !== generation || err instanceof AuthError) throw err;
      if (drawn.size === 0) {
        // The view itself was refused (a bad date or zone) or the call failed: one message, not one per panel.
        for (const entry of Object.values(panels)) notLoaded(entry[1]);
        for (const id of ["realtime", "articles", "agents"]) scopeNote(id, {}, []);
        showProblem("Could not load", err.message, err instanceof LoadError && err.retryable);
        return;
      }
      failures.push(err);
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

  /** Every panel back to its placeholder: a signed-out tab keeps none of the tenant's figures. */
  function clearPanels() {
    if (chart) chart.destroy();
    chart = null;
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
  function showSignIn(message, kind) {
    clearInterval(realtimeTimer);
    generation++;
    clearPanels();
    $("app").classList.add("hidden");
    $("signin").classList.remove("hidden");
    $("message").textContent = message || "";
    $("message").classList.toggle("info", kind === "info");
    $("key").focus();
  }

  /** The time zones the browser knows, offered in the zone field. */
  function fillZones() {
    const list = $("zones");
    if (list.children.length || typeof Intl.supportedValuesOf !== "function") return;
    list.replaceChildren(...Intl.supportedValuesOf("timeZone").map((z) => el("option", { value: z })));
  }

  /**
   * The tenant's widgets, offered by name in the widget field: their ids appear nowhere else on the
   * page. Once per sign-in; without them the field still takes an id.
   */
  async function fillWidgets() {
    const list = $("widgets");
    if (list.children.length) return;
    try {
      const res = await request("/v1/widgets", {
        headers: { authorization: `Bearer ${sessionStorage.getItem(KEY)}` },
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      if (!res.ok) return;
      const body = await res.json();
      const widgets = Array.isArray(body.data) ? body.data : [];
      list.replaceChildren(...widgets.map((w) => el("option", { value: String(w.id), label: String(w.name || w.id) })));
    } catch {
      // The field still takes an id typed in.
    }
  }

  /** @param fresh true from the Refresh button: every panel computed now, past the server cache. */
  async function start(fromSignIn, fresh) {
    if (!sessionStorage.getItem(KEY)) return showSignIn("");
    fillZones();
    fillWidgets();
    $("signin").classList.add("hidden");
    $("app").classList.remove("hidden");
    // The focused Sign in button is gone: keyboard and screen-reader users start at the page's heading.
    if (fromSignIn) $("title").focus();
    const v = view();
    const form = $("filters");
    for (const k of VIEW) {
      if (!form.elements[k]) continue;
      form.elements[k].value = v[k] || "";
      delete form.elements[k].dataset.inEffect;
    }
    try {
      await load(fresh);
      clearInterval(realtimeTimer);
      realtimeTimer = setInterval(() => realtimeCall().then(renderRealtime).catch(() => {}), 30000);
    } catch (err) {
      if (err instanceof AuthError) {
        sessionStorage.removeItem(KEY);
        showSignIn("That API key was not accepted. Check it and sign in again.");
      } else {
        showProblem("Could not load", err.message, err instanceof LoadError && err.retryable);
      }
    }
  }

  let resizeTimer = null;
  globalThis.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (chart) chart.setSize(chartSize($("chart")));
    }, 150);
  });

  document.addEventListener("DOMContentLoaded", () => {
    $("signin").addEventListener("submit", (e) => {
      e.preventDefault();
      const key = $("key").value.trim();
      $("key").value = "";
      if (!/^ak_[A-Za-z0-9_-]+$/.test(key)) return showSignIn("An API key starts with ak_.");
      sessionStorage.setItem(KEY, key);
      start(true);
    });
    $("signout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      showSignIn("Signed out.", "info");
    });
    $("retry").addEventListener("click", () => start());
    $("refresh").addEventListener("click", () => start(false, true));
    $("filters").addEventListener("submit", (e) => {
      e.preventDefault();
      // Each new view is a history entry (Back returns to the previous one); the key never is.
      const next = `?${submittedView(e.target)}`;
      if (next !== location.search) history.pushState(null, "", `${location.pathname}${next}`);
      start();
    });
    globalThis.addEventListener("popstate", () => start());
    start();
  });
})();
