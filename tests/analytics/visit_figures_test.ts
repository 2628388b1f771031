import assert from "node:assert/strict";
import { writeRowsAsParquet } from "../../analytics/parquet_writer.ts";
import { uuidv7 } from "../../analytics/uuid7.ts";
import { blockCounts, type BlockFilters, type Interval } from "../../analytics/metrics.ts";
import { VisitCube } from "../../analytics/visit_cube.ts";
import { generateDay } from "../../fixtures/events.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture, loadGeneratedDays, sharedAnalyticsWorld } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

/**
 * Generated traffic of two widgets (with sponsored conversations) over `from` (2026-10-20) .. 2026-11-21,
 * the hand-made fixture (today's events, a session-less query, other widgets and another tenant),
 * and session-less queries around local and UTC midnights.
 */
async function loadDays(world: World, from = "2026-10-20") {
  await loadGeneratedDays(world, { from, to: "2026-11-21", events: 250, seed: 70 });
  await loadFixture(world);
  // A visit over several steps that New York's midnight (05:00 UTC) cuts in two.
  const widget = (await world.w.deps.repos.widgets.get("wd_main"))!;
  await world.w.deps.events.ingest(
    [
      { event_type: "widget_load", ts: "2026-11-14T04:40:00Z" },
      { event_type: "query", ts: "2026-11-14T04:50:00Z", prompt: "Before midnight in New York" },
      { event_type: "query", ts: "2026-11-14T05:10:00Z", prompt: "After midnight in New York" },
      { event_type: "widget_load", ts: "2026-11-14T05:20:00Z" },
    ].map((e) => ({ ...e, session_id: "s_cut" })),
    { source: "widget", widget },
  );
  await world.w.deps.events.record(
    ["2026-11-14T18:20:00Z", "2026-11-14T23:59:00Z", "2026-11-15T04:50:00Z"].map((ts) => ({
      event_type: "query",
      ts,
      ai_agent: "am_main",
      interaction_type: "search",
      prompt: "Best laptop for students",
    })),
  );
  await world.w.deps.events.flush();
  world.w.deps.analytics.refresh();
}

const filtersOf = (tenantId: string, extra: Partial<BlockFilters> = {}): BlockFilters => ({
  tenant_id: tenantId,
  ai_agent: null,
  placement_id: null,
  deployment_type: null,
  creative_id: null,
  line_item_id: null,
  publisher_id: null,
  ...extra,
});

const window = (start: string, end: string, tz: string) => ({ start, end, tz, days: [] });

/**
 * One world loaded with {@link loadDays} for the four tests that build its closed days (loading and
 * building 33 days cost more than any of their checks). The ask-ai test runs first: it answers
 * before anything is built, then builds. The others get the count of that one pass
 * ({@link buildShared}), or make it themselves when run alone; the late-event test, which changes a
 * day, runs last. The world outlives the test that opened it, so those tests leave the sanitizers
 * off; the last of them closes it.
 */
const sharedWorld = sharedAnalyticsWorld((world) => loadDays(world));
let built: Promise<number> | undefined;
/** The shared world's one pass of buildClosedDays(): how many days it built. */
const buildShared = (world: World) => built ??= world.w.deps.analyticsVisits.buildClosedDays();
const SHARED = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "GET /v1/analytics/ask-ai: the same answer, with compare, before and after closed days are built",
  SHARED,
  async () => {
    const world = await sharedWorld();
    // Nothing is built yet: the first answer reads every day's events.
    assert.deepEqual((await world.w.deps.analyticsVisits.plan("2026-10-20", "2026-11-22")).files, []);
    const get = async () => {
      const res = await world.w.app.request(
        "/v1/analytics/ask-ai?start_date=2026-11-01&end_date=2026-11-22&timezone=America/New_York&compare=previous_period",
        { headers: { ...bearer(world.key), "cache-control": "no-cache" } },
      );
      assert.equal(res.status, 200);
      const body = await res.json();
      delete body.meta.generated_at;
      return body;
    };
    const before = await get();
    assert.equal(await buildShared(world), 33);
    // The compare memo is keyed by the event files, which did not change: clear it so both windows are computed.
    for await (const e of world.w.deps.kv.list({ prefix: ["an_cache"] })) await world.w.deps.kv.delete(e.key);
    assert.deepEqual(await get(), before);
    assert.ok(before.summary.sessions > 0 && before.comparison.summary.sessions > 0);
  },
);

