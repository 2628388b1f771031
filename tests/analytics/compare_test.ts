import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadGeneratedDays, sharedAnalyticsWorld } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

/**
 * Generated traffic of the tenant's two widgets over 2026-11-06 .. 2026-11-22 (every window below, in
 * every zone: Kolkata's 2026-11-07 starts on 2026-11-06 UTC), plus session-less queries. Days no window
 * reads are left out: they cost every request time and were in no figure compared.
 */
async function loadDays(world: World) {
  const { deps } = world.w;
  await loadGeneratedDays(world, { from: "2026-11-06", to: "2026-11-22", events: 300, seed: 40 });
  // Server-side queries (no session) on both sides of local and UTC midnights.
  await deps.events.record(
    ["2026-11-14T18:20:00Z", "2026-11-14T18:40:00Z", "2026-11-14T23:59:00Z", "2026-11-15T04:50:00Z"].map((ts) => ({
      event_type: "query",
      ts,
      ai_agent: "am_main",
      interaction_type: "search",
      prompt: "Best laptop for students",
    })),
  );
  await deps.events.flush();
  deps.analytics.refresh();
}

/**
 * One loaded world for the three tests that only read (each asks with `no-cache`, or for paths no
 * other test asks for): loading the days cost more than most of their requests. It outlives the
 * test that opened it, so those tests leave the sanitizers off; the last of them closes it. The
 * memo test counts its own memo entries and adds an event: it loads a world of its own.
 */
const sharedWorld = sharedAnalyticsWorld((world) => loadDays(world));
const SHARED = { sanitizeOps: false, sanitizeResources: false };

