/**
 * The analytics figures against an independent definition of what docs/events-and-metrics.md says,
 * written plainly here in SQL over the same Parquet files: a session is a session_id's events of
 * one UTC day split where more than 30 minutes pass between two events (in time order, whatever
 * order they arrived in); a viewable session has at least one MRC-viewable event in the window.
 * Events go in through the widget ingestion path in several arrival orders; every figure of the
 * Ask AI summary and daily rows (events path and visit-figures path), the breakdown by placement,
 * session intelligence and the sponsored rollup is compared, in UTC, America/New_York (-05:00) and Asia/Kathmandu (+05:45).
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;
type Ev = Record<string, unknown> & { ts: string; session_id?: string; event_type: string };

const DAYS = ["2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21"];
const ZONES = ["UTC", "America/New_York", "Asia/Kathmandu"];
const PROMPTS = [
  "Where should I travel this spring?",
  "How is inflation affecting mortgage rates?",
  "Compare electric cars vs hybrids",
  "Who won the football match last night?",
  "Best laptop for students",
];
const SPONSORED = {
  campaign_id: "cp_spring",
  creative_id: "cr_1001",
  line_item_id: "li_7",
  publisher_id: "pub_42",
  ad_partner: "partner_a",
  deployment_type: "sponsored_conversation",
};

/** A small seeded generator (mulberry32), so every run sends the same events. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Sessions around the zones' midnights (05:00 UTC in New York, 18:15 UTC in Kathmandu) and UTC
 * midnight, with gaps of 10 s to 45 min (so some split in two), viewable events under and over the
 * MRC threshold, sponsored conversations (their page sends the campaign values on every event, so
 * the freeze changes nothing) and events without a session.
 */
function generatedEvents(): Ev[] {
  const next = rng(2411);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
  const out: Ev[] = [];
  const anchors = ["04:20", "04:50", "17:40", "18:05", "23:10", "09:30", "13:00"];
  const gapsS = [10, 40, 120, 600, 1200, 1790, 1810, 2700];
  let n = 0;
  for (const day of [...DAYS, "2026-11-22"]) {
    for (const anchor of anchors) {
      for (let k = 0; k < 3; k++) {
        let t = Date.parse(`${day}T${anchor}:00Z`) + Math.floor(next() * 1800) * 1000;
        const sid = `s_${n++}`;
        const sponsored = next() < 0.25;
        const placement = pick(["pl_1", "pl_2"]);
        const count = 3 + Math.floor(next() * 9);
        for (let i = 0; i < count; i++) {
          if (t > Date.parse("2026-11-22T11:59:00Z")) break;
          const type = i === 0 ? "widget_load" : pick([
            "widget_load",
            "widget_viewable",
            "widget_viewable",
            "query",
            "query",
            "heartbeat",
            "heartbeat",
            "click",
            ...(sponsored ? ["sponsored_impression"] : []),
          ]);
          const e: Ev = { event_type: type, ts: iso(t), session_id: sid, placement_id: placement };
          if (sponsored) Object.assign(e, SPONSORED);
          if (type === "widget_viewable") {
            e.in_view_pct = pick([40, 50, 80]);
            e.in_view_ms = pick([900, 1000, 3000]);
          }
          if (type === "query") (e.prompt = pick(PROMPTS), e.interaction_type = "free_form");
          if (type === "click") e.click_type = pick(["article", "cta"]);
          out.push(e);
          t += pick(gapsS) * 1000;
        }
      }
    }
    // A load and a query without a session.
    out.push({ event_type: "widget_load", ts: `${day}T05:05:00Z`, placement_id: "pl_1" });
    out.push({ event_type: "query", ts: `${day}T07:00:00Z`, prompt: pick(PROMPTS), interaction_type: "search" });
  }
  return out;
}

/**
 * Findings 8 and 9 by hand: a session viewable before New York's and Kathmandu's midnight and again
 * after it; a 45-minute gap that a late event fills (one visit); an event 60 minutes before a
 * session's first event (its own visit).
 */
function edgeEvents(): Ev[] {
  const viewable = { event_type: "widget_viewable", in_view_pct: 90, in_view_ms: 2000 };
  const e = (session_id: string, ts: string, x: Record<string, unknown>): Ev =>
    ({ session_id, ts, placement_id: "pl_1", event_type: "heartbeat", ...x }) as Ev;
  return [
    e("s_ny", "2026-11-20T04:40:00Z", { event_type: "widget_load" }),
    e("s_ny", "2026-11-20T04:41:00Z", viewable),
    e("s_ny", "2026-11-20T04:55:00Z", {}),
    e("s_ny", "2026-11-20T05:05:00Z", { event_type: "query", prompt: PROMPTS[0], interaction_type: "free_form" }),
    e("s_ny", "2026-11-20T05:10:00Z", viewable),
    e("s_ktm", "2026-11-19T18:00:00Z", { event_type: "widget_load" }),
    e("s_ktm", "2026-11-19T18:01:00Z", viewable),
    e("s_ktm", "2026-11-19T18:20:00Z", viewable),
    e("s_ktm", "2026-11-19T18:21:00Z", { event_type: "query", prompt: PROMPTS[1], interaction_type: "free_form" }),
    e("s_gap", "2026-11-21T10:00:00Z", { event_type: "widget_load" }),
    e("s_gap", "2026-11-21T10:45:00Z", { event_type: "query", prompt: PROMPTS[2], interaction_type: "free_form" }),
    e("s_gap", "2026-11-21T10:20:00Z", {}), // late: fills the 45-minute gap
    e("s_early", "2026-11-20T14:00:00Z", { event_type: "widget_load" }),
    e("s_early", "2026-11-20T14:10:00Z", { event_type: "query", prompt: PROMPTS[3], interaction_type: "free_form" }),
    e("s_early", "2026-11-20T13:00:00Z", { event_type: "widget_load" }), // late: 60 min before
  ];
}