Deno.test(
  "visit figures: the time rollup gives the same figures from closed days' figure files as from their events",
  SHARED,
  async () => {
    const world = await sharedWorld();
    const { deps } = world.w;
    const visits = deps.analyticsVisits;
    // The clock stands at 2026-11-22T12:00Z: every day up to 2026-11-21 is closed, today is not.
    assert.equal(await buildShared(world), 33);
    const plan = await visits.plan("2026-10-20", "2026-11-22");
    assert.equal(plan.files.length, 33);
    assert.deepEqual(plan.rawDays, ["2026-11-22"]);
    // The data holds each kind of row: single-step visits with one and with several value sets
    // (sponsored conversations change deployment type and creative), visits kept per step, and
    // whole visits over several steps with one value set.
    const kinds = await deps.duckdb.withConnection(async (c) =>
      (await c.runAndReadAll(
        `SELECT kind, conflicts > 0 AS shared, count(*)::INT AS n FROM read_parquet([${
          plan.files.map((f) => `'${f}'`).join(", ")
        }]) GROUP BY ALL ORDER BY ALL`,
      )).getRowObjectsJS()
    );
    assert.deepEqual(kinds.map((k) => `${k.kind}${k.shared ? "+" : ""}`), ["c", "c+", "f", "n", "u"]);

    const cases: [string, string, string, Interval, Partial<BlockFilters>][] = [
      ["2026-10-24", "2026-11-22", "UTC", "day", {}],
      ["2026-10-20", "2026-11-21", "UTC", "hour", {}],
      ["2026-11-01", "2026-11-22", "America/New_York", "hour", {}],
      ["2026-11-14", "2026-11-20", "America/New_York", "day", {}], // starts inside the visit s_cut
      ["2026-11-07", "2026-11-13", "America/New_York", "day", {}], // ends inside it
      ["2026-11-01", "2026-11-21", "America/Havana", "day", {}], // two local midnights on 2026-11-01
      ["2026-10-25", "2026-11-22", "Asia/Kathmandu", "day", { ai_agent: "am_main" }], // +05:45
      ["2026-10-25", "2026-11-22", "Australia/Adelaide", "week", { deployment_type: "sponsored_conversation" }],
      ["2026-10-20", "2026-11-22", "Europe/Paris", "month", { deployment_type: "embed" }],
      ["2026-11-10", "2026-11-20", "Pacific/Chatham", "day", { creative_id: "cr_1001" }], // +13:45
      ["2026-11-10", "2026-11-22", "UTC", "day", { placement_id: "pl_top", ai_agent: "am_second" }],
    ];
    for (const [start, end, tz, interval, extra] of cases) {
      const w = window(start, end, tz);
      const filters = filtersOf(world.tenantId, extra);
      const fromEvents = await blockCounts({ engine: deps.analytics }, w, filters, { interval });
      const fromFigures = await blockCounts({ engine: deps.analytics, visits }, w, filters, { interval });
      assert.ok(fromEvents.size > 0, `${tz} ${interval}: the case has data`);
      assert.deepEqual(
        [...fromFigures],
        [...fromEvents],
        `${start}..${end} ${tz} ${interval} ${JSON.stringify(extra)}`,
      );
    }
    // Another tenant's events are in the same figure files and never counted here.
    const other = await blockCounts({ engine: deps.analytics, visits }, window("2026-11-21", "2026-11-21", "UTC"), {
      ...filtersOf(world.tenantId),
      ai_agent: "am_other",
    }, { interval: "day" });
    assert.equal(other.size, 0);
  },
);

Deno.test("visit figures: a visit written across UTC midnight (older data) counts as one session a day on both paths when one of its days is built", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const scope = {
    tenantId: world.tenantId,
    widgets: [{ id: "wd_main", aiModelId: "am_main", deploymentType: "embed", origin: "https://news.example" }],
    campaigns: [],
  };
  // Two events of one visit, five minutes either side of midnight, as a version before sessions
  // ended at midnight could write them; both days also hold ordinary traffic.
  const rows = [
    ...generateDay({ scope, date: "2026-11-19", events: 60, seed: 1 }),
    ...generateDay({ scope, date: "2026-11-20", events: 60, seed: 2 }),
  ];
  const load = rows.find((r) => r.event_type === "widget_load")!;
  for (const ts of ["2026-11-19T23:55:00Z", "2026-11-20T00:05:00Z"]) {
    rows.push({ ...load, event_id: crypto.randomUUID(), ts_ms: Date.parse(ts), visit_id: 42, visit_start: false });
  }
  await writeRowsAsParquet(deps.duckdb, deps.analytics.eventsDir, uuidv7(deps.clock), rows);
  deps.analytics.refresh();
  const w = window("2026-11-19", "2026-11-20", "UTC");
  const filters = filtersOf(world.tenantId);
  const fromEvents = await blockCounts({ engine: deps.analytics }, w, filters, { interval: "day" });
  assert.equal(await deps.analyticsVisits.build("2026-11-19"), true);
  const plan = await deps.analyticsVisits.plan("2026-11-19", "2026-11-20");
  assert.equal(plan.files.length, 1);
  assert.deepEqual(plan.rawDays, ["2026-11-20"]);
  const mixed = await blockCounts({ engine: deps.analytics, visits: deps.analyticsVisits }, w, filters, {
    interval: "day",
  });
  assert.deepEqual([...mixed], [...fromEvents]);
});

