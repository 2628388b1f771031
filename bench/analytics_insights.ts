/**
 * Load script for the breakdown, comparison, realtime and export targets, against the fixture data
 * set of bench/analytics_queries.ts (10 million events over 90 days):
 *
 *   deno task fixtures --days 90 --events 10000000 --out /tmp/anbench/big2 --end 2026-11-22
 *   deno run -A bench/analytics_insights.ts /tmp/anbench/big2 2026-11-22 [reps]
 *
 * Every request goes through the HTTP app (auth, rate limit, SQL, shaping). "Cold" = a fresh DuckDB
 * instance and `Cache-Control: no-cache`. First, the closed days' visit figures are built, as the
 * service does in the background (`visit_figures_build`: days built and time; 0 days once built). Targets: 30-day breakdown by any dimension cold <= 1 s;
 * compare <= 1.5x the plain rollup; realtime <= 100 ms; CSV export of 1,000,000 log rows >=
 * 200,000 rows/s with RSS growth < 100 MB (served to a client in another process; also measured
 * in-process). EXPORT_SERVED_ONLY=1 skips the in-process export.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { FixedClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import { buildDeps } from "../composition.ts";
import { memoryLogger } from "../core/log.ts";
import { COLUMN_DIMENSIONS } from "../analytics/metrics.ts";
import { createApp } from "../routes/app.ts";
import { startServer } from "../routes/server.ts";
import { ensureFixtureTenant } from "./_analytics_world.ts";

const [dataDir = "/tmp/anbench/big2", end = "2026-11-22", repsArg = "2"] = Deno.args;
const reps = Number(repsArg);
const DAY = 86_400_000;
const endMs = Date.parse(`${end}T00:00:00Z`);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const window30 = `start_date=${day(endMs - 29 * DAY)}&end_date=${end}`;
const window90 = `start_date=${day(endMs - 89 * DAY)}&end_date=${end}`;

const kvDir = await Deno.makeTempDir({ prefix: "anbench-kv-" });
const kv = await Deno.openKv(`${kvDir}/kv.sqlite3`);
// DUCKDB_MEMORY_LIMIT (e.g. 256MB) bounds DuckDB's buffer pool as in production; ONLY=export runs the export
// alone, ONLY=compare the plain and compare rollups alone.
const memoryLimit = Deno.env.get("DUCKDB_MEMORY_LIMIT");
const only = Deno.env.get("ONLY");
const config = parseConfig({
  DATA_DIR: dataDir,
  ANALYTICS_RATE_LIMIT_PER_MIN: "1000000",
  LOG_LEVEL: "error",
  ...(memoryLimit ? { DUCKDB_MEMORY_LIMIT: memoryLimit } : {}),
  // DUCKDB_ALLOCATOR_FLUSH as the service reads it (default 4MB).
  ...(Deno.env.get("DUCKDB_ALLOCATOR_FLUSH")
    ? { DUCKDB_ALLOCATOR_FLUSH: Deno.env.get("DUCKDB_ALLOCATOR_FLUSH")! }
    : {}),
});
// Late on the last day, so the realtime windows hold flushed events.
const clock = new FixedClock(`${end}T23:50:00Z`);
const results: Record<string, number[]> = {};
const note = (name: string, v: number) => (results[name] ??= []).push(v);

async function fresh() {
  const duckdb = await AnalyticsDb.open({
    threads: config.duckdbThreads,
    memoryLimit: config.duckdbMemoryLimit,
    allocatorFlush: config.duckdbAllocatorFlush,
  });
  const deps = buildDeps({ config, kv, duckdb, clock, log: memoryLogger() });
  const key = await ensureFixtureTenant(deps);
  return { duckdb, deps, app: createApp(deps), h: { authorization: `Bearer ${key}`, "cache-control": "no-cache" } };
}

async function timed(
  app: { request: (u: string, i: RequestInit) => Response | Promise<Response> },
  url: string,
  h: Record<string, string>,
) {
  const t = performance.now();
  const res = await app.request(url, { headers: h });
  const text = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text.slice(0, 200)}`);
  return ms;
}

/** Removes the earlier-window memo entries (analytics/window_memo.ts), so compare reads both windows. */
async function clearWindowMemo() {
  for await (const e of kv.list({ prefix: ["an_cache", "tn_fixture", "window-counts"] })) await kv.delete(e.key);
}

