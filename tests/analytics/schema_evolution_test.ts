import assert from "node:assert/strict";
import { EVENT_COLUMNS } from "../../analytics/schema.ts";
import { sqlString } from "../../analytics/sql_util.ts";
import { createTestWorld } from "../_helpers.ts";

const WITHOUT_CLIENT_KEY = EVENT_COLUMNS.filter(([n]) => n !== "client_key");

Deno.test("AnalyticsEngine reads files written before a column existed: the column reads as NULL", async () => {
  await using w = await createTestWorld();
  // A file of the schema before `client_key`: one widget query.
  await writeQuery(w, { day: "2026-11-22", prompt: "Cup final", columns: WITHOUT_CLIENT_KEY, session: "s-1" });
  w.deps.analytics.refresh();
  const rows = await w.deps.analytics.query("trending_signals", {
    from_date: "2026-11-21",
    to_date: "2026-11-22",
    start_ts: "2026-11-21 12:00:00",
    end_ts: "2026-11-22 12:00:00",
    tenant_id: "tn_old",
    data_model_id: "dm_old",
    ai_agents: ["am_old"],
    interaction_types: ["free_form"],
    per_sender: 20,
    limit: 10,
  });
  assert.deepEqual(rows, [{ channel: "widget", text: "cup final", sender: "s-1", session: "s-1" }]);
});

/**
 * Writes one widget query of tenant `tn_old` as a Parquet file of `columns` (a schema, old or
 * current), in session `s-<day>` unless `session` is given.
 */
async function writeQuery(
  w: Awaited<ReturnType<typeof createTestWorld>>,
  { day, prompt, columns, session = `s-${day}` }: {
    day: string;
    prompt: string;
    columns: typeof EVENT_COLUMNS;
    session?: string;
  },
): Promise<void> {
  const dir = `${w.deps.analytics.eventsDir}/date=${day}`;
  await Deno.mkdir(dir, { recursive: true });
  const value = (n: string, t: string) =>
    ({
      event_id: sqlString(`ev-${day}`),
      ts: `TIMESTAMP '${day} 11:00:00'`,
      tenant_id: "'tn_old'",
      event_type: "'query'",
      ai_agent: "'am_old'",
      session_id: sqlString(session),
      interaction_type: "'free_form'",
      prompt: sqlString(prompt),
      source: "'widget'",
      visit_start: "false",
      visit_viewable: "false",
      sponsored_start: "false",
    })[n] ?? `CAST(NULL AS ${t})`;
  await w.deps.duckdb.withConnection((c) =>
    c.run(
      `COPY (SELECT ${columns.map(([n, t]) => `${value(n, t)} AS ${n}`).join(", ")}) TO ${
        sqlString(`${dir}/${crypto.randomUUID()}.parquet`)
      } (FORMAT parquet)`,
    )
  );
}

/** The texts trending_signals finds for tn_old over 2026-11-20 .. 2026-11-22 (it reads `client_key`). */
const trendingTexts = async (w: Awaited<ReturnType<typeof createTestWorld>>) =>
  (await w.deps.analytics.query("trending_signals", {
    from_date: "2026-11-20",
    to_date: "2026-11-22",
    start_ts: "2026-11-20 00:00:00",
    end_ts: "2026-11-22 12:00:00",
    tenant_id: "tn_old",
    data_model_id: "dm_old",
    ai_agents: ["am_old"],
    interaction_types: ["free_form"],
    per_sender: 20,
    limit: 10,
  })).map((r) => r.text).sort();

Deno.test("AnalyticsEngine reads files of the current schema and files written before a column existed together", async () => {
  await using w = await createTestWorld();
  await writeQuery(w, { day: "2026-11-21", prompt: "Cup final", columns: EVENT_COLUMNS });
  await writeQuery(w, { day: "2026-11-22", prompt: "Cup draw", columns: WITHOUT_CLIENT_KEY });
  w.deps.analytics.refresh();
  assert.deepEqual(await trendingTexts(w), ["cup draw", "cup final"]);
});

Deno.test("AnalyticsEngine: a file without a column, written after the view was built (an older process), is read by the next query", async () => {
  // After the first file in the glob's order (DuckDB finds a column missing from it), and before it
  // (the first file would lack a column a rollup reads).
  for (const [day, prompt] of [["2026-11-22", "Cup draw"], ["2026-11-20", "Cup semi"]]) {
    await using w = await createTestWorld();
    await writeQuery(w, { day: "2026-11-21", prompt: "Cup final", columns: EVENT_COLUMNS });
    w.deps.analytics.refresh();
    // Every file holds every column: the view reads without merging schemas.
    assert.deepEqual(await trendingTexts(w), ["cup final"]);
    await writeQuery(w, { day, prompt, columns: WITHOUT_CLIENT_KEY });
    assert.deepEqual(await trendingTexts(w), [prompt.toLowerCase(), "cup final"].sort(), day);
  }
});
