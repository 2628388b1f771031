import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { SORT_FIELDS } from "../../analytics/breakdown.ts";
import { analyticsWorld, loadFixture, loadGeneratedDays } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;
const get = async (world: World, path: string) => {
  const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(world.key) });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
};

Deno.test("GET /v1/analytics/ask-ai/breakdown: rows carry the summary metrics per dimension value", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);

  await t.step("dimension=date (day) matches the ask-ai daily rows and summary", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=date&widget_id=wd_main");
    const a = await get(world, "ask-ai?widget_id=wd_main");
    assert.deepEqual(b.summary, a.summary);
    assert.deepEqual(b.filters, { widget_id: "wd_main" });
    assert.deepEqual(b.breakdown, { dimension: "date", interval: "day", sort: "key", order: "asc", limit: 10000 });
    assert.deepEqual(b.rows.map((r: { key: string }) => r.key), a.daily_breakdown.map((d: { date: string }) => d.date));
    for (const [i, d] of a.daily_breakdown.entries()) {
      for (const k of ["widget_loads", "viewable_sessions", "engagement_queries", "total_clicks", "sessions"]) {
        assert.equal(b.rows[i][k], d[k], `${d.date} ${k}`);
      }
    }
    assert.equal(Object.keys(b.rows[0]).length, 14); // key + the 13 metrics
  });

  await t.step("dimension=placement_id: one row per placement, sorted by sessions", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=placement_id&widget_id=wd_main");
    assert.deepEqual(b.rows.map((r: { key: string; sessions: number }) => [r.key, r.sessions]), [
      ["pl_1", 4],
      ["pl_2", 1],
      [null, 0],
    ]);
    const none = b.rows.find((r: { key: string | null }) => r.key === null);
    assert.equal(none.engagement_queries, 1); // the server query carries no placement
    // The summary is the whole block, each session once, whatever the rows: the ask-ai summary.
    for (const d of ["placement_id", "interaction_type", "deployment_type", "referring_url"]) {
      const byColumn = await get(world, `ask-ai/breakdown?dimension=${d}&widget_id=wd_main`);
      assert.deepEqual(byColumn.summary, (await get(world, "ask-ai?widget_id=wd_main")).summary, d);
    }
  });

  await t.step("dimension=deployment_type: the sponsored row is self-consistent", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=deployment_type");
    const sponsored = b.rows.find((r: { key: string }) => r.key === "sponsored_conversation");
    assert.equal(sponsored.sessions, 1);
    assert.equal(sponsored.widget_loads, 1);
    assert.equal(sponsored.engagement_queries, 2);
    assert.equal(sponsored.engagement_rate, 200);
  });

  await t.step("interaction_type, intent, category, referring_url, ai_agent, widget_id", async () => {
    const it = await get(world, "ask-ai/breakdown?dimension=interaction_type&sort=engagement_queries");
    const byKey = Object.fromEntries(it.rows.map((r: { key: string; engagement_queries: number }) => [r.key, r]));
    assert.equal(byKey.free_form.engagement_queries, 5);
    assert.equal(byKey.search.engagement_queries, 2);
    assert.ok(byKey.free_form.sessions >= 1 && byKey.free_form.widget_loads >= 1);
    const intent = await get(world, "ask-ai/breakdown?dimension=intent");
    assert.ok(intent.rows.every((r: { label?: string }) => typeof r.label === "string"));
    const agents = await get(world, "ask-ai/breakdown?dimension=ai_agent");
    assert.deepEqual(agents.rows.map((r: { key: string }) => r.key).sort(), ["am_main", "am_second"]);
    for (const d of ["category", "referring_url", "widget_id"]) {
      const r = await get(world, `ask-ai/breakdown?dimension=${d}`);
      assert.ok(r.rows.length > 0, d);
    }
  });

  await t.step("sort, order and limit", async () => {
    const b = await get(world, "ask-ai/breakdown?dimension=placement_id&sort=key&order=desc&limit=1");
    assert.equal(b.rows.length, 1);
    assert.equal(b.rows[0].key, "pl_2");
    const big = await get(world, "ask-ai/breakdown?dimension=date&limit=999999");
    assert.equal(big.breakdown.limit, 10000);
  });

  await t.step("interval=hour, week and month in a time zone", async () => {
    const hour = await get(
      world,
      "ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-20",
    );
    assert.equal(hour.rows.length, 24);
    const ten = hour.rows.find((r: { key: string }) => r.key === "2026-11-20T10:00");
    assert.equal(ten.sessions, 2); // A and A's second session (10:32)
    const ny = await get(
      world,
      "ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-20&timezone=America/New_York",
    );
    assert.equal(ny.rows.find((r: { key: string }) => r.key === "2026-11-20T05:00").sessions, 2);
    assert.equal(ny.meta.timezone, "America/New_York");
    const week = await get(
      world,
      "ask-ai/breakdown?dimension=date&interval=week&start_date=2026-11-01&end_date=2026-11-30",
    );
    assert.deepEqual(week.rows.map((r: { key: string }) => r.key), [
      "2026-10-26",
      "2026-11-02",
      "2026-11-09",
      "2026-11-16",
      "2026-11-23",
      "2026-11-30",
    ]);
    assert.equal(week.rows[3].sessions, 6);
    const month = await get(
      world,
      "ask-ai/breakdown?dimension=date&interval=month&start_date=2026-10-01&end_date=2026-11-30",
    );
    assert.deepEqual(month.rows.map((r: { key: string; sessions: number }) => [r.key, r.sessions]), [
      ["2026-10", 0],
      ["2026-11", 6],
    ]);
  });
});