const get = async (world: World, path: string) => {
  const res = await world.w.app.request(`/v1/analytics/${path}`, {
    headers: { ...bearer(world.key), "cache-control": "no-cache" },
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
};

const memoEntries = async (world: World) => {
  let n = 0; // headers only (their chunks sit under longer keys)
  for await (const e of world.w.deps.kv.list({ prefix: ["an_cache", world.tenantId, "window-counts"] })) {
    if (e.key.length === 4) n++;
  }
  return n;
};

Deno.test(
  "compare: the comparison, computed or from the memo, equals the plain rollup of each window computed alone (filters, time zones)",
  SHARED,
  async (t) => {
    const world = await sharedWorld();
    const zones = ["UTC", "Asia/Kolkata", "America/New_York"]; // +05:30, -05:00 (after its DST change on 2026-11-01)
    const filters = ["", "&placement_id=pl_top", "&deployment_type=brand_agent", "&widget_id=wd_main"];
    for (const tz of zones) {
      for (const f of filters) {
        await t.step(`${tz}${f}`, async () => {
          const win = `timezone=${tz}${f}`;
          const a = await get(world, `ask-ai?start_date=2026-11-15&end_date=2026-11-22&compare=previous_period&${win}`);
          const now = await get(world, `ask-ai?start_date=2026-11-15&end_date=2026-11-22&${win}`);
          const before = await get(world, `ask-ai?start_date=2026-11-07&end_date=2026-11-14&${win}`);
          assert.ok(before.summary.sessions > 0 && before.summary.engagement_queries > 0);
          assert.deepEqual(a.summary, now.summary);
          assert.deepEqual(a.daily_breakdown, now.daily_breakdown);
          assert.deepEqual(a.comparison.summary, before.summary);
          assert.deepEqual(a.comparison.daily_breakdown, before.daily_breakdown);
          // Again: the earlier window now comes from the memo, with the same figures.
          const again = await get(
            world,
            `ask-ai?start_date=2026-11-15&end_date=2026-11-22&compare=previous_period&${win}`,
          );
          assert.deepEqual(again.comparison, a.comparison);
          assert.deepEqual(again.summary, a.summary);
        });
      }
    }

    await t.step("breakdown by local hour with compare: each window as computed alone", async () => {
      const win = "timezone=Asia/Kolkata&placement_id=pl_sidebar";
      const b = await get(
        world,
        `ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-22&compare=previous_period&${win}`,
      );
      const before = await get(
        world,
        `ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-17&end_date=2026-11-19&limit=1000&${win}`,
      );
      assert.deepEqual(b.comparison.summary, before.summary);
      assert.deepEqual(b.comparison.rows, before.rows);
    });
  },
);

Deno.test("compare: the earlier window's memo follows its files (a late event for an old day is counted)", async () => {
  await using world = await analyticsWorld();
  await loadDays(world);
  const path = "ask-ai?start_date=2026-11-15&end_date=2026-11-22&compare=previous_period&timezone=Asia/Kolkata";
  const first = await get(world, path);
  assert.equal(await memoEntries(world), 1);
  // A late query for 2026-11-10 (inside the earlier window) is flushed into that day's folder.
  await world.w.deps.events.record([{
    event_type: "query",
    ts: "2026-11-10T09:00:00Z",
    ai_agent: "am_main",
    interaction_type: "search",
    prompt: "Late question",
  }]);
  await world.w.deps.events.flush();
  const second = await get(world, path);
  assert.equal(second.comparison.summary.engagement_queries, first.comparison.summary.engagement_queries + 1);
  const plain = await get(world, "ask-ai?start_date=2026-11-07&end_date=2026-11-14&timezone=Asia/Kolkata");
  assert.deepEqual(second.comparison.summary, plain.summary);
  assert.deepEqual(second.comparison.daily_breakdown, plain.daily_breakdown);
  assert.equal(await memoEntries(world), 2, "a new entry under the new listing");
});

Deno.test(
  "compare: windows that share a day (366 days against the year before) each equal their plain rollup",
  SHARED,
  async () => {
    const world = await sharedWorld();
    const a = await get(world, "ask-ai?start_date=2025-11-22&end_date=2026-11-22&compare=previous_year");
    assert.equal(a.comparison.start_date, "2024-11-22");
    assert.equal(a.comparison.end_date, "2025-11-22");
    const before = await get(world, "ask-ai?start_date=2024-11-22&end_date=2025-11-22");
    assert.deepEqual(a.comparison.summary, before.summary);
    const now = await get(world, "ask-ai?start_date=2025-11-22&end_date=2026-11-22");
    assert.deepEqual(a.summary, now.summary);
  },
);

Deno.test(
  "compare on sponsored-conversations and session-intelligence: the comparison is the earlier window's own answer, with the change per metric",
  SHARED,
  async () => {
    // The last test of the shared world closes it.
    await using world = await sharedWorld();
    for (const tz of ["UTC", "America/New_York"]) {
      const now = `start_date=2026-11-15&end_date=2026-11-22&timezone=${tz}`;
      const before = `start_date=2026-11-07&end_date=2026-11-14&timezone=${tz}`;

      const sp = await get(world, `sponsored-conversations?${now}&compare=previous_period`);
      const spNow = await get(world, `sponsored-conversations?${now}`);
      const spBefore = await get(world, `sponsored-conversations?${before}`);
      assert.ok(spBefore.summary.impressions > 0 && spBefore.summary.queries > 0);
      assert.deepEqual(sp.summary, spNow.summary);
      assert.deepEqual(sp.daily_breakdown, spNow.daily_breakdown);
      assert.deepEqual(sp.campaign_breakdown, spNow.campaign_breakdown);
      assert.deepEqual(sp.comparison.summary, spBefore.summary);
      assert.deepEqual(sp.comparison.daily_breakdown, spBefore.daily_breakdown);
      assert.equal(sp.comparison.compare, "previous_period");
      assert.deepEqual([sp.comparison.start_date, sp.comparison.end_date], ["2026-11-07", "2026-11-14"]);
      const q0 = spBefore.summary.queries;
      assert.equal(sp.comparison.change.queries, Math.round(((spNow.summary.queries - q0) * 10_000) / q0) / 100);
      assert.equal(spNow.comparison, undefined);

      const si = await get(world, `session-intelligence?${now}&compare=previous_period`);
      const siNow = await get(world, `session-intelligence?${now}`);
      const siBefore = await get(world, `session-intelligence?${before}`);
      assert.ok(siBefore.session_intelligence.summary.total_engaged_sessions > 0);
      const { comparison, ...rest } = si.session_intelligence;
      assert.deepEqual(rest, siNow.session_intelligence);
      assert.deepEqual(comparison.summary, siBefore.session_intelligence.summary);
      assert.deepEqual(comparison.engagement_time, siBefore.session_intelligence.engagement_time);
      const e0 = siBefore.session_intelligence.summary.total_engaged_sessions;
      const e1 = siNow.session_intelligence.summary.total_engaged_sessions;
      assert.equal(comparison.change.total_engaged_sessions, Math.round(((e1 - e0) * 10_000) / e0) / 100);
      assert.ok("median_engagement_time_per_session_seconds" in comparison.change);
    }
    // previous_year: a window with no events a year earlier compares with zeros (changes null).
    const py = await get(world, "session-intelligence?start_date=2026-11-15&end_date=2026-11-22&compare=previous_year");
    assert.equal(py.session_intelligence.comparison.start_date, "2025-11-15");
    assert.equal(py.session_intelligence.comparison.summary.total_engaged_sessions, 0);
    assert.equal(py.session_intelligence.comparison.change.total_engaged_sessions, null);
    // An unknown mode is refused as on ask-ai, without echoing it; the answer cache keeps compare and plain apart.
    const refusal = async (path: string) => {
      const res = await world.w.app.request(`/v1/analytics/${path}?compare=last_week<script>`, {
        headers: bearer(world.key),
      });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.ok(!JSON.stringify(body).includes("last_week"));
      return body;
    };
    const askAiRefusal = await refusal("ask-ai");
    for (const path of ["sponsored-conversations", "session-intelligence"]) {
      assert.deepEqual(await refusal(path), askAiRefusal);
      const plain = await world.w.app.request(`/v1/analytics/${path}?start_date=2026-11-16&end_date=2026-11-22`, {
        headers: bearer(world.key),
      });
      await plain.body?.cancel();
      const compared = await world.w.app.request(
        `/v1/analytics/${path}?start_date=2026-11-16&end_date=2026-11-22&compare=previous_period`,
        { headers: bearer(world.key) },
      );
      assert.equal(compared.headers.get("x-cache"), "MISS");
      const body = await compared.json();
      assert.ok((body.comparison ?? body.session_intelligence.comparison) !== undefined);
    }
  },
);
