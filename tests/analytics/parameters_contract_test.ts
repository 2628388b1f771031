import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

async function get(world: World, path: string) {
  const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(world.key) });
  return { status: res.status, body: await res.json() };
}

Deno.test("limit on breakdown, articles and agents: any larger whole number is reduced to the maximum", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  for (const big of ["10001", "99999999999", "9".repeat(400)]) {
    const b = await get(world, `ask-ai/breakdown?dimension=date&limit=${big}`);
    assert.equal(b.status, 200, big);
    assert.equal(b.body.breakdown.limit, 10_000);
    for (const path of ["articles", "agents"]) assert.equal((await get(world, `${path}?limit=${big}`)).status, 200);
  }
  for (const bad of ["0", "-1", "abc", "1.5", "1e3", "0x10", "%E2%91%A0", "%205"]) {
    for (const path of ["ask-ai/breakdown?dimension=date&", "articles?", "agents?", "ask-ai/logs?"]) {
      const r = await get(world, `${path}limit=${bad}`);
      assert.equal(r.status, 400, `${path} ${bad}`);
      assert.deepEqual(r.body, { message: "limit must be an integer >= 1" });
    }
  }
});

Deno.test("dates before the year 1000: compare reads the right earlier window, month buckets keep four digits", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  const year = await get(world, "ask-ai?start_date=0100-01-01&end_date=0100-01-07&compare=previous_year");
  assert.equal(year.status, 200);
  assert.equal(year.body.comparison.start_date, "0099-01-01");
  assert.equal(year.body.comparison.end_date, "0099-01-07");
  assert.equal(year.body.comparison.daily_breakdown[0].date, "0099-01-01");
  const across = await get(world, "ask-ai?start_date=0100-12-30&end_date=0101-01-02&compare=previous_year");
  assert.deepEqual(
    across.body.comparison.daily_breakdown.map((d: { date: string }) => d.date),
    ["0099-12-30", "0099-12-31", "0100-01-01", "0100-01-02"],
  );
  const period = await get(
    world,
    "ask-ai/breakdown?dimension=date&start_date=0100-01-01&end_date=0100-01-02&compare=previous_period",
  );
  assert.deepEqual(period.body.comparison.rows.map((r: { key: string }) => r.key), ["0099-12-30", "0099-12-31"]);
  const months = await get(
    world,
    "ask-ai/breakdown?dimension=date&interval=month&start_date=0099-12-01&end_date=0100-01-31",
  );
  assert.deepEqual(months.body.rows.map((r: { key: string }) => r.key), ["0099-12", "0100-01"]);
  const first = await get(world, "ask-ai?start_date=0001-01-01&end_date=0001-12-31&compare=previous_period");
  assert.equal(first.status, 200);
  assert.equal(first.body.comparison.start_date, "0000-01-02"); // 365 days of the leap year 0
  assert.equal(first.body.comparison.end_date, "0000-12-31");
  for (
    const path of [
      "ask-ai?start_date=0000-12-31",
      "ask-ai?end_date=0000-01-01",
      "ask-ai/breakdown?dimension=date&start_date=0000-06-01",
    ]
  ) {
    const r = await get(world, path);
    assert.equal(r.status, 400, path);
    assert.match(r.body.message, /^(start|end)_date must be a valid date in YYYY-MM-DD format$/);
  }
});

Deno.test("a query parameter given twice is a 400 naming it, on every analytics route", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  for (
    const [path, name] of [
      ["ask-ai?start_date=2026-11-01&start_date=2026-11-02", "start_date"],
      ["ask-ai?compare=previous_period&compare=previous_year", "compare"],
      ["ask-ai/logs?limit=1&limit=2", "limit"],
      ["ask-ai/logs?format=csv&format=json", "format"],
      ["ask-ai/breakdown?dimension=date&dimension=widget_id", "dimension"],
      ["ask-ai/breakdown?dimension=date&limit=5&limit=6", "limit"],
      ["sponsored-conversations?campaign_id=cp_a&campaign_id=cp_b", "campaign_id"],
      ["session-intelligence?timezone=UTC&timezone=Europe/Paris", "timezone"],
      ["realtime?widget_id=wd_main&widget_id=wd_other", "widget_id"],
      ["articles?data_model_id=dm_a&data_model_id=dm_b", "data_model_id"],
      ["agents?end_date=2026-11-01&end_date=2026-11-02", "end_date"],
      ["dashboard?widget_id=wd_main&widget_id=wd_other", "widget_id"],
    ]
  ) {
    const r = await get(world, path);
    assert.equal(r.status, 400, path);
    assert.deepEqual(r.body, { message: `${name} must be given once` }, path);
  }
});