const DIMS = ["date&interval=day", "date&interval=hour", ...COLUMN_DIMENSIONS];

// Closed days' visit figures, as the service builds them in the background (analytics/visit_cube.ts);
// a pass over days already built only lists their folders.
let figures: { days_built: number; ms: number } | null = null;
if (only !== "export") {
  const w = await fresh();
  const t = performance.now();
  const built = await w.deps.analyticsVisits.buildClosedDays();
  figures = { days_built: built, ms: +(performance.now() - t).toFixed(0) };
  w.duckdb.close();
}

for (let r = 0; r < (only === "export" ? 0 : reps); r++) {
  // Breakdown, each dimension on a fresh instance (cold).
  for (const d of only === "compare" ? [] : DIMS) {
    const w = await fresh();
    note(
      `breakdown_${d.replace("&interval=", "_")}_30d_cold`,
      await timed(w.app, `/v1/analytics/ask-ai/breakdown?dimension=${d}&${window30}`, w.h),
    );
    w.duckdb.close();
  }
  // Plain rollup against compare, alternating which runs first, each on a fresh instance. compare
  // starts with an empty window memo (both windows in one scan); its warm request and a further
  // fresh instance ("memo_cold") read the earlier window from the memo.
  const order = r % 2 === 0 ? ["plain", "compare"] : ["compare", "plain"];
  for (const which of order) {
    if (which === "compare") await clearWindowMemo();
    const w = await fresh();
    const qs = which === "plain" ? window30 : `${window30}&compare=previous_period`;
    note(`ask_ai_30d_${which}_cold`, await timed(w.app, `/v1/analytics/ask-ai?${qs}`, w.h));
    note(`ask_ai_30d_${which}_warm`, await timed(w.app, `/v1/analytics/ask-ai?${qs}`, w.h));
    w.duckdb.close();
  }
  {
    const w = await fresh();
    note(
      "ask_ai_30d_compare_memo_cold",
      await timed(w.app, `/v1/analytics/ask-ai?${window30}&compare=previous_period`, w.h),
    );
    w.duckdb.close();
  }
}

// Realtime: 400 events waiting in the write-ahead log, then 30 requests (the first on a cold instance).
if (only !== "compare" && only !== "export") {
  const w = await fresh();
  const widget = (await w.deps.repos.widgets.get("wd_fixture"))!;
  const now = clock.now().getTime();
  const batch = Array.from({ length: 400 }, (_, i) => ({
    event_type: i % 4 === 0 ? "query" : "heartbeat",
    session_id: `s_rt_${i % 50}`,
    ts: new Date(now - (i % 20) * 60_000).toISOString(),
    ...(i % 4 === 0 ? { interaction_type: "free_form", prompt: "realtime bench" } : {}),
  }));
  await w.deps.events.ingest(batch, { source: "widget", widget });
  note("realtime_cold", await timed(w.app, "/v1/analytics/realtime", w.h));
  for (let i = 0; i < 30; i++) note("realtime_warm", await timed(w.app, "/v1/analytics/realtime", w.h));
  const body = await (await w.app.request("/v1/analytics/realtime", { headers: w.h })).json();
  console.error("realtime sample", JSON.stringify(body));
  // Leave the fixture data as it was: drop what the bench put in the log.
  for await (const e of kv.list({ prefix: ["ev_wal"] })) await kv.delete(e.key);
  w.duckdb.close();
}

// CSV export of the 90-day logs (about 1 million rows). Served: the app behind routes/server.ts on
// 127.0.0.1, downloaded by a client in another process, so the RSS is the service's alone (what a
// deployment sees); first on a fresh DuckDB instance, then again on the same instance (DuckDB's
// allocator already warm). In-process: `app.request` read in this heap (client and service
// together, and no freeing of sent pieces: the consumer may keep them), on another fresh instance.
const CLIENT = `const [url, auth] = Deno.args;
const res = await fetch(url, { headers: { authorization: auth, accept: "text/csv" } });
let rows = -1;
for await (const c of res.body) for (let i = c.indexOf(10); i >= 0; i = c.indexOf(10, i + 1)) rows++;
console.log(res.status === 200 ? rows : -res.status);`;

