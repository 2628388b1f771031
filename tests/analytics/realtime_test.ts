import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { parquetIdCounts } from "./_count.ts";
import { analyticsWorld } from "./_fixture.ts";

Deno.test("GET /v1/analytics/realtime: last 5 and 30 minutes, counting events not yet flushed, none twice", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  const at = (minAgo: number) => new Date(w.clock.now().getTime() - minAgo * 60_000).toISOString();
  // Flushed: session s1 (20 min ago: load + query), session s2 (2 min ago: load, query, click).
  await w.deps.events.ingest([
    { event_type: "widget_load", session_id: "s1", ts: at(20) },
    { event_type: "query", session_id: "s1", ts: at(19), interaction_type: "free_form", prompt: "a" },
    { event_type: "widget_load", session_id: "s2", ts: at(2) },
    { event_type: "query", session_id: "s2", ts: at(2), interaction_type: "free_form", prompt: "b" },
    { event_type: "click", session_id: "s2", click_type: "article", ts: at(1) },
    // Older than 30 minutes: not counted.
    { event_type: "query", session_id: "s0", ts: at(45), interaction_type: "free_form", prompt: "old" },
  ], { source: "widget", widget });
  await w.deps.events.flush();
  // Acknowledged, still in the WAL: s2 again (a click) and a new session s3.
  await w.deps.events.ingest([
    { event_type: "click", session_id: "s2", click_type: "cta", ts: at(0.5) },
    { event_type: "widget_load", session_id: "s3", ts: at(3) },
    { event_type: "query", session_id: "s3", ts: at(3), interaction_type: "free_form", prompt: "c" },
  ], { source: "widget", widget });
  // Another tenant's live traffic never counts.
  const otherWidget = (await w.deps.repos.widgets.get("wd_other"))!;
  await w.deps.events.ingest([
    { event_type: "query", session_id: "o1", ts: at(1), interaction_type: "free_form", prompt: "x" },
  ], { source: "widget", widget: otherWidget });

  const get = async () => {
    const res = await w.app.request("/v1/analytics/realtime", { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-cache"), "DISABLED");
    return await res.json();
  };
  const before = await get();
  assert.deepEqual(before.last_5_minutes, { active_sessions: 2, queries: 2, clicks: 2 });
  assert.deepEqual(before.last_30_minutes, { active_sessions: 3, queries: 3, clicks: 2 });
  assert.equal(before.unflushed_events, 3);
  // After the flush the same events are counted from Parquet: the same numbers.
  await w.deps.events.flush();
  const after = await get();
  assert.deepEqual(after.last_5_minutes, before.last_5_minutes);
  assert.deepEqual(after.last_30_minutes, before.last_30_minutes);
  assert.equal(after.unflushed_events, 0);

  const scoped = await w.app.request("/v1/analytics/realtime?widget_id=wd_second", { headers: bearer(world.key) });
  assert.deepEqual((await scoped.json()).last_30_minutes, { active_sessions: 0, queries: 0, clicks: 0 });
  const foreign = await w.app.request("/v1/analytics/realtime?widget_id=wd_other", { headers: bearer(world.key) });
  assert.equal(foreign.status, 400);
  const other = await w.app.request("/v1/analytics/realtime", { headers: bearer(world.other.key) });
  assert.deepEqual((await other.json()).last_5_minutes, { active_sessions: 1, queries: 1, clicks: 0 });
  const tz = await w.app.request("/v1/analytics/realtime?timezone=Europe/Paris", { headers: bearer(world.key) });
  assert.equal((await tz.json()).meta.timezone, "Europe/Paris");
  const anon = await w.app.request("/v1/analytics/realtime");
  assert.equal(anon.status, 401);
});

Deno.test("GET /v1/analytics/realtime: a batch retried before the flush (same event ids twice in the WAL) counts once", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  const at = (minAgo: number) => new Date(w.clock.now().getTime() - minAgo * 60_000).toISOString();
  const batch = [
    { event_id: "ev_retry_1", event_type: "widget_load", session_id: "s9", ts: at(2) },
    {
      event_id: "ev_retry_2",
      event_type: "query",
      session_id: "s9",
      ts: at(2),
      interaction_type: "free_form",
      prompt: "q",
    },
    { event_id: "ev_retry_3", event_type: "click", session_id: "s9", click_type: "article", ts: at(1) },
  ];
  // The widget's first answer was lost: it sends the same batch again before the flusher runs.
  await w.deps.events.ingest(batch, { source: "widget", widget });
  await w.deps.events.ingest(batch, { source: "widget", widget });
  const get = async () => {
    const res = await w.app.request("/v1/analytics/realtime", { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    return await res.json();
  };
  const before = await get();
  assert.deepEqual(before.last_5_minutes, { active_sessions: 1, queries: 1, clicks: 1 });
  assert.equal(before.unflushed_events, 3);
  // The flush stores each event once; the figures do not move.
  await w.deps.events.flush();
  const after = await get();
  assert.deepEqual(after.last_5_minutes, before.last_5_minutes);
  assert.deepEqual(after.last_30_minutes, before.last_30_minutes);
});

Deno.test("GET /v1/analytics/realtime: copies of one event id count as the flush stores them, before and after it (across midnight; a copy of an event stored earlier that day)", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  const query = (id: string, ts: string) => ({
    event_id: id,
    event_type: "query",
    session_id: "s_copies",
    ts,
    interaction_type: "free_form",
    prompt: "q",
  });
  const ingest = (e: Record<string, unknown>) => w.deps.events.ingest([e], { source: "widget", widget });
  const queries = async () => {
    const res = await w.app.request("/v1/analytics/realtime", { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    const body = await res.json();
    return [body.last_5_minutes.queries, body.last_30_minutes.queries];
  };
  const stored = async (id: string) => (await parquetIdCounts(w.deps.duckdb, w.deps.analytics.eventsDir)).get(id);

  // Stored at 09:00; a copy sent at 11:58 is the same event (that UTC day's id): the flush drops it, so
  // the last 30 minutes hold no query, before the flush as after.
  w.clock.set("2026-11-22T12:00:00Z");
  await ingest(query("ev_copy_same_day", "2026-11-22T09:00:00Z"));
  await w.deps.events.flush();
  await ingest(query("ev_copy_same_day", "2026-11-22T11:58:00Z"));
  assert.deepEqual(await queries(), [0, 0], "a copy of an event stored earlier that day, still in the log");
  await w.deps.events.flush();
  assert.deepEqual(await queries(), [0, 0], "the same, flushed");
  assert.equal(await stored("ev_copy_same_day"), 1);

  // A retried batch across midnight, its copies 20 minutes apart: one event (stamped 23:50, the copy the
  // flush keeps) in the log, and once flushed.
  w.clock.set("2026-11-23T00:12:00Z");
  await ingest(query("ev_copy_midnight", "2026-11-22T23:50:00Z"));
  await ingest(query("ev_copy_midnight", "2026-11-23T00:10:00Z"));
  assert.deepEqual(await queries(), [0, 1], "copies across midnight, in the log");
  await w.deps.events.flush();
  assert.deepEqual(await queries(), [0, 1], "the same, flushed");
  assert.equal(await stored("ev_copy_midnight"), 1);
});

Deno.test("GET /v1/analytics/realtime: live copies of a few ids across midnight, flushed at random points, never move the figures with a flush", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const get = async () => {
    const res = await w.app.request("/v1/analytics/realtime", { headers: bearer(world.key) });
    const body = await res.json();
    return [body.last_5_minutes, body.last_30_minutes];
  };
  const runs: number[] = [];
  for (const s of [7, 5, 10, 17, 23]) {
    seed = s;
    // Live traffic from 23:40 to 00:28: each round's events stamped in the 10 minutes before the clock
    // (the widget's own bound) with copies of six ids, the log flushed every few rounds.
    let now = Date.parse("2026-11-22T23:40:00Z") + s * 60_000;
    let unflushed = 0;
    for (let round = 0; round < 12; round++, now += 4 * 60_000) {
      w.clock.set(now);
      const events = Array.from({ length: 4 }, () => {
        const n = Math.floor(next() * 6);
        const ts = new Date(now - Math.floor(next() * 10 * 60_000)).toISOString();
        return n % 2
          ? { event_id: `ev_${s}_copy_${n}_query`, event_type: "query", session_id: `s${n}`, ts, prompt: "q" }
          : {
            event_id: `ev_${s}_copy_${n}_click`,
            event_type: "click",
            session_id: `s${n}`,
            ts,
            click_type: "article",
          };
      });
      await w.deps.events.ingest(events, { source: "widget", widget });
      if (++unflushed < 3 && next() < 0.6) continue;
      unflushed = 0;
      const before = await get();
      await w.deps.events.flush();
      assert.deepEqual(await get(), before, `seed ${s}, round ${round}: the flush moved the figures`);
      runs.push(before[1].queries + before[1].clicks);
    }
  }
  assert.ok(runs.some((n) => n > 0), "the windows held events");
});
