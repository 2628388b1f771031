import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture, loadGeneratedDays } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

async function get(world: World, path: string) {
  const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(world.key) });
  assert.equal(res.status, 200, path);
  return await res.json();
}

const COUNTS = ["widget_loads", "viewable_sessions", "engagement_queries", "total_clicks", "sessions"] as const;

Deno.test("breakdown by date without a limit is the whole zero-filled series: rows add up to the summary", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  // Traffic past the first 100 days of the 365-day window (June), and on the default 7 days' first
  // days; the days between would only be more files for every request to read.
  await loadGeneratedDays(world, { from: "2026-06-01", to: "2026-06-03", events: 20, seed: 3 });
  await loadGeneratedDays(world, { from: "2026-11-13", to: "2026-11-19", events: 20, seed: 4 });

  await t.step("hourly over the default 7 days: 168 rows, the last day included", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=date&interval=hour");
    assert.equal(b.rows.length, 7 * 24);
    assert.equal(b.rows.at(-1).key, "2026-11-22T23:00");
    for (const k of COUNTS) {
      assert.equal(b.rows.reduce((n: number, r: Record<string, number>) => n + r[k]!, 0), b.summary[k], k);
    }
  });

  await t.step("daily over 365 days: the rows are the ask-ai daily_breakdown", async () => {
    const window = "start_date=2025-11-23&end_date=2026-11-22";
    const b = await get(world, `ask-ai/breakdown?dimension=date&${window}`);
    const a = await get(world, `ask-ai?${window}`);
    assert.equal(b.rows.length, 365);
    assert.deepEqual(b.summary, a.summary);
    for (const [i, d] of a.daily_breakdown.entries()) {
      for (const k of COUNTS) assert.equal(b.rows[i][k], d[k], `${d.date} ${k}`);
    }
  });

  await t.step("an explicit limit still cuts the series", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=date&interval=hour&limit=24");
    assert.equal(b.rows.length, 24);
    assert.equal(b.breakdown.limit, 24);
  });
});
