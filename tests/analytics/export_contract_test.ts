import assert from "node:assert/strict";
import { DuckDBInstance } from "@duckdb/node-api";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture, parseCsv } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

/** Widget traffic whose page-supplied ids start like spreadsheet formulas. */
async function loadFormulaIds(world: World) {
  const widget = (await world.w.deps.repos.widgets.get("wd_main"))!;
  const q = (ts: string, e: Record<string, unknown>) => ({
    event_type: "query",
    interaction_type: "free_form",
    session_id: `s_${ts.slice(11, 13)}`,
    ts,
    prompt: "plain",
    response: "ok",
    ...e,
  });
  await world.w.deps.events.ingest([
    q("2026-11-20T10:00:00Z", { placement_id: "-2+3" }),
    q("2026-11-20T11:00:00Z", { placement_id: "@A1", deployment_type: "+cmd" }),
    q("2026-11-20T12:00:00Z", { placement_id: "007", deployment_type: "-x", prompt: "=1+1" }),
  ], { source: "widget", widget });
  await world.w.deps.events.flush();
}

/** Column name -> DuckDB type, and the rows, of a Parquet file read back with DuckDB. */
async function readParquet(bytes: Uint8Array) {
  const dir = await Deno.makeTempDir({ prefix: "pq-read-" });
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  try {
    const file = `${dir}/x.parquet`;
    await Deno.writeFile(file, bytes);
    const types = Object.fromEntries(
      (await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRowObjectsJS()
        .map((r) => [String(r.column_name), String(r.column_type)]),
    );
    const rows = (await conn.runAndReadAll(`SELECT * FROM read_parquet('${file}')`)).getRowObjectsJS();
    return { types, rows };
  } finally {
    conn.closeSync();
    instance.closeSync();
    await Deno.remove(dir, { recursive: true });
  }
}

const BREAKDOWN_TYPES = {
  key: "VARCHAR",
  widget_loads: "BIGINT",
  viewable_sessions: "BIGINT",
  engagement_queries: "BIGINT",
  total_clicks: "BIGINT",
  article_clicks: "BIGINT",
  cta_clicks: "BIGINT",
  sessions: "BIGINT",
  total_session_time_seconds: "BIGINT",
  avg_session_duration_seconds: "BIGINT",
  viewability_rate: "DOUBLE",
  engagement_rate: "DOUBLE",
  engagement_session_rate: "DOUBLE",
  query_to_click_rate: "DOUBLE",
};

Deno.test("logs CSV export: every text cell that starts like a formula is defused, page-supplied ids too", async () => {
  await using world = await analyticsWorld();
  await loadFormulaIds(world);
  const res = await world.w.app.request(
    "/v1/analytics/ask-ai/logs?format=csv&start_date=2026-11-20&end_date=2026-11-20",
    {
      headers: bearer(world.key),
    },
  );
  assert.equal(res.status, 200);
  const [header, ...rows] = parseCsv(await res.text());
  assert.equal(rows.length, 3);
  const col = (name: string) => header!.indexOf(name);
  assert.deepEqual(rows.map((r) => r[col("placement_id")]).sort(), ["'-2+3", "'@A1", "007"]);
  assert.deepEqual(rows.map((r) => r[col("deployment_type")]).sort(), ["'+cmd", "'-x", "embed"]);
  for (const r of rows) {
    for (const [i, cell] of r.entries()) {
      if (header![i] !== "timestamp") assert.ok(!/^[=+\-@\t\r]/.test(cell), `${header![i]}: ${cell}`);
    }
  }
  // The breakdown's CSV guards its keys the same way.
  const bd = await world.w.app.request(
    "/v1/analytics/ask-ai/breakdown?dimension=placement_id&format=csv&start_date=2026-11-20&end_date=2026-11-20",
    { headers: bearer(world.key) },
  );
  assert.deepEqual(parseCsv(await bd.text()).slice(1).map((r) => r[0]).sort(), ["'-2+3", "'@A1", "007"]);
});

Deno.test("breakdown Parquet export: every column has its declared type whatever the values, even with no rows", async () => {
  await using world = await analyticsWorld();
  await loadFormulaIds(world);
  const get = async (qs: string) => {
    const res = await world.w.app.request(`/v1/analytics/ask-ai/breakdown?format=parquet&${qs}`, {
      headers: bearer(world.key),
    });
    assert.equal(res.status, 200, qs);
    assert.equal(res.headers.get("content-type"), "application/vnd.apache.parquet");
    assert.equal(res.headers.get("content-disposition"), 'attachment; filename="ask-ai-breakdown.parquet"');
    return await readParquet(new Uint8Array(await res.arrayBuffer()));
  };
  // Whole-number rates, keys that look like numbers or formulas: still text keys and DOUBLE rates.
  const columns = await get("dimension=placement_id&start_date=2026-11-20&end_date=2026-11-20");
  assert.deepEqual(columns.types, BREAKDOWN_TYPES);
  assert.deepEqual(columns.rows.map((r) => r.key).sort(), ["-2+3", "007", "@A1"]);
  const only = await get("dimension=placement_id&placement_id=007&start_date=2026-11-20&end_date=2026-11-20");
  assert.deepEqual(only.types, BREAKDOWN_TYPES);
  assert.deepEqual(only.rows.map((r) => r.key), ["007"]);
  // Date keys stay the strings the JSON gives, and an empty window keeps the schema.
  const days = await get("dimension=date&start_date=2026-11-20&end_date=2026-11-21");
  assert.deepEqual(days.types, BREAKDOWN_TYPES);
  assert.deepEqual(days.rows.map((r) => r.key), ["2026-11-20", "2026-11-21"]);
  const empty = await get("dimension=placement_id&start_date=2025-11-20&end_date=2025-11-21");
  assert.deepEqual(empty.types, BREAKDOWN_TYPES);
  assert.equal(empty.rows.length, 0);
  const intents = await get("dimension=intent&start_date=2026-11-20&end_date=2026-11-20");
  assert.deepEqual(intents.types, {
    key: "VARCHAR",
    label: "VARCHAR",
    ...Object.fromEntries(Object.entries(BREAKDOWN_TYPES).slice(1)),
  });
});

Deno.test("logs Parquet export of an empty window: a valid file with the typed columns and no rows", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const res = await world.w.app.request(
    "/v1/analytics/ask-ai/logs?format=parquet&start_date=2025-11-01&end_date=2025-11-07",
    {
      headers: bearer(world.key),
    },
  );
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-disposition"), 'attachment; filename="ask-ai-logs.parquet"');
  const { types, rows } = await readParquet(new Uint8Array(await res.arrayBuffer()));
  assert.equal(rows.length, 0);
  assert.equal(types.timestamp, "TIMESTAMP");
  assert.equal(types.prompt, "VARCHAR");
});