Deno.test("visit figures: only days closed for two hours are built, figures of removed days go, and a window off 15-minute edges reads events", async () => {
  await using world = await analyticsWorld();
  await loadGeneratedDays(world, { from: "2026-11-20", to: "2026-11-22", events: 40, seed: 9 });
  world.w.deps.analytics.refresh();
  const visits = world.w.deps.analyticsVisits;
  world.w.clock.set("2026-11-22T01:59:00Z");
  assert.equal(await visits.buildClosedDays(), 1); // 2026-11-20 only: 2026-11-21 ended 1 h 59 min ago
  world.w.clock.set("2026-11-22T02:00:00Z");
  assert.equal(await visits.buildClosedDays(), 1);
  assert.equal(await visits.buildClosedDays(), 0);
  assert.deepEqual((await visits.plan("2026-11-19", "2026-11-22")).rawDays, ["2026-11-22"]);
  // Retention removed a day's events: its figures go on the next pass.
  const figuresOf = (day: string) => `${world.w.dataDir}/derived/visits/date=${day}`;
  assert.ok((await Deno.stat(figuresOf("2026-11-20"))).isDirectory);
  await Deno.remove(`${world.w.deps.analytics.eventsDir}/date=2026-11-20`, { recursive: true });
  assert.equal(await visits.buildClosedDays(), 0);
  await assert.rejects(() => Deno.stat(figuresOf("2026-11-20")), Deno.errors.NotFound);
  assert.ok((await Deno.stat(figuresOf("2026-11-21"))).isDirectory);
  // Local mean time offsets (seconds) put a window's edges off the 15-minute steps.
  assert.equal(VisitCube.fits(Date.parse("2026-11-20T00:00:00Z"), Date.parse("2026-11-21T05:45:00Z")), true);
  assert.equal(VisitCube.fits(Date.parse("1880-01-01T04:56:02Z"), Date.parse("1880-01-02T04:56:02Z")), false);
});

Deno.test(
  "GET /v1/analytics/dashboard: its panels read closed days' visit figures and the compare memo, as their own endpoints do",
  SHARED,
  async () => {
    const world = await sharedWorld();
    const { deps } = world.w;
    assert.ok(await buildShared(world) > 0);
    const ran: string[] = [];
    const query = deps.analytics.query;
    deps.analytics.query = (name, params) => (ran.push(name), query.call(deps.analytics, name, params));
    const res = await world.w.app.request(
      "/v1/analytics/dashboard?start_date=2026-11-10&end_date=2026-11-21&compare=previous_period",
      { headers: bearer(world.key) },
    );
    assert.equal(res.status, 200);
    await res.text();
    // The whole days of the view come from their figure files, not from every event again.
    assert.ok(ran.includes("ask_ai_by_time_derived"), ran.join());
    // The earlier window's counts were kept: the endpoint of the same view finds them (one window computed).
    ran.length = 0;
    const own = await world.w.app.request(
      "/v1/analytics/ask-ai?start_date=2026-11-10&end_date=2026-11-21&compare=previous_period",
      { headers: { ...bearer(world.key), "cache-control": "no-cache" } },
    );
    assert.equal(own.status, 200);
    await own.body?.cancel();
    assert.equal(ran.filter((n) => n.startsWith("ask_ai_by_time")).length, 1, ran.join());
    deps.analytics.query = query; // the engine's own again, for the next test of the shared world
  },
);

Deno.test(
  "visit figures: a late event sends its day back to the events until the day is built again",
  SHARED,
  async () => {
    // The last test of the shared world (its late event changes a day the others read) closes it.
    await using world = await sharedWorld();
    const { deps } = world.w;
    const visits = deps.analyticsVisits;
    await buildShared(world);
    const w = window("2026-11-10", "2026-11-21", "UTC");
    const filters = filtersOf(world.tenantId);
    const before = await blockCounts({ engine: deps.analytics, visits }, w, filters, { interval: "day" });

    const widget = (await deps.repos.widgets.get("wd_main"))!;
    await deps.events.ingest([{ event_type: "widget_load", session_id: "s_late", ts: "2026-11-15T09:00:00Z" }], {
      source: "widget",
      widget,
    });
    await deps.events.flush();
    deps.analytics.refresh();
    assert.deepEqual((await visits.plan("2026-11-15", "2026-11-15")).rawDays, ["2026-11-15"]);
    const late = await blockCounts({ engine: deps.analytics, visits }, w, filters, { interval: "day" });
    assert.equal(late.get("2026-11-15")!.sessions, before.get("2026-11-15")!.sessions + 1);
    assert.equal(late.get("2026-11-15")!.widget_loads, before.get("2026-11-15")!.widget_loads + 1);

    assert.equal(await visits.buildClosedDays(), 1);
    assert.deepEqual((await visits.plan("2026-11-15", "2026-11-15")).rawDays, []);
    assert.deepEqual(
      [...await blockCounts({ engine: deps.analytics, visits }, w, filters, { interval: "day" })],
      [...late],
    );
  },
);