/** Sends `batches` through the widget path, flushes, and points the engine at the files. */
async function ingest(world: World, batches: Ev[][]) {
  const { deps } = world.w;
  const widget = (await deps.repos.widgets.get("wd_main"))!;
  for (const b of batches) await deps.events.ingest(b, { source: "widget", widget });
  await deps.events.flush();
  deps.analytics.refresh();
}

const chunks = <T>(xs: T[], size: number) =>
  Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));
const byTime = (xs: Ev[]) => [...xs].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
function shuffled(xs: Ev[], seed: number): Ev[] {
  const next = rng(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

// ---- The independent definition -------------------------------------------------------------

// One formatter per zone (building one per event was a large part of the expectations' cost).
const wallFormats = new Map<string, Intl.DateTimeFormat>();
function wallFormat(tz: string): Intl.DateTimeFormat {
  let f = wallFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    wallFormats.set(tz, f);
  }
  return f;
}

/** UTC offset (ms) of `tz` at instant `ms`, from Intl. */
function offsetMs(tz: string, ms: number): number {
  const p = Object.fromEntries(wallFormat(tz).formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return Date.UTC(+p.year!, +p.month! - 1, +p.day!, +p.hour!, +p.minute!, +p.second!) - ms;
}
/** The instant of local midnight starting `day` in `tz`. */
function localMidnight(day: string, tz: string): number {
  const wall = Date.parse(`${day}T00:00:00Z`);
  let ms = wall - offsetMs(tz, wall);
  ms = wall - offsetMs(tz, ms);
  return ms;
}
const localDay = (ms: number, tz: string) => iso(ms + offsetMs(tz, ms)).slice(0, 10);
const pct = (n: number, d: number) => d === 0 ? 0 : Math.round((n * 10_000) / d) / 100;
const ratio2 = (n: number, d: number) => d === 0 ? 0 : Math.round((n * 100) / d) / 100;
const avgInt = (n: number, d: number) => d === 0 ? 0 : Math.round(n / d);
const sqlTs = (ms: number) => `TIMESTAMP '${iso(ms).replace("T", " ").replace("Z", "")}'`;

interface Filters {
  deployment_type?: string;
  placement_id?: string;
}

/**
 * Every tenant event with its session (session_id, UTC day, number in time order) and MRC flag, as
 * a table the expectations read: built from the Parquet files once per comparison
 * ({@link assertExact}) rather than once per expected figure.
 */
async function materialiseVisits(world: World): Promise<void> {
  const files = `${world.w.deps.analytics.eventsDir}/date=*/*.parquet`;
  await world.w.deps.duckdb.withConnection((c) =>
    c.run(`
    CREATE OR REPLACE TABLE exact_visits AS
    WITH e AS (
      SELECT *, CAST(ts AS DATE) AS utc_day,
        event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000 AS mrc
      FROM read_parquet('${files}', hive_partitioning = true, union_by_name = true)
      WHERE tenant_id = '${world.tenantId}'
    ),
    ordered AS (
      SELECT *, lag(ts) OVER (PARTITION BY session_id, utc_day ORDER BY ts) AS prev_ts FROM e
    )
    SELECT *,
      CASE WHEN session_id IS NOT NULL THEN session_id || '/' || utc_day || '/' || sum(
        CASE WHEN prev_ts IS NULL OR ts - prev_ts > INTERVAL 30 MINUTE THEN 1 ELSE 0 END
      ) OVER (PARTITION BY session_id, utc_day ORDER BY ts ROWS UNBOUNDED PRECEDING) END AS visit
    FROM ordered`)
  );
}

/** The visits table ({@link materialiseVisits}) with each event's window and block flags. */
function sessionsSql(startMs: number, endMs: number, f: Filters): string {
  const cond = [
    f.deployment_type ? `deployment_type = '${f.deployment_type}'` : "true",
    f.placement_id ? `placement_id = '${f.placement_id}'` : "true",
  ].join(" AND ");
  return `
    SELECT *, ts >= ${sqlTs(startMs)} AND ts < ${sqlTs(endMs)} AS in_window,
      ts >= ${sqlTs(startMs)} AND ts < ${sqlTs(endMs)} AND ${cond} AS blk
    FROM exact_visits`;
}

async function rowsOf(world: World, sql: string): Promise<Record<string, unknown>[]> {
  return await world.w.deps.duckdb.withConnection(async (c) => (await c.runAndReadAll(sql)).getRowObjectsJS());
}
const msOf = (v: unknown) => (v instanceof Date ? v.getTime() : Date.parse(String(v).replace(" ", "T") + "Z"));
const n = (v: unknown) => Number(v ?? 0);

/** What docs/events-and-metrics.md says GET /v1/analytics/ask-ai answers. */
async function expectedAskAi(world: World, from: string, to: string, tz: string, f: Filters) {
  const start = localMidnight(from, tz);
  const end = localMidnight(iso(Date.parse(`${to}T00:00:00Z`) + 86_400_000).slice(0, 10), tz);
  const base = sessionsSql(start, end, f);
  // Sessions with a block event: their loads and viewability from their events in the window.
  const sessions = await rowsOf(
    world,
    `WITH x AS (${base})
     SELECT visit, min(ts) FILTER (WHERE blk) AS first_ts,
       count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
       bool_or(mrc) AS viewable,
       count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
       count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
       count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
       count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
       count(*) FILTER (WHERE blk AND event_type = 'heartbeat') AS heartbeats
     FROM x WHERE in_window AND visit IS NOT NULL GROUP BY visit HAVING bool_or(blk)`,
  );
  const loose = await rowsOf(
    world,
    `WITH x AS (${base}) SELECT ts, event_type, click_type FROM x WHERE blk AND visit IS NULL`,
  );
  const days = new Map<string, Record<string, number>>();
  const zero = () => ({
    widget_loads: 0,
    viewable_sessions: 0,
    engagement_queries: 0,
    total_clicks: 0,
    article_clicks: 0,
    cta_clicks: 0,
    sessions: 0,
    engaged: 0,
    heartbeats: 0,
  });
  const dayOf = (ms: number) => {
    const d = localDay(ms, tz);
    if (!days.has(d)) days.set(d, zero());
    return days.get(d)!;
  };
  for (const s of sessions) {
    const d = dayOf(msOf(s.first_ts));
    d.sessions++;
    d.widget_loads += n(s.loads);
    d.viewable_sessions += s.viewable ? 1 : 0;
    d.engagement_queries += n(s.queries);
    d.total_clicks += n(s.clicks);
    d.article_clicks += n(s.article_clicks);
    d.cta_clicks += n(s.cta_clicks);
    d.heartbeats += n(s.heartbeats);
    d.engaged += n(s.queries) > 0 ? 1 : 0;
  }
  for (const e of loose) {
    const d = dayOf(msOf(e.ts));
    if (e.event_type === "widget_load") d.widget_loads++;
    if (e.event_type === "query") d.engagement_queries++;
    if (e.event_type === "click") {
      d.total_clicks++;
      if (e.click_type === "article") d.article_clicks++;
      if (e.click_type === "cta") d.cta_clicks++;
    }
  }
  const t = zero();
  for (const d of days.values()) for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += d[k]!;
  const daily = [...days].filter(([, d]) => d.sessions + d.widget_loads + d.engagement_queries + d.total_clicks > 0)
    .sort().map(([date, d]) => ({
      date,
      widget_loads: d.widget_loads,
      viewable_sessions: d.viewable_sessions,
      engagement_queries: d.engagement_queries,
      total_clicks: d.total_clicks,
      sessions: d.sessions,
    }));
  return {
    daily,
    summary: {
      widget_loads: t.widget_loads,
      viewable_sessions: t.viewable_sessions,
      engagement_queries: t.engagement_queries,
      total_clicks: t.total_clicks,
      article_clicks: t.article_clicks,
      cta_clicks: t.cta_clicks,
      sessions: t.sessions,
      total_session_time_seconds: 5 * t.heartbeats,
      avg_session_duration_seconds: avgInt(5 * t.heartbeats, t.sessions),
      viewability_rate: pct(t.viewable_sessions, t.sessions),
      engagement_rate: pct(t.engagement_queries, t.widget_loads),
      engagement_session_rate: pct(t.engaged, t.sessions),
      query_to_click_rate: pct(t.total_clicks, t.engagement_queries),
    },
  };
}

/**
 * What the docs say the breakdown by placement answers: a session counts once in every placement
 * it has block events in, with its loads and viewability from its events in the window.
 */
async function expectedByPlacement(world: World, from: string, to: string, tz: string) {
  const start = localMidnight(from, tz);
  const end = localMidnight(iso(Date.parse(`${to}T00:00:00Z`) + 86_400_000).slice(0, 10), tz);
  const rows = await rowsOf(
    world,
    `WITH x AS (${sessionsSql(start, end, {})}),
     s AS (
       SELECT visit, count(*) FILTER (WHERE event_type = 'widget_load') AS loads, bool_or(mrc) AS viewable
       FROM x WHERE in_window AND visit IS NOT NULL GROUP BY visit
     ),
     k AS (
       SELECT DISTINCT placement_id AS k, visit FROM x WHERE blk AND visit IS NOT NULL AND placement_id IS NOT NULL
     ),
     per_k AS (
       SELECT k.k, count(*) AS sessions, sum(s.loads) AS loads, count(*) FILTER (WHERE s.viewable) AS viewable
       FROM k JOIN s USING (visit) GROUP BY k.k
     ),
     events_k AS (
       SELECT placement_id AS k,
         count(*) FILTER (WHERE event_type = 'query') AS queries,
         count(*) FILTER (WHERE event_type = 'widget_load' AND visit IS NULL) AS loose_loads
       FROM x WHERE blk AND placement_id IS NOT NULL GROUP BY 1
     )
     SELECT k, coalesce(sessions, 0) AS sessions, coalesce(loads, 0) + loose_loads AS widget_loads,
       coalesce(viewable, 0) AS viewable_sessions, queries AS engagement_queries
     FROM events_k LEFT JOIN per_k USING (k) ORDER BY k`,
  );
  return rows.map((r) => ({
    key: String(r.k),
    sessions: n(r.sessions),
    widget_loads: n(r.widget_loads),
    viewable_sessions: n(r.viewable_sessions),
    engagement_queries: n(r.engagement_queries),
  }));
}

/** What the docs say session intelligence answers (its counting blocks). */
async function expectedSessionIntelligence(world: World, from: string, to: string, tz: string) {
  const start = localMidnight(from, tz);
  const end = localMidnight(iso(Date.parse(`${to}T00:00:00Z`) + 86_400_000).slice(0, 10), tz);
  const rows = await rowsOf(
    world,
    `WITH x AS (${sessionsSql(start, end, {})})
     SELECT visit, count(*) FILTER (WHERE event_type = 'query') AS queries,
       count(*) FILTER (WHERE event_type = 'heartbeat') AS heartbeats,
       arg_min(intent_type, ts) FILTER (WHERE event_type = 'query') AS intent
     FROM x WHERE blk AND visit IS NOT NULL GROUP BY visit HAVING count(*) FILTER (WHERE event_type = 'query') > 0`,
  );
  const queries = rows.map((r) => n(r.queries));
  const seconds = rows.map((r) => 5 * n(r.heartbeats)).sort((a, b) => a - b);
  const mid = seconds.length / 2;
  const median = seconds.length === 0
    ? 0
    : seconds.length % 2
    ? seconds[Math.floor(mid)]!
    : Math.round((seconds[mid - 1]! + seconds[mid]!) / 2);
  const intents: Record<string, number> = {};
  for (const r of rows) intents[String(r.intent ?? "other")] = (intents[String(r.intent ?? "other")] ?? 0) + 1;
  const bucket = (q: number) => q <= 5 ? String(q) : q <= 10 ? "6-10" : "10+";
  const depth: Record<string, number> = {};
  for (const q of queries) depth[bucket(q)] = (depth[bucket(q)] ?? 0) + 1;
  const categories = Object.fromEntries(
    (await rowsOf(
      world,
      `WITH x AS (${sessionsSql(start, end, {})})
       SELECT coalesce(category, 'general') AS k, count(*) AS n FROM x
       WHERE blk AND visit IS NOT NULL AND event_type = 'query' GROUP BY 1`,
    )).map((r) => [String(r.k), n(r.n)]),
  );
  return {
    total_engaged_sessions: rows.length,
    total_queries: queries.reduce((a, b) => a + b, 0),
    sessions_with_2_plus_queries: queries.filter((q) => q >= 2).length,
    single_query_sessions: queries.filter((q) => q === 1).length,
    max_queries_in_session: Math.max(0, ...queries),
    total_session_time_seconds: seconds.reduce((a, b) => a + b, 0),
    median_engagement_time_per_session_seconds: median,
    intents,
    depth,
    categories,
  };
}

/**
 * What the docs say the sponsored rollup answers: conversations started (counted at their first
 * impression) and counts.
 */
async function expectedSponsored(world: World, from: string, to: string, tz: string) {
  const start = localMidnight(from, tz);
  const end = localMidnight(iso(Date.parse(`${to}T00:00:00Z`) + 86_400_000).slice(0, 10), tz);
  const [r] = await rowsOf(
    world,
    `WITH x AS (${sessionsSql(start, end, {})}),
     -- Conversations: a session_id's events of the campaign with no gap over 30 minutes (over midnight too).
     conv AS (
       SELECT *, sum(CASE WHEN prev IS NULL OR ts - prev > INTERVAL 30 MINUTE THEN 1 ELSE 0 END)
         OVER (PARTITION BY session_id ORDER BY ts ROWS UNBOUNDED PRECEDING) AS n
       FROM (
         SELECT session_id, ts, event_type, lag(ts) OVER (PARTITION BY session_id ORDER BY ts) AS prev
         FROM x WHERE campaign_id = 'cp_spring' AND session_id IS NOT NULL
       )
     ),
     firsts AS (
       SELECT min(ts) FILTER (WHERE event_type = 'sponsored_impression') AS ts FROM conv GROUP BY session_id, n
     )
     SELECT
       (SELECT count(*) FROM firsts WHERE ts >= ${sqlTs(start)} AND ts < ${sqlTs(end)}) AS sessions,
       count(*) FILTER (WHERE event_type = 'sponsored_impression') AS impressions,
       count(*) FILTER (WHERE event_type = 'query') AS queries,
       count(*) FILTER (WHERE event_type = 'click') AS total_clicks,
       count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article') AS article_clicks,
       count(*) FILTER (WHERE event_type = 'click' AND click_type = 'cta') AS cta_clicks,
       count(*) FILTER (WHERE event_type = 'heartbeat' AND session_id IS NOT NULL) AS heartbeats
     FROM x WHERE in_window AND campaign_id = 'cp_spring'`,
  );
  const events = await rowsOf(
    world,
    `WITH x AS (${sessionsSql(start, end, {})})
     SELECT ts, event_type FROM x WHERE in_window AND campaign_id = 'cp_spring'`,
  );
  const days = new Map<string, { queries: number; impressions: number; clicks: number }>();
  for (const e of events) {
    const d = localDay(msOf(e.ts), tz);
    const c = days.get(d) ?? { queries: 0, impressions: 0, clicks: 0 };
    if (e.event_type === "query") c.queries++;
    if (e.event_type === "sponsored_impression") c.impressions++;
    if (e.event_type === "click") c.clicks++;
    days.set(d, c);
  }
  const t = {
    impressions: n(r!.impressions),
    queries: n(r!.queries),
    sessions: n(r!.sessions),
    clicks: n(r!.total_clicks),
    heartbeats: n(r!.heartbeats),
  };
  return {
    summary: {
      impressions: t.impressions,
      queries: t.queries,
      sessions: t.sessions,
      avg_session_duration_seconds: avgInt(5 * t.heartbeats, t.sessions),
      total_clicks: t.clicks,
      article_clicks: n(r!.article_clicks),
      cta_clicks: n(r!.cta_clicks),
      engagement_rate: pct(t.queries, t.impressions),
      conversion_rate: pct(t.clicks, t.impressions),
      avg_queries_per_session: ratio2(t.queries, t.sessions),
    },
    daily: [...days].filter(([, c]) => c.queries + c.clicks + c.impressions > 0).sort().map(([date, c]) => ({
      date,
      queries: c.queries,
      engagement_rate: pct(c.queries, c.impressions),
      total_clicks: c.clicks,
    })),
  };
}

// ---- The service's answers ------------------------------------------------------------------

async function get(world: World, path: string) {
  const res = await world.w.app.request(path, { headers: { ...bearer(world.key), "cache-control": "no-cache" } });
  assert.equal(res.status, 200, path);
  return await res.json();
}

const FROM = "2026-11-20";
const TO = "2026-11-21";
const CASES: [string, Filters][] = [
  ...ZONES.map((tz) => [tz, {}] as [string, Filters]),
  ["America/New_York", { deployment_type: "sponsored_conversation" }],
  ["Asia/Kathmandu", { placement_id: "pl_2" }],
];

/** Ask AI figures, events path: the rollup of every case (no figure files yet). */
async function askAiFigures(world: World) {
  const out = [];
  for (const [tz, f] of CASES) {
    const q = new URLSearchParams({ start_date: FROM, end_date: TO, timezone: tz, ...f });
    const body = await get(world, `/v1/analytics/ask-ai?${q}`);
    out.push({
      daily: body.daily_breakdown.filter((d: Record<string, number>) =>
        d.sessions + d.widget_loads + d.engagement_queries + d.total_clicks > 0
      ),
      summary: body.summary,
    });
  }
  return out;
}

/** Compares every figure with the independent definition, on both paths. */
async function assertExact(world: World, label: string) {
  await materialiseVisits(world);
  const expected: Awaited<ReturnType<typeof expectedAskAi>>[] = [];
  for (const [tz, f] of CASES) expected.push(await expectedAskAi(world, FROM, TO, tz, f));
  assert.ok(expected[0]!.summary.sessions > 50 && expected[0]!.summary.viewable_sessions > 5, "the data has sessions");
  const fromEvents = await askAiFigures(world);
  CASES.forEach(([tz, f], i) =>
    assert.deepEqual(fromEvents[i], expected[i], `${label}: ask-ai from events, ${tz} ${JSON.stringify(f)}`)
  );
  // The same from the closed days' visit figures (2026-11-22, today, is still read from events).
  assert.equal(await world.w.deps.analyticsVisits.buildClosedDays(), 4);
  const fromFigures = await askAiFigures(world);
  CASES.forEach(([tz, f], i) =>
    assert.deepEqual(fromFigures[i], expected[i], `${label}: ask-ai from visit figures, ${tz} ${JSON.stringify(f)}`)
  );

  for (const tz of ZONES) {
    const q = new URLSearchParams({ start_date: FROM, end_date: TO, timezone: tz });
    const byPlacement = await get(world, `/v1/analytics/ask-ai/breakdown?dimension=placement_id&sort=key&${q}`);
    assert.deepEqual(
      byPlacement.rows.filter((r: { key: string | null }) => r.key !== null).map((
        r: Record<string, number | string>,
      ) => ({
        key: r.key,
        sessions: r.sessions,
        widget_loads: r.widget_loads,
        viewable_sessions: r.viewable_sessions,
        engagement_queries: r.engagement_queries,
      })).sort((a: { key: string }, b: { key: string }) => a.key < b.key ? -1 : 1),
      await expectedByPlacement(world, FROM, TO, tz),
      `${label}: breakdown by placement, ${tz}`,
    );
    const si = (await get(world, `/v1/analytics/session-intelligence?${q}`)).session_intelligence;
    const want = await expectedSessionIntelligence(world, FROM, TO, tz);
    assert.deepEqual(
      {
        total_engaged_sessions: si.summary.total_engaged_sessions,
        total_queries: si.summary.total_queries,
        sessions_with_2_plus_queries: si.summary.sessions_with_2_plus_queries,
        single_query_sessions: si.summary.single_query_sessions,
        max_queries_in_session: si.summary.max_queries_in_session,
        total_session_time_seconds: si.engagement_time.total_session_time_seconds,
        median_engagement_time_per_session_seconds: si.engagement_time.median_engagement_time_per_session_seconds,
        intents: Object.fromEntries(
          si.intent_breakdown.map((r: { intent_type: string; sessions: number }) => [r.intent_type, r.sessions]),
        ),
        depth: Object.fromEntries(
          si.session_engagement_distribution.filter((r: { sessions: number }) => r.sessions > 0).map((
            r: { query_depth: string; sessions: number },
          ) => [r.query_depth, r.sessions]),
        ),
        categories: Object.fromEntries(
          si.category_distribution.map((r: { category: string; count: number }) => [r.category, r.count]),
        ),
      },
      want,
      `${label}: session intelligence, ${tz}`,
    );

    const sp = await get(world, `/v1/analytics/sponsored-conversations?${q}`);
    const sw = await expectedSponsored(world, FROM, TO, tz);
    assert.ok(sw.summary.sessions > 0, "the data has sponsored conversations");
    assert.deepEqual(
      {
        summary: sp.summary,
        daily: sp.daily_breakdown.filter((d: { queries: number; total_clicks: number; engagement_rate: number }) =>
          d.queries + d.total_clicks + d.engagement_rate > 0
        ),
      },
      sw,
      `${label}: sponsored, ${tz}`,
    );
  }
  return fromEvents;
}

Deno.test("analytics: a session viewable before a window's start counts as viewable when a viewable event is inside (New York, Kathmandu, both paths)", async () => {
  await using world = await analyticsWorld();
  await ingest(world, chunks(byTime([...generatedEvents(), ...edgeEvents()]), 100));
  // The window starts at New York's and Kathmandu's midnight of 2026-11-20: s_ny and s_ktm (and
  // generated sessions) were viewable before it and again inside it.
  await assertExact(world, "in time order");
});

Deno.test("analytics: sessions come out the same whatever order the events arrive in (shuffled batches, both paths)", async () => {
  const all = [...generatedEvents(), ...edgeEvents()];
  const orders: [string, Ev[][]][] = [
    ["reverse time order, batches of 7", chunks(byTime(all).reverse(), 7)],
    ["shuffled, batches of 13", chunks(shuffled(all, 1), 13)],
    ["shuffled, batches of 250", chunks(shuffled(all, 2), 250)],
  ];
  let first: unknown = null;
  for (const [label, batches] of orders) {
    await using world = await analyticsWorld();
    await ingest(world, batches);
    const figures = await assertExact(world, label);
    first ??= figures;
    assert.deepEqual(figures, first, `${label}: the same figures as the first order`);
  }
});

Deno.test("analytics: a late event filling a 45-minute gap joins one session; one 60 minutes early starts its own", async () => {
  await using world = await analyticsWorld();
  const edge = edgeEvents();
  const late = edge.filter((e) => e.ts === "2026-11-21T10:20:00Z" || e.ts === "2026-11-20T13:00:00Z");
  await ingest(world, [edge.filter((e) => !late.includes(e)), late]);
  const days = async () =>
    (await get(world, "/v1/analytics/ask-ai?start_date=2026-11-20&end_date=2026-11-21&timezone=UTC")).daily_breakdown
      .map((d: Record<string, number>) => [d.sessions, d.widget_loads]);
  // 2026-11-20: s_ny, and s_early twice (13:00 alone, then 14:00 and 14:10); 2026-11-21: s_gap
  // once (10:00, 10:20, 10:45).
  assert.deepEqual(await days(), [[3, 3], [1, 1]]);
  await world.w.deps.analyticsVisits.buildClosedDays();
  assert.deepEqual(await days(), [[3, 3], [1, 1]]);
});

/** The ingestion flags of every stored session event: how many carry `visit_late`, how many not. */
async function lateCounts(world: World) {
  const files = `${world.w.deps.analytics.eventsDir}/date=*/*.parquet`;
  const [r] = await rowsOf(
    world,
    `SELECT count(*) FILTER (WHERE visit_late) AS late, count(*) FILTER (WHERE NOT visit_late) AS kept
     FROM read_parquet('${files}', hive_partitioning = true, union_by_name = true) WHERE session_id IS NOT NULL`,
  );
  return { late: n(r!.late), kept: n(r!.kept) };
}

/** Sends batches at once with the clock at `atMs` (events arriving live), then puts the clock back. */
async function ingestAt(world: World, atMs: number, ...batches: Ev[][]) {
  const { deps } = world.w;
  const widget = (await deps.repos.widgets.get("wd_main"))!;
  const was = world.w.clock.now();
  world.w.clock.set(atMs);
  try {
    await Promise.all(batches.map((b) => deps.events.ingest(b, { source: "widget", widget })));
  } finally {
    world.w.clock.set(was);
  }
}

Deno.test("analytics: events arriving live keep their ingestion visits; late ones, one after its session state expired and racing batches are derived again (both paths)", async () => {
  await using world = await analyticsWorld();
  const edge = edgeEvents();
  const heldBack = new Set(["2026-11-21T10:20:00Z", "2026-11-20T13:00:00Z"]);
  const live = byTime([...generatedEvents(), ...edge.filter((e) => !heldBack.has(e.ts))]);
  // Live: each batch of 5 arrives 2 s after its last event.
  for (const b of chunks(live, 5)) await ingestAt(world, Date.parse(b.at(-1)!.ts) + 2000, b);
  // Late by minutes, with the session state still there: fills s_gap's 45-minute gap, and an event
  // 60 minutes before s_early's first.
  for (const e of edge.filter((x) => heldBack.has(x.ts))) await ingestAt(world, Date.parse(e.ts) + 3 * 3600_000, [e]);
  // Late after the session state expired (KV's expireIn, here by deleting the states): s_exp had two
  // visits on 2026-11-20 (10:00, 10:10 | 10:50); 10:30 arrives two days later and makes them one, and
  // 10:35, sent after it, finds the state that 10:30 created.
  const exp = (ts: string, x: Record<string, unknown> = {}): Ev =>
    ({ session_id: "s_exp", ts, placement_id: "pl_1", event_type: "heartbeat", ...x }) as Ev;
  await ingestAt(world, Date.parse("2026-11-20T10:11:00Z"), [
    exp("2026-11-20T10:00:00Z", { event_type: "widget_load" }),
    exp("2026-11-20T10:10:00Z"),
  ]);
  await ingestAt(world, Date.parse("2026-11-20T10:51:00Z"), [
    exp("2026-11-20T10:50:00Z", { event_type: "widget_load" }),
  ]);
  // s_cut around New York's midnight (05:00 UTC): 04:30 | 05:20 live; after the state expired, 04:50
  // (its own visit) and then 05:10, which joins 04:50's state. New York's window from 05:00 holds
  // 05:10 and 05:20, one visit: 05:10 must carry the flag that 04:50 left in the state.
  const cut = (ts: string): Ev => ({ session_id: "s_cut", ts, placement_id: "pl_1", event_type: "widget_load" });
  await ingestAt(world, Date.parse("2026-11-20T04:31:00Z"), [cut("2026-11-20T04:30:00Z")]);
  await ingestAt(world, Date.parse("2026-11-20T05:21:00Z"), [cut("2026-11-20T05:20:00Z")]);
  // s_mid: a sponsored conversation over UTC midnight whose after-midnight impression arrives three hours
  // late, when the day before's state is gone: one conversation, not two.
  const mid = (ts: string): Ev =>
    ({ session_id: "s_mid", ts, placement_id: "pl_1", event_type: "sponsored_impression", ...SPONSORED }) as Ev;
  await ingestAt(world, Date.parse("2026-11-20T23:51:00Z"), [mid("2026-11-20T23:50:00Z")]);
  for await (const x of world.w.deps.kv.list({ prefix: ["ev_session"] })) await world.w.deps.kv.delete(x.key);
  await ingestAt(world, Date.parse("2026-11-21T03:00:00Z"), [mid("2026-11-21T00:10:00Z")]);
  await ingestAt(world, Date.parse("2026-11-22T09:00:00Z"), [exp("2026-11-20T10:30:00Z")]);
  await ingestAt(world, Date.parse("2026-11-22T09:01:00Z"), [exp("2026-11-20T10:35:00Z")]);
  await ingestAt(world, Date.parse("2026-11-22T09:02:00Z"), [cut("2026-11-20T04:50:00Z")]);
  await ingestAt(world, Date.parse("2026-11-22T09:03:00Z"), [cut("2026-11-20T05:10:00Z")]);
  // Two batches of one session at once (s_race, 10 minutes apart): the second to commit reads again.
  const race = (ts: string) => [{ session_id: "s_race", ts, placement_id: "pl_2", event_type: "widget_load" }] as Ev[];
  await ingestAt(world, Date.parse("2026-11-21T15:11:00Z"), race("2026-11-21T15:00:00Z"), race("2026-11-21T15:10:00Z"));
  await world.w.deps.events.flush();
  world.w.deps.analytics.refresh();

  const counts = await lateCounts(world);
  assert.ok(counts.kept > 10 * counts.late, `most events keep their ingestion visit: ${JSON.stringify(counts)}`);
  assert.ok(counts.late >= 4, `the late events are flagged: ${JSON.stringify(counts)}`);
  await assertExact(world, "live arrivals with late events");
});

Deno.test("analytics: a retried batch's copies (stamped on arrival, stored once) neither stretch a visit nor start one (events and visit-figures paths)", async () => {
  await using world = await analyticsWorld();
  const ev = (id: string, ts: string, x: Record<string, unknown> = {}): Ev =>
    ({ event_id: id, session_id: "s_retry", ts, placement_id: "pl_1", event_type: "widget_load", ...x }) as Ev;
  const load = ev("ev_retry_load_01", "2026-11-20T10:00:00Z");
  await ingestAt(world, Date.parse("2026-11-20T10:00:01Z"), [load]);
  // Its answer lost, the widget sends the batch again two minutes on, stamped on arrival: the flush
  // keeps the first copy. Stored: a load at 10:00 and a click at 10:31, two sessions (31 minutes apart).
  await ingestAt(world, Date.parse("2026-11-20T10:02:01Z"), [{ ...load, ts: "2026-11-20T10:02:00Z" }]);
  await ingestAt(world, Date.parse("2026-11-20T10:31:01Z"), [
    ev("ev_retry_click_1", "2026-11-20T10:31:00Z", { event_type: "click", click_type: "article" }),
  ]);
  // And a heartbeat sent again 25 minutes on (kept by a page asleep) makes no visit of its own either.
  await ingestAt(world, Date.parse("2026-11-20T10:31:02Z"), [
    ev("ev_retry_beat_01", "2026-11-20T10:31:02Z", { event_type: "heartbeat" }),
  ]);
  await ingestAt(world, Date.parse("2026-11-20T10:56:01Z"), [
    ev("ev_retry_beat_01", "2026-11-20T10:56:00Z", { event_type: "heartbeat" }),
  ]);
  await ingestAt(world, Date.parse("2026-11-20T11:20:01Z"), [
    ev("ev_retry_click_2", "2026-11-20T11:20:00Z", { event_type: "click", click_type: "article" }),
  ]);
  await world.w.deps.events.flush();
  const q = "start_date=2026-11-20&end_date=2026-11-20&timezone=UTC";
  const summary = (await get(world, `/v1/analytics/ask-ai?${q}`)).summary;
  // 10:00 | 10:31, 10:31:02 | 11:20 (49 minutes after the heartbeat stored): three sessions.
  assert.deepEqual([summary.sessions, summary.widget_loads, summary.total_clicks], [3, 1, 2]);
  assert.equal((await lateCounts(world)).late, 0, "live events: the ingestion visits are the figures");
  await world.w.deps.analyticsVisits.buildClosedDays();
  const built = (await get(world, `/v1/analytics/ask-ai?${q}`)).summary;
  assert.deepEqual([built.sessions, built.widget_loads, built.total_clicks], [3, 1, 2]);
});

Deno.test("analytics: live batches sent again minutes later, stamped on arrival, give the figures of the events stored (both paths)", async () => {
  await using world = await analyticsWorld();
  const next = rng(97);
  const live = byTime([...generatedEvents(), ...edgeEvents()]).map((e, i) => ({ ...e, event_id: `ev_live_${i}` }));
  for (const b of chunks(live, 5)) {
    const at = Date.parse(b.at(-1)!.ts) + 2000;
    await ingestAt(world, at, b);
    // A batch whose answer was lost goes again 1 to 4 minutes on; the widget sends no time, so each
    // copy is stamped on arrival. The flush stores the first copies.
    if (next() < 0.2) {
      const again = at + 60_000 + Math.floor(next() * 180_000);
      await ingestAt(world, again, b.map((e) => ({ ...e, ts: new Date(again).toISOString() })));
    }
  }
  await world.w.deps.events.flush();
  world.w.deps.analytics.refresh();
  await assertExact(world, "live, with batches sent again");
  // Arriving in time order, each visit's stored questions are numbered 1, 2, 3, ... in time order.
  const files = `${world.w.deps.analytics.eventsDir}/date=*/*.parquet`;
  const numbered = await rowsOf(
    world,
    `SELECT list(visit_query_no ORDER BY ts, event_id)::VARCHAR AS nos FROM read_parquet('${files}', hive_partitioning = true)
     WHERE event_type = 'query' AND visit_id IS NOT NULL GROUP BY visit_id`,
  );
  assert.ok(numbered.length > 10, "the data has visits with questions");
  for (const { nos } of numbered) {
    const got = JSON.parse(String(nos)) as number[];
    assert.deepEqual(got, got.map((_, i) => i + 1));
  }
});