Deno.test("export format negotiation: Accept quality values are honoured, q=0 refuses a type", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  const cases: [string, string][] = [
    ["text/csv", "text/csv"],
    ["application/vnd.apache.parquet", "application/vnd.apache.parquet"],
    ["text/csv;q=0, application/json", "application/json"],
    ["text/csv;q=0", "application/json"],
    ["text/csv;q=0, text/*", "application/json"],
    ["text/*, TEXT/CSV;q=0", "application/json"],
    ["text/*", "text/csv"],
    ["application/json, text/csv;q=0.1", "application/json"],
    ["application/json;q=0.5, text/csv", "text/csv"],
    ["text/csv, application/json", "text/csv"],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json"],
    ["*/*", "application/json"],
    ["image/png", "application/json"],
    ["TEXT/CSV", "text/csv"],
    ["text/csvx", "application/json"],
    ["x".repeat(10_000), "application/json"],
  ];
  for (const path of ["ask-ai/logs", "ask-ai/breakdown?dimension=date"]) {
    for (const [accept, type] of cases) {
      const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: { ...bearer(world.key), accept } });
      assert.equal(res.status, 200, `${path} ${accept.slice(0, 40)}`);
      assert.equal(res.headers.get("content-type")!.split(";")[0], type, `${path} ${accept.slice(0, 40)}`);
      await res.body?.cancel();
    }
    // `format` wins over Accept.
    const sep = path.includes("?") ? "&" : "?";
    const res = await world.w.app.request(`/v1/analytics/${path}${sep}format=json`, {
      headers: { ...bearer(world.key), accept: "text/csv" },
    });
    assert.equal(res.headers.get("content-type")!.split(";")[0], "application/json");
    await res.body?.cancel();
  }
});
