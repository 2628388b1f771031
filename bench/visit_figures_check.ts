/**
 * Checks and times the derived visit figures (analytics/visit_cube.ts) on the bench data set:
 * builds every closed day's figures, then compares the Ask AI time rollup read from the figures
 * with the same rollup read from the events, for windows in several zones, intervals and filters.
 *
 *   deno run -A bench/visit_figures_check.ts [/tmp/anbench/big2]
 *
 * Prints SAME or DIFF per case (and the first differing bucket) with both timings (warm instance).
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { AnalyticsEngine } from "../analytics/engine.ts";
import { VisitCube } from "../analytics/visit_cube.ts";
import { blockCounts } from "../analytics/metrics.ts";
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
const dataDir = Deno.args[0] ?? "/tmp/anbench/big2";
const db = await AnalyticsDb.open({ threads: 2 });
let failed = false;
const engine = new AnalyticsEngine(db, `${dataDir}/events`);
const visits = new VisitCube({
  engine,
  clock: new FixedClock("2026-11-22T23:50:00Z"),
  log: memoryLogger(),
  dir: `${dataDir}/derived/visits`,
});
let t = performance.now();
console.log("built", await visits.buildClosedDays(), "days in", (performance.now() - t).toFixed(0), "ms");
const f = {
  tenant_id: "tn_fixture",
  ai_agent: null,
  placement_id: null,
  deployment_type: null,
  creative_id: null,
  line_item_id: null,
  publisher_id: null,
};
const cases: [string, string, string, string, Record<string, string | null>][] = [
  ["2026-10-24", "2026-11-22", "UTC", "day", {}],
  ["2026-09-24", "2026-10-23", "UTC", "day", {}],
  ["2026-10-24", "2026-11-22", "America/New_York", "hour", {}],
  ["2026-10-24", "2026-11-22", "Asia/Kathmandu", "day", {}],
  ["2026-10-24", "2026-11-22", "UTC", "day", { deployment_type: "sponsored_conversation" }],
  ["2026-10-01", "2026-11-22", "Europe/Paris", "week", { deployment_type: "embed" }],
];
const keys = await db.withConnection(async (c) =>
  (await c.runAndReadAll(
    `SELECT DISTINCT placement_id, ai_agent, creative_id FROM read_parquet('${dataDir}/events/date=2026-11-01/*.parquet') LIMIT 3`,
  )).getRowObjectsJS()
);
for (const k of keys) {
  cases.push(["2026-10-10", "2026-11-22", "Australia/Adelaide", "day", {
    placement_id: k.placement_id as string,
    ai_agent: k.ai_agent as string,
  }]);
}
cases.push(["2026-10-10", "2026-11-22", "UTC", "month", { creative_id: keys[0].creative_id as string }]);
for (const [start, end, tz, interval, extra] of cases) {
  const w = { start, end, tz, days: [] as string[] };
  t = performance.now();
  const raw = await blockCounts({ engine }, w as never, { ...f, ...extra }, { interval } as never);
  const tr = performance.now() - t;
  t = performance.now();
  const der = await blockCounts({ engine, visits }, w as never, { ...f, ...extra }, { interval } as never);
  const td = performance.now() - t;
  const same = JSON.stringify([...raw]) === JSON.stringify([...der]);
  console.log(
    start,
    end,
    tz,
    interval,
    JSON.stringify(extra).slice(0, 60),
    same ? "SAME" : "DIFF",
    raw.size,
    `raw ${tr.toFixed(0)} derived ${td.toFixed(0)}`,
  );
  if (!same) {
    failed = true;
    for (const [k, v] of raw) {
      if (JSON.stringify(v) !== JSON.stringify(der.get(k))) {
        console.log(k, v, der.get(k));
        break;
      }
    }
  }
}
await db.close();
if (failed) Deno.exit(1);