async function exportOnce(w: Awaited<ReturnType<typeof fresh>>, served: boolean): Promise<Record<string, number>> {
  const path = `/v1/analytics/ask-ai/logs?${window90}`;
  const server = served ? startServer(w.app.fetch) : null;
  const rssBefore = Deno.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, Deno.memoryUsage().rss)), 20);
  const t = performance.now();
  let rows = -1; // the header line
  if (server) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-check", CLIENT, `${server.url}${path}`, w.h.authorization!],
      stdout: "piped",
    }).output();
    rows = Number(new TextDecoder().decode(out.stdout).trim());
  } else {
    const res = await w.app.request(path, { headers: { ...w.h, accept: "text/csv" } });
    for await (const chunk of res.body!) {
      for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) rows++;
    }
  }
  const s = (performance.now() - t) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, Deno.memoryUsage().rss);
  await server?.shutdown();
  if (!(rows > 0)) throw new Error(`export failed: ${rows}`);
  return {
    rows,
    seconds: +s.toFixed(2),
    rows_per_s: Math.round(rows / s),
    rss_before_mb: Math.round(rssBefore / 1e6),
    rss_peak_mb: Math.round(peak / 1e6),
    rss_growth_mb: Math.round((peak - rssBefore) / 1e6),
  };
}
let exportFigures: Record<string, number> = {};
let exportAgain: Record<string, number> = {};
let exportInProcess: Record<string, number> = {};
if (only !== "compare") {
  const w = await fresh();
  for (const st of (Deno.env.get("EXPORT_SETS") ?? "").split(";").filter(Boolean)) {
    await w.duckdb.withConnection((c) => c.run(st));
  }
  if (Deno.env.get("EXPORT_AFTER_ROLLUP")) {
    // A serving process has answered rollups before its first export: one 90-day ask-ai rollup.
    const r0 = Deno.memoryUsage().rss;
    await (await w.app.request(`/v1/analytics/ask-ai?${window90}`, {
      headers: { ...w.h, "cache-control": "no-cache" },
    }))
      .arrayBuffer();
    console.error("90-day rollup first: rss growth MB", Math.round((Deno.memoryUsage().rss - r0) / 1e6));
  }
  if (Deno.env.get("EXPORT_WARMUP")) {
    const r0 = Deno.memoryUsage().rss;
    await (await w.app.request(`/v1/analytics/ask-ai/logs?start_date=${end}&end_date=${end}`, {
      headers: { ...w.h, accept: "text/csv" },
    })).arrayBuffer();
    console.error("warm-up 1-day export rss growth MB", Math.round((Deno.memoryUsage().rss - r0) / 1e6));
  }
  exportFigures = await exportOnce(w, true);
  exportAgain = await exportOnce(w, true);
  w.duckdb.close();
  if (!Deno.env.get("EXPORT_SERVED_ONLY")) {
    const w2 = await fresh();
    exportInProcess = await exportOnce(w2, false);
    w2.duckdb.close();
  }
}

kv.close();
await Deno.remove(kvDir, { recursive: true });

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return {
    n: s.length,
    min: +s[0]!.toFixed(1),
    p50: +s[Math.floor(s.length / 2)]!.toFixed(1),
    max: +s.at(-1)!.toFixed(1),
  };
};
const ms = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, stats(v)]));
console.log(JSON.stringify(
  {
    window_30d: window30,
    visit_figures_build: figures,
    ms,
    ...(only === "export" ? {} : {
      compare_ratio_cold_p50: +(ms.ask_ai_30d_compare_cold!.p50 / ms.ask_ai_30d_plain_cold!.p50).toFixed(2),
      compare_ratio_warm_p50: +(ms.ask_ai_30d_compare_warm!.p50 / ms.ask_ai_30d_plain_warm!.p50).toFixed(2),
      compare_memo_ratio_cold_p50: +(ms.ask_ai_30d_compare_memo_cold!.p50 / ms.ask_ai_30d_plain_cold!.p50).toFixed(2),
    }),
    export_csv_90d_served: exportFigures,
    export_csv_90d_served_same_instance: exportAgain,
    export_csv_90d_in_process: exportInProcess,
  },
  null,
  2,
));
