/**
 * What deriving sessions from the events in time order costs: times the rollups that read events
 * (Ask AI by time and by column, session intelligence, sponsored), the visit-figure build per day
 * and the Ask AI rollup read from figure files, on a fixture data set (window 2026-10-18 ..
 * 2026-11-16, clock 2026-11-16T23:50Z), and checks figures and events agree:
 *
 *   deno task fixtures --days 35 --events 3900000 --out /tmp/t24exact-bench --end 2026-11-22
 *   deno run -A bench/sessions_cost.ts /tmp/t24exact-bench LABEL
 *
 * Run it on the code before and after a change, on the same data, and compare the medians.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { AnalyticsEngine } from "../analytics/engine.ts";
import { VisitCube } from "../analytics/visit_cube.ts";
import { blockCounts, windowParams } from "../analytics/metrics.ts";
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";
const [dataDir, label] = Deno.args;
const db = await AnalyticsDb.open({ threads: 2 });
const engine = new AnalyticsEngine(db, `${dataDir}/events`);
const figDir = await Deno.makeTempDir({ prefix: "t24exact-fig-" });
const visits = new VisitCube({
  engine,
  clock: new FixedClock("2026-11-16T23:50:00Z"),
  log: memoryLogger(),
  dir: figDir,
});
const f = {
  tenant_id: "tn_fixture",
  ai_agent: null,
  placement_id: null,
  deployment_type: null,
  creative_id: null,
  line_item_id: null,
  publisher_id: null,
};
const w = { start: "2026-10-18", end: "2026-11-16", tz: "UTC", days: [] as string[] };
const wNy = { ...w, tz: "America/New_York" };
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(name: string, fn: () => Promise<unknown>, reps = 3) {
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  console.log(label, name, "median", med(xs).toFixed(0), "ms", JSON.stringify(xs.map((x) => Math.round(x))));
}
await blockCounts({ engine }, w, f, { interval: "day" }); // view + warm-up
await time("ask_ai_by_time events 30d UTC", () => blockCounts({ engine }, w, f, { interval: "day" }));
await time("ask_ai_by_time events 30d NY hour", () => blockCounts({ engine }, wNy, f, { interval: "hour" }));
await time("ask_ai_by_column placement 30d", () => blockCounts({ engine }, w, f, { dimension: "placement_id" }));
const p = { ...windowParams(w), ...f };
await time("session_intelligence 30d", () => engine.query("session_intelligence", p));
const sp = {
  ...windowParams(w),
  tenant_id: "tn_fixture",
  campaign_ids: ["cp_fixture"],
  ai_agent: null,
  placement_id: null,
  prompt_id: null,
  creative_id: null,
  line_item_id: null,
  publisher_id: null,
};
await time("sponsored_daily 30d", () => engine.query("sponsored_daily", sp));
const t = performance.now();
const built = await visits.buildClosedDays();
console.log(
  label,
  "build",
  built,
  "days",
  (performance.now() - t).toFixed(0),
  "ms",
  ((performance.now() - t) / built).toFixed(0),
  "ms/day",
);
await time("ask_ai_by_time figures 30d UTC", () => blockCounts({ engine, visits }, w, f, { interval: "day" }), 5);
await time(
  "ask_ai_by_time figures 30d NY hour",
  () => blockCounts({ engine, visits }, wNy, f, { interval: "hour" }),
  5,
);
const a = await blockCounts({ engine }, wNy, f, { interval: "hour" });
const b = await blockCounts({ engine, visits }, wNy, f, { interval: "hour" });
console.log(label, "figures == events (NY hour):", JSON.stringify([...a]) === JSON.stringify([...b]));
await Deno.remove(figDir, { recursive: true });
await db.close();
