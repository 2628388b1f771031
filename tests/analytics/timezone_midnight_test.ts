import assert from "node:assert/strict";
import { writeRowsAsParquet } from "../../analytics/parquet_writer.ts";
import { uuidv7 } from "../../analytics/uuid7.ts";
import { generateDay } from "../../fixtures/events.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld } from "./_fixture.ts";

// One formatter per zone: building one per event cost more than the rest of the test.
const dayFormats = new Map<string, Intl.DateTimeFormat>();
const localDay = (ms: number, zone: string) => {
  let f = dayFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });
    dayFormats.set(zone, f);
  }
  return f.format(ms);
};

Deno.test("timezone: a local day whose midnight repeats (Havana) or is skipped (Santiago) holds exactly its own events", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const scope = {
    tenantId: world.tenantId,
    widgets: [{ id: "wd_main", aiModelId: "am_main", deploymentType: "embed", origin: "https://news.example" }],
    campaigns: [],
  };
  // Havana falls back from 01:00 CDT to 00:00 CST on 2026-11-01 (local midnight comes twice: 04:00Z
  // and 05:00Z); Santiago springs forward from 00:00 to 01:00 on 2026-09-06 (the day starts at 04:00Z).
  const rows = ["2026-08-31", "2026-09-05", "2026-09-06", "2026-10-31", "2026-11-01"].flatMap((date, i) =>
    generateDay({ scope, date, events: 2500, seed: 40 + i })
  );
  await writeRowsAsParquet(w.deps.duckdb, w.deps.analytics.eventsDir, uuidv7(w.clock), rows);
  w.deps.analytics.refresh();
  const loadsOn = (day: string, zone: string) =>
    rows.filter((r) => r.event_type === "widget_load" && localDay(r.ts_ms, zone) === day).length;
  const get = async (qs: string) => {
    const res = await w.app.request(`/v1/analytics/${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, qs);
    return await res.json();
  };
  for (
    const [zone, days] of [
      ["America/Havana", ["2026-10-31", "2026-11-01"]],
      ["America/Santiago", ["2026-09-05", "2026-09-06"]],
    ] as const
  ) {
    for (const day of days) {
      const window = `start_date=${day}&end_date=${day}&timezone=${zone}`;
      const a = await get(`ask-ai?${window}`);
      assert.equal(a.summary.widget_loads, loadsOn(day, zone), `${zone} ${day}`);
      const b = await get(`ask-ai/breakdown?dimension=date&interval=hour&${window}`);
      const hourly = b.rows.reduce((n: number, r: { widget_loads: number }) => n + r.widget_loads, 0);
      assert.equal(hourly, b.summary.widget_loads, `${zone} ${day} hours add up`);
      const byPlacement = await get(`ask-ai/breakdown?dimension=placement_id&${window}`);
      assert.equal(byPlacement.summary.widget_loads, loadsOn(day, zone), `${zone} ${day} by placement`);
    }
  }
});
