import assert from "node:assert/strict";
import { compactDay, recoverCompactions } from "../../analytics/compaction.ts";
import { generateDay } from "../../fixtures/events.ts";
import { main as fixturesCli } from "../../fixtures/events_cli.ts";
import { demoEventsStep } from "../../fixtures/demo_events.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { parquetFiles, parquetIdCounts } from "./_count.ts";

const scope = {
  tenantId: "tn_f",
  widgets: [{ id: "wd_f", aiModelId: "am_f", deploymentType: "embed", origin: "https://n.example" }],
  campaigns: [{ id: "cp_f", creativeIds: ["cr_1"], prompts: [{ id: "pm_f", text: "Where should I travel?" }] }],
};

Deno.test("generateDay() is deterministic for a seed and stays inside its day", () => {
  const a = generateDay({ scope, date: "2026-11-01", events: 2000, seed: 7 });
  const b = generateDay({ scope, date: "2026-11-01", events: 2000, seed: 7 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, generateDay({ scope, date: "2026-11-01", events: 2000, seed: 8 }));
  assert.ok(a.length >= 2000 && a.length < 2100);
  const start = Date.parse("2026-11-01T00:00:00Z");
  for (const e of a) assert.ok(e.ts_ms >= start && e.ts_ms < start + 86_400_000);
  const types = new Set(a.map((e) => e.event_type));
  for (const t of ["widget_load", "widget_viewable", "query", "heartbeat", "click", "sponsored_impression"]) {
    assert.ok(types.has(t as never), t);
  }
});

Deno.test("fixtures CLI: --days --events --out writes the service's layout, the same events for the same seed", async () => {
  const out = await Deno.makeTempDir({ prefix: "fixtures-" });
  const out2 = await Deno.makeTempDir({ prefix: "fixtures-" });
  try {
    assert.equal(await fixturesCli(["--days", "3", "--events", "900", "--out", out, "--end", "2026-11-03"]), 0);
    assert.equal(await fixturesCli(["--days", "3", "--events", "900", "--out", out2, "--end", "2026-11-03"]), 0);
    const files = await parquetFiles(`${out}/events`);
    assert.deepEqual(files.map((f) => f.split("/")[0]), ["date=2026-11-01", "date=2026-11-02", "date=2026-11-03"]);
    const { AnalyticsDb } = await import("../../analytics/duckdb.ts");
    const db = await AnalyticsDb.open();
    try {
      const a = await parquetIdCounts(db, `${out}/events`);
      const b = await parquetIdCounts(db, `${out2}/events`);
      assert.ok(a.size >= 900);
      assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    } finally {
      db.close();
    }
    assert.equal(await fixturesCli(["--days", "0", "--events", "1", "--out", out]), 2);
    assert.equal(await fixturesCli(["--days", "1", "--events", "1"]), 2);
  } finally {
    await Deno.remove(out, { recursive: true });
    await Deno.remove(out2, { recursive: true });
  }
});

Deno.test("demo seed: 30 days of events so every analytics endpoint shows data on first start", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [demoEventsStep]);
  const key = seeded.apiKey!;
  const files = await parquetFiles(w.deps.analytics.eventsDir);
  assert.equal(files.length, 30);
  const get = async (p: string) => {
    const res = await w.app.request(`/v1/analytics/${p}`, { headers: bearer(key) });
    assert.equal(res.status, 200, p);
    return await res.json();
  };
  const askAi = await get("ask-ai?start_date=2026-10-24&end_date=2026-11-22");
  assert.ok(askAi.summary.widget_loads > 0);
  assert.ok(askAi.daily_breakdown.every((d: { widget_loads: number }) => d.widget_loads > 0));
  assert.ok((await get("ask-ai/logs")).count > 0);
  const sponsored = await get("sponsored-conversations");
  assert.ok(sponsored.summary.impressions > 0);
  assert.deepEqual(sponsored.campaign_breakdown[0].creative_ids, ["cr_1001", "cr_1002"]);
  assert.ok(sponsored.prompt_breakdown.some((p: { impressions: number }) => p.impressions > 0));
  assert.ok((await get("session-intelligence")).session_intelligence.summary.total_engaged_sessions > 0);
});

Deno.test("recoverCompactions() finishes a compaction that crashed after writing the merged file", async () => {
  await using w = await createTestWorld();
  const { deps } = w;
  for (let i = 0; i < 3; i++) {
    await deps.events.record([{ event_id: `cmp-${i}-000001`, event_type: "widget_load", tenant_id: "tn_x" }]);
    await deps.events.flush();
  }
  const dir = `${deps.analytics.eventsDir}/date=2026-11-22`;
  const inputs = (await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]!);
  const backup = await Deno.makeTempDir();
  for (const f of inputs) await Deno.copyFile(`${dir}/${f}`, `${backup}/${f}`);
  await compactDay({ kv: deps.kv, db: deps.duckdb, clock: w.clock }, deps.analytics.eventsDir, "2026-11-22", 2);
  const merged = (await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]!);
  assert.equal(merged.length, 1);
  // Re-create the crash state: manifest "written", merged file still under .tmp, inputs present.
  const output = merged[0]!;
  await Deno.rename(`${dir}/${output}`, `${dir}/${output}.tmp`);
  for (const f of inputs) await Deno.copyFile(`${backup}/${f}`, `${dir}/${f}`);
  await Deno.remove(backup, { recursive: true });
  await deps.kv.set(["ev_compaction", "2026-11-22"], { date: "2026-11-22", output, inputs, state: "written" });
  await recoverCompactions(deps.kv, deps.analytics.eventsDir);
  assert.deepEqual((await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]), [output]);
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 3);
  assert.equal((await deps.kv.get(["ev_compaction", "2026-11-22"])).value, null);
});
