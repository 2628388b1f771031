import assert from "node:assert/strict";
import { AnalyticsDb } from "../../analytics/duckdb.ts";
import { AnalyticsEngine, loadSql, ROLLUPS } from "../../analytics/engine.ts";
import { windowParams } from "../../analytics/metrics.ts";
import { EVENT_COLUMNS } from "../../analytics/schema.ts";
import { writeFixtureEvents } from "../../fixtures/events_writer.ts";
import { createTestWorld } from "../_helpers.ts";

const scope = {
  tenantId: "tn_e",
  widgets: [{ id: "wd_e", aiModelId: "am_e", deploymentType: "embed", origin: "https://n.example" }],
  campaigns: [],
};
const params = (start: string, end: string) => ({
  tenant_id: "tn_e",
  ...windowParams({ start, end, days: [], tz: "UTC" }),
  interval: "day",
  ai_agent: null,
  placement_id: null,
  deployment_type: null,
  creative_id: null,
  line_item_id: null,
  publisher_id: null,
});

/**
 * The most files any scan of an EXPLAIN ANALYZE plan read. A plan box prints "Total Files Read: N" on
 * one line, or the label and N on two when boxes stand side by side (N under the label).
 */
function mostFilesRead(plan: string): number {
  const lines = plan.split("\n");
  const counts: number[] = [];
  lines.forEach((line, i) => {
    const at = line.indexOf("Total Files Read:");
    if (at < 0) return;
    const box = line.slice(at).split("\u2502")[0]!;
    const below = (lines[i + 1] ?? "").slice(at - 2, at + box.length + 2);
    const n = /:\s*(\d+)/.exec(box)?.[1] ?? /^\W*(\d+)\W*$/.exec(below)?.[1];
    assert.ok(n, `a file count for the scan at line ${i}`);
    counts.push(Number(n));
  });
  assert.ok(counts.length > 0, "the plan has a Parquet scan");
  return Math.max(...counts);
}

Deno.test("AnalyticsEngine prunes partitions: a one-day window reads one day folder", async () => {
  await using w = await createTestWorld();
  await writeFixtureEvents({
    db: w.deps.duckdb,
    clock: w.clock,
    eventsDir: w.deps.analytics.eventsDir,
    scope,
    days: 5,
    events: 1000,
    endDate: "2026-11-20",
  });
  w.deps.analytics.refresh();
  const oneDay = await w.deps.analytics.explain("ask_ai_by_time", params("2026-11-18", "2026-11-18"));
  assert.equal(mostFilesRead(oneDay), 1);
  const all = await w.deps.analytics.explain("ask_ai_by_time", params("2026-11-01", "2026-11-30"));
  assert.equal(mostFilesRead(all), 5);
  const rows = await w.deps.analytics.query("ask_ai_by_time", params("2026-11-18", "2026-11-18"));
  assert.deepEqual(rows.map((r) => r.key), ["2026-11-18"]);
});

Deno.test("every rollup is a .sql file that prepares against the empty view", async () => {
  await using w = await createTestWorld();
  const engine = new AnalyticsEngine(w.deps.duckdb, `${w.dataDir}/no-events-here`);
  const p = {
    ...params("2026-11-01", "2026-11-02"),
    campaign_ids: ["cp_1"],
    prompt_id: null,
    interaction_types: ["free_form"],
    ai_agents: ["am_1"],
    per_sender: 20,
    dimension: "placement_id",
    sort: "sessions",
    descending: true,
    keyed: false,
    keys: [],
    heartbeat_seconds: 5,
    level: "article",
    data_model_id: null,
    since_5: "2026-11-01 00:00:00",
    since_30: "2026-11-01 00:00:00",
    until: "2026-11-01 00:00:00",
    read_from: "2026-11-01 00:00:00",
    read_to: "2026-11-02 00:00:00",
    duplicate_window_minutes: 60,
    wal: "[]",
    limit: 10,
    offset: 0,
  };
  // The export reads a batch's files by name: one file of the event schema with no rows.
  // (In a day folder: the visit figures' build reads the hive `date` from the path.)
  await Deno.mkdir(`${w.dataDir}/probe/date=2026-11-01`, { recursive: true });
  const empty = `${w.dataDir}/probe/date=2026-11-01/empty.parquet`;
  await w.deps.duckdb.withConnection((c) =>
    c.run(
      `COPY (SELECT ${
        EVENT_COLUMNS.map(([n, t]) => `CAST(NULL AS ${t}) AS ${n}`).join(", ")
      } WHERE false) TO '${empty}' (FORMAT parquet)`,
    )
  );
  Object.assign(p, { files: [empty], scan_files: [empty], day: "2026-11-01" });
  // The derived time rollup reads visit figure files: one built from that empty file.
  const figures = `${w.dataDir}/figures.parquet`;
  await engine.copyToParquet("visit_cube_build", { files: [empty], scan_files: [empty], day: "2026-11-01" }, figures);
  Object.assign(p, { derived_files: [figures], raw_days: [], raw_from: null, raw_to: null });
  for (const name of ROLLUPS) {
    const sql = await loadSql(name);
    const used = new Set([...sql.matchAll(/\$([a-z_0-9]+)/g)].map((m) => m[1]!));
    const bound = Object.fromEntries(Object.entries(p).filter(([k]) => used.has(k)));
    const rows = await engine.query(name, bound);
    assert.ok(Array.isArray(rows), name);
  }
});

Deno.test("AnalyticsDb.open() sets the allocator flush threshold it is given", async () => {
  const setting = "SELECT current_setting('allocator_bulk_deallocation_flush_threshold') AS v";
  const read = (db: AnalyticsDb) =>
    db.withConnection(async (c) => String((await c.runAndReadAll(setting)).getRowObjects()[0]!.v));
  const flushing = await AnalyticsDb.open({ allocatorFlush: "4MB" });
  const plain = await AnalyticsDb.open();
  try {
    // DuckDB reports sizes in binary units: 4 MB is 3.8 MiB; its default is 512 MiB.
    assert.equal(await read(flushing), "3.8 MiB");
    assert.equal(await read(plain), "512.0 MiB");
  } finally {
    flushing.close();
    plain.close();
  }
});
