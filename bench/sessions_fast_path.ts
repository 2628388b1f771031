/**
 * The events-path rollups with three versions of their SQL, alternating in one process so all see
 * the same load: before issue 24 (ingestion-time visits, `BEFORE`, default 1d63204^), sessions
 * derived in time order (`EXACT`, default 10fac3d) and the working tree's (the `visit_late` fast
 * path). Checks that the working tree's rows equal the time-order rows, and prints medians and
 * ratios. On the data set of bench/sessions_cost.ts (events written in time order, so no
 * `visit_late` flag is set):
 *
 *   deno task fixtures --days 35 --events 3900000 --out /work/bench-data-sessions --end 2026-11-22
 *   deno run -A bench/sessions_fast_path.ts /work/bench-data-sessions [ROUNDS] [BEFORE] [EXACT]
 *   ONLY=ask_ai_by_column deno run -A bench/sessions_fast_path.ts /work/bench-data-sessions 3
 */
import { BIGINT, BOOLEAN, type DuckDBType, LIST, listValue, VARCHAR } from "@duckdb/node-api";
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { AnalyticsEngine, loadSql, type RollupName } from "../analytics/engine.ts";
import { windowParams } from "../analytics/metrics.ts";

const [dataDir, roundsArg, beforeRev = "1d63204^", exactRev = "10fac3d"] = Deno.args;
const rounds = Number(roundsArg ?? 5);
const db = await AnalyticsDb.open({ threads: 2 });
const engine = new AnalyticsEngine(db, `${dataDir}/events`);

async function gitSql(rev: string, name: string): Promise<string> {
  const out = await new Deno.Command("git", { args: ["show", `${rev}:analytics/sql/${name}.sql`] }).output();
  if (!out.success) throw new Error(`git show ${rev} ${name} failed`);
  return new TextDecoder().decode(out.stdout);
}
// The working tree's text as the engine runs it: its `-- @include` lines resolved to the shared fragments.
const treeSql = (name: string) => loadSql(name as RollupName);

type P = Record<string, string | null | number | boolean | string[]>;
async function run(sql: string, params: P): Promise<Record<string, unknown>[]> {
  const code = sql.replace(/--[^\n]*/g, "");
  const values: Record<string, unknown> = {};
  const types: Record<string, DuckDBType> = {};
  for (const [k, v] of Object.entries(params)) {
    if (!new RegExp(`\\$${k}\\b`).test(code)) continue;
    if (Array.isArray(v)) (values[k] = listValue(v), types[k] = LIST(VARCHAR));
    else if (typeof v === "boolean") (values[k] = v, types[k] = BOOLEAN);
    else if (typeof v === "number") (values[k] = BigInt(v), types[k] = BIGINT);
    else (values[k] = v, types[k] = VARCHAR);
  }
  return await db.withConnection(async (c) => {
    const stmt = await c.prepare(sql);
    try {
      // deno-lint-ignore no-explicit-any
      stmt.bind(values as any, types);
      return (await stmt.runAndReadAll()).getRowObjectsJS() as Record<string, unknown>[];
    } finally {
      stmt.destroySync();
    }
  });
}

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
const cases: [string, string, P][] = [
  ["Ask AI by time, UTC, day", "ask_ai_by_time", { ...windowParams(w), ...f, interval: "day" }],
  ["Ask AI by time, New York, hour", "ask_ai_by_time", { ...windowParams(wNy), ...f, interval: "hour" }],
  ["breakdown by placement_id", "ask_ai_by_column", {
    ...windowParams(w),
    ...f,
    dimension: "placement_id",
    // Every value, as before the query cut a breakdown to its rows.
    sort: "key",
    descending: false,
    limit: Number.MAX_SAFE_INTEGER,
    keyed: false,
    keys: [],
    heartbeat_seconds: 5,
  }],
  ["session intelligence", "session_intelligence", { ...windowParams(w), ...f }],
  ["sponsored daily rows", "sponsored_daily", sp],
];
await engine.query("ask_ai_by_time", cases[0]![2]); // creates the `events` view
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = async () => (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
console.log("load average at start", await load());
// ONLY=name runs the cases of one rollup.
for (const [label, name, params] of cases.filter(([, n]) => !Deno.env.get("ONLY") || Deno.env.get("ONLY") === n)) {
  const versions = [
    ["before", await gitSql(beforeRev, name)],
    ["exact", await gitSql(exactRev, name)],
    ["fast", await treeSql(name)],
  ] as const;
  const times: Record<string, number[]> = { before: [], exact: [], fast: [] };
  const rows: Record<string, string> = {};
  // Warm-up, and the rows to compare (sorted: session intelligence's blocks come in no fixed order).
  for (const [v, sql] of versions) {
    rows[v] = (await run(sql, params)).map((r) => JSON.stringify(r, (_, x) => typeof x === "bigint" ? String(x) : x))
      .sort().join("\n");
  }
  for (let i = 0; i < rounds; i++) {
    for (const [v, sql] of versions) {
      const t = performance.now();
      await run(sql, params);
      times[v]!.push(performance.now() - t);
    }
  }
  const [b, e, fa] = [med(times.before!), med(times.exact!), med(times.fast!)];
  console.log(
    `${label}: before ${b.toFixed(0)} ms, exact ${e.toFixed(0)} ms, fast ${fa.toFixed(0)} ms;`,
    `fast/before ${(fa / b).toFixed(2)}x, exact/before ${(e / b).toFixed(2)}x;`,
    `fast rows == exact rows: ${rows.fast === rows.exact}`,
    JSON.stringify(Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, xs.map(Math.round)]))),
  );
}
console.log("load average at end", await load());
await db.close();
