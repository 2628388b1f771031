import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
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
