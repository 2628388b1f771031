/**
 * Load script for the analytics query targets, run against a fixture data set:
 *
 *   deno task fixtures --days 90 --events 10000000 --out /tmp/anbench/big --end 2026-11-21
 *   deno run -A bench/analytics_queries.ts /tmp/anbench/big 2026-11-21 [reps]
 *
 * "Cold" = a fresh DuckDB instance (no Parquet metadata cached) and `Cache-Control: no-cache`, timed
 * through the HTTP app (auth, rate limit, SQL, shaping, JSON). "Cached" = an X-Cache HIT from KV.
 * Targets: 30-day ask-ai <= 1 s cold, session intelligence <= 1.5 s cold, cached <= 5 ms.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { FixedClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import { buildDeps } from "../composition.ts";
import { memoryLogger } from "../core/log.ts";
import { createApp } from "../routes/app.ts";
import { ensureFixtureTenant } from "./_analytics_world.ts";

const [dataDir = "/tmp/anbench/big", end = "2026-11-22", repsArg = "3"] = Deno.args;
const reps = Number(repsArg);
const endMs = Date.parse(`${end}T00:00:00Z`);
const start = new Date(endMs - 29 * 86_400_000).toISOString().slice(0, 10);
const window = `start_date=${start}&end_date=${end}`;

// A KV file, as in production (cache reads, key lookups and rate-limit commits hit SQLite).
const kvDir = await Deno.makeTempDir({ prefix: "anbench-kv-" });
const kv = await Deno.openKv(`${kvDir}/kv.sqlite3`);
const config = parseConfig({ DATA_DIR: dataDir, ANALYTICS_RATE_LIMIT_PER_MIN: "1000000", LOG_LEVEL: "error" });
const clock = new FixedClock(`${end}T18:00:00Z`);
const results: Record<string, number[]> = {};
const time = async (name: string, fn: () => Response | Promise<Response>, expectCache?: string) => {
  const t = performance.now();
  const res = await fn();
  const body = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body.slice(0, 200)}`);
  if (expectCache && res.headers.get("x-cache") !== expectCache) {
    throw new Error(`${name}: X-Cache ${res.headers.get("x-cache")}`);
  }
  (results[name] ??= []).push(ms);
  return body;
};

let key = "";
let sample = "";
for (let r = 0; r < reps; r++) {
  const duckdb = await AnalyticsDb.open({ threads: config.duckdbThreads });
  const deps = buildDeps({ config, kv, duckdb, clock, log: memoryLogger() });
  if (!key) key = await ensureFixtureTenant(deps);
  const app = createApp(deps);
  const h = { authorization: `Bearer ${key}`, "cache-control": "no-cache" };
  const order = r % 2 === 0 ? ["ask", "si"] : ["si", "ask"];
  for (const which of order) {
    if (which === "ask") {
      sample = await time(
        "ask_ai_30d_cold",
        () => app.request(`/v1/analytics/ask-ai?${window}`, { headers: h }),
        "BYPASS",
      );
    } else {
      await time(
        "session_intelligence_30d_cold",
        () => app.request(`/v1/analytics/session-intelligence?${window}`, { headers: h }),
        "BYPASS",
      );
    }
  }
  await time("logs_30d_cold", () => app.request(`/v1/analytics/ask-ai/logs?${window}`, { headers: h }), "BYPASS");
  await time(
    "sponsored_30d_cold",
    () => app.request(`/v1/analytics/sponsored-conversations?${window}`, { headers: h }),
    "BYPASS",
  );
  // Warm (same instance, Parquet metadata cached) but still computed.
  await time("ask_ai_30d_warm", () => app.request(`/v1/analytics/ask-ai?${window}`, { headers: h }), "BYPASS");
  await time(
    "session_intelligence_30d_warm",
    () => app.request(`/v1/analytics/session-intelligence?${window}`, { headers: h }),
    "BYPASS",
  );
  for (let i = 0; i < 50; i++) {
    for (const p of ["ask-ai", "session-intelligence", "ask-ai/logs", "sponsored-conversations"]) {
      await time(
        "cached_hit",
        () => app.request(`/v1/analytics/${p}?${window}`, { headers: { authorization: `Bearer ${key}` } }),
        "HIT",
      );
    }
  }
  duckdb.close();
}
kv.close();
await Deno.remove(kvDir, { recursive: true });

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return {
    n: s.length,
    min: +s[0]!.toFixed(2),
    p50: +q(0.5).toFixed(2),
    p95: +q(0.95).toFixed(2),
    p99: +q(0.99).toFixed(2),
    max: +s.at(-1)!.toFixed(2),
  };
};
const summary = JSON.parse(sample).summary;
console.log(
  JSON.stringify(
    {
      window: [start, end],
      summary_30d: summary,
      ms: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, stats(v)])),
    },
    null,
    2,
  ),
);