Deno.test("breakdown: 400 for a missing or unknown dimension, interval off date, bad sort or limit", async () => {
  await using world = await analyticsWorld();
  for (
    const qs of [
      "",
      "?dimension=prompt",
      "?dimension=placement_id&interval=hour",
      "?dimension=date&interval=minute",
      "?dimension=date&sort=drop_table",
      "?dimension=date&limit=0",
      "?dimension=date&limit=-5",
      "?dimension=date&compare=last_week",
      "?dimension=date&timezone=Nowhere/City",
    ]
  ) {
    const res = await world.w.app.request(`/v1/analytics/ask-ai/breakdown${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 400, qs);
    const body = await res.json();
    assert.equal(typeof body.message, "string");
    assert.ok(!/drop_table|Nowhere|minute|last_week/.test(body.message), body.message);
  }
  const other = await world.w.app.request("/v1/analytics/ask-ai/breakdown?dimension=date&widget_id=wd_other", {
    headers: bearer(world.key),
  });
  assert.equal(other.status, 400);
  assert.deepEqual(await other.json(), { message: "widget_id not found" });
  const anon = await world.w.app.request("/v1/analytics/ask-ai/breakdown?dimension=date");
  assert.equal(anon.status, 401);
});

Deno.test("breakdown: another tenant's events never appear, whatever the dimension", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  for (const d of ["widget_id", "ai_agent", "placement_id", "referring_url"]) {
    const body = await get(world, `ask-ai/breakdown?dimension=${d}&start_date=2026-11-01&end_date=2026-11-30`);
    assert.ok(!JSON.stringify(body.rows).includes("other"), d);
  }
  const res = await world.w.app.request("/v1/analytics/ask-ai/breakdown?dimension=widget_id", {
    headers: bearer(world.other.key),
  });
  const rows = (await res.json()).rows;
  assert.deepEqual(rows.map((r: { key: string }) => r.key), ["wd_other"]);
});

Deno.test("compare=previous_period|previous_year: a comparison block with the earlier window and the change", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const a = await get(world, "ask-ai?start_date=2026-11-21&end_date=2026-11-22&compare=previous_period");
  assert.deepEqual(Object.keys(a), ["success", "filters", "summary", "comparison", "daily_breakdown", "meta"]);
  assert.deepEqual(a.filters, { start_date: "2026-11-21", end_date: "2026-11-22" });
  assert.equal(a.comparison.compare, "previous_period");
  assert.equal(a.comparison.start_date, "2026-11-19");
  assert.equal(a.comparison.end_date, "2026-11-20");
  // The earlier block equals a plain request for that window.
  const plain = await get(world, "ask-ai?start_date=2026-11-19&end_date=2026-11-20");
  assert.deepEqual(a.comparison.summary, plain.summary);
  assert.deepEqual(a.comparison.daily_breakdown, plain.daily_breakdown);
  // 2 sessions now (C, D) + the second widget's = 3 against 3 before: 0 %; queries 7 against 3.
  assert.equal(a.comparison.change.sessions, Math.round(((a.summary.sessions - 3) / 3) * 10_000) / 100);
  assert.equal(
    a.comparison.change.engagement_queries,
    Math.round(((a.summary.engagement_queries - 3) / 3) * 10_000) / 100,
  );
  const year = await get(world, "ask-ai?start_date=2026-11-21&end_date=2026-11-22&compare=previous_year");
  assert.equal(year.comparison.start_date, "2025-11-21");
  assert.equal(year.comparison.change.sessions, null); // nothing a year ago
  const leap = await get(world, "ask-ai?start_date=2028-02-29&end_date=2028-02-29&compare=previous_year");
  assert.equal(leap.comparison.start_date, "2027-02-28");
  // compare is part of the cache key: a plain request does not get the comparison.
  const again = await get(world, "ask-ai?start_date=2026-11-21&end_date=2026-11-22");
  assert.equal(again.comparison, undefined);

  const b = await get(world, "ask-ai/breakdown?dimension=placement_id&compare=previous_period");
  assert.deepEqual(
    b.comparison.rows.map((r: { key: string }) => r.key),
    b.rows.map((r: { key: string }) => r.key),
  );
});

Deno.test("breakdown of a column with many values: the query hands over only the rows shown, in the same order as a whole sort", async () => {
  await using world = await analyticsWorld({ ANALYTICS_CACHE_TTL_S: "0", ANALYTICS_RATE_LIMIT_PER_MIN: "10000" });
  // Placements come from pages: a forger can give every event a value of its own. Here 400 values
  // over generated traffic (so the metrics differ and tie), 1 in 7 events without one.
  let i = 0;
  await loadGeneratedDays(world, {
    from: "2026-11-14",
    to: "2026-11-15",
    events: 1500,
    seed: 11,
    keep: (row) => {
      const n = i++;
      row.placement_id = n % 7 === 0 ? null : `pl_${(n * 7919) % 400}`;
      return true;
    },
  });
  const window = "start_date=2026-11-14&end_date=2026-11-15";
  const handed: number[] = [];
  const engine = world.w.deps.analytics;
  const query = engine.query.bind(engine);
  engine.query = async (name, params) => {
    const rows = await query(name, params);
    if (name === "ask_ai_by_column") handed.push(rows.length);
    return rows;
  };
  const whole = await get(world, `ask-ai/breakdown?dimension=placement_id&${window}&limit=10000`);
  assert.ok(whole.rows.length > 300, `${whole.rows.length} values`);
  for (const sort of SORT_FIELDS) {
    for (const order of ["asc", "desc"]) {
      const all = await get(
        world,
        `ask-ai/breakdown?dimension=placement_id&${window}&sort=${sort}&order=${order}&limit=10000`,
      );
      handed.length = 0;
      const top = await get(
        world,
        `ask-ai/breakdown?dimension=placement_id&${window}&sort=${sort}&order=${order}&limit=7`,
      );
      assert.deepEqual(top.rows, all.rows.slice(0, 7), `${sort} ${order}`);
      assert.deepEqual(top.summary, whole.summary, `${sort} ${order}`);
      // The 7 rows and the whole block, not every value.
      assert.deepEqual(handed, [8], `${sort} ${order}`);
    }
  }
  // A comparison counts the earlier window for the same values only.
  handed.length = 0;
  const cmp = await get(
    world,
    "ask-ai/breakdown?dimension=placement_id&start_date=2026-11-15&end_date=2026-11-15&compare=previous_period&limit=5",
  );
  const cmpHanded = [...handed];
  const earlier = await get(
    world,
    "ask-ai/breakdown?dimension=placement_id&start_date=2026-11-14&end_date=2026-11-14&limit=10000",
  );
  const byKey = new Map(earlier.rows.map((r: { key: string | null }) => [r.key, r]));
  assert.equal(cmp.comparison.rows.length, 5);
  for (const [n, r] of cmp.comparison.rows.entries()) {
    assert.equal(r.key, cmp.rows[n].key);
    const want = byKey.get(r.key);
    if (want) assert.deepEqual(r, want);
    else assert.equal(r.sessions + r.engagement_queries + r.widget_loads, 0);
  }
  assert.deepEqual(cmp.comparison.summary, earlier.summary);
  assert.deepEqual(cmpHanded, [6, 6]);
});
