import assert from "node:assert/strict";
import { EVENT_COLUMNS } from "../../analytics/schema.ts";
import { sqlString } from "../../analytics/sql_util.ts";
import { createTestWorld } from "../_helpers.ts";

Deno.test("AnalyticsEngine reads files written before a column existed: the column reads as NULL", async () => {
  await using w = await createTestWorld();
  const dir = `${w.deps.analytics.eventsDir}/date=2026-11-22`;
  await Deno.mkdir(dir, { recursive: true });
  // A file of the schema before `client_key`: one widget query.
  const old = EVENT_COLUMNS.filter(([n]) => n !== "client_key");
  const value = (n: string, t: string) =>
    ({
      event_id: "'ev-old-1'",
      ts: "TIMESTAMP '2026-11-22 11:00:00'",
      tenant_id: "'tn_old'",
      event_type: "'query'",
      ai_agent: "'am_old'",
      session_id: "'s-1'",
      interaction_type: "'free_form'",
      prompt: "'Cup final'",
      source: "'widget'",
      visit_start: "false",
      visit_viewable: "false",
      sponsored_start: "false",
    })[n] ?? `CAST(NULL AS ${t})`;
  await w.deps.duckdb.withConnection((c) =>
    c.run(
      `COPY (SELECT ${old.map(([n, t]) => `${value(n, t)} AS ${n}`).join(", ")}) TO ${
        sqlString(`${dir}/old.parquet`)
      } (FORMAT parquet)`,
    )
  );
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
