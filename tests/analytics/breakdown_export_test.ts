import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

/** The rows and column types of a Parquet answer, read back with DuckDB. */
async function parquetRows(world: World, url: string) {
  const res = await world.w.app.request(url, { headers: bearer(world.key) });
  assert.equal(res.status, 200);
  const path = `${world.w.dataDir}/breakdown-${crypto.randomUUID()}.parquet`;
  await Deno.writeFile(path, new Uint8Array(await res.arrayBuffer()));
  return await world.w.deps.duckdb.withConnection(async (c) => {
    const r = await c.runAndReadAll(`SELECT * FROM read_parquet('${path}')`);
    const types = Object.fromEntries(r.columnNames().map((n, i) => [n, r.columnTypes()[i]!.toString()]));
    const rows = r.getRowObjectsJS().map((row) =>
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v]))
    );
    return { types, rows };
  });
}

Deno.test("breakdown export: Parquet rows equal the JSON rows, keys and labels stay text whatever they look like", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  // Placement ids that a CSV type sniffer would read as a number and as a date.
  const widget = (await world.w.deps.repos.widgets.get("wd_main"))!;
  await world.w.deps.events.ingest([
    { event_type: "widget_load", session_id: "s_n", placement_id: "007", ts: "2026-11-21T10:00:00Z" },
    { event_type: "widget_load", session_id: "s_m", placement_id: "2026-11-21", ts: "2026-11-21T11:00:00Z" },
  ], { source: "widget", widget });
  await world.w.deps.events.flush();
  for (
    const qs of [
      "dimension=placement_id",
      "dimension=date&interval=day",
      "dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-20",
      "dimension=date&interval=week",
      "dimension=date&interval=month&timezone=Asia/Kathmandu",
      "dimension=intent",
    ]
  ) {
    const url = `/v1/analytics/ask-ai/breakdown?${qs}`;
    const json = await (await world.w.app.request(url, { headers: bearer(world.key) })).json();
    const { types, rows } = await parquetRows(world, `${url}&format=parquet`);
    assert.equal(types.key, "VARCHAR", qs);
    if (qs === "dimension=intent") assert.equal(types.label, "VARCHAR");
    assert.equal(types.sessions, "BIGINT", qs);
    assert.equal(types.viewability_rate, "DOUBLE", qs);
    assert.deepEqual(rows, json.rows, qs);
  }
  // No rows: still the typed columns.
  const none = await parquetRows(
    world,
    "/v1/analytics/ask-ai/breakdown?dimension=intent&start_date=2026-01-01&end_date=2026-01-02&format=parquet",
  );
  assert.deepEqual(none.rows, []);
  assert.deepEqual(none.types.key, "VARCHAR");
  assert.deepEqual(none.types.engagement_rate, "DOUBLE");
});
