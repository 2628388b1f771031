import assert from "node:assert/strict";
import { realtimeCounters } from "../../analytics/realtime.ts";
import { EventWal, ndjsonLine } from "../../analytics/wal.ts";
import { FixedClock } from "../../core/clock.ts";
import { rollupDepsOf } from "../../routes/analytics/rollup_deps.ts";
import { bearer } from "../_helpers.ts";
import { kvThrough, readVolumeCounting } from "../_kv_proxy.ts";
import { analyticsWorld } from "./_fixture.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

const MIN = 60_000;

/** A third tenant with its own widget, beside the fixture's two. */
async function thirdTenant(world: World) {
  const { w } = world;
  const third = await w.tenantWithKey("Third");
  const now = w.clock.now().toISOString();
  await w.deps.repos.aiModels.create({
    id: "am_third",
    tenantId: third.tenantId,
    name: "Third agent",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: now,
  });
  await w.deps.repos.widgets.create({
    id: "wd_third",
    tenantId: third.tenantId,
    name: "Third widget",
    aiModelId: "am_third",
    allowedOrigins: ["https://third.example"],
    deploymentType: "embed",
    createdAt: now,
  });
  return third;
}

Deno.test("GET /v1/analytics/realtime: exact figures over a mixed log (tenants, flushed and unflushed, retried, out of window)", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const third = await thirdTenant(world);
  const widget = async (id: string) => (await w.deps.repos.widgets.get(id))!;
  const ingest = async (id: string, events: Record<string, unknown>[]) =>
    await w.deps.events.ingest(events, { source: "widget", widget: await widget(id) });
  const at = (minAgo: number) => new Date(w.clock.now().getTime() - minAgo * MIN).toISOString();
  const q = (session: string, minAgo: number, extra: Record<string, unknown> = {}) => ({
    event_type: "query",
    session_id: session,
    ts: at(minAgo),
    interaction_type: "free_form",
    prompt: "p",
    ...extra,
  });
  const load = (session: string, minAgo: number, extra: Record<string, unknown> = {}) => ({
    event_type: "widget_load",
    session_id: session,
    ts: at(minAgo),
    ...extra,
  });
  const click = (session: string, minAgo: number, extra: Record<string, unknown> = {}) => ({
    event_type: "click",
    session_id: session,
    click_type: "article",
    ts: at(minAgo),
    ...extra,
  });

  // Flushed to Parquet.
  await ingest("wd_main", [
    load("a1", 20),
    q("a1", 19),
    load("a2", 4),
    q("a2", 4),
    q("a0", 45), // older than 30 minutes
    q("a9", 4, { event_id: "ev_flushed_then_retried" }),
  ]);
  await ingest("wd_other", [load("o1", 10), q("o1", 9), click("o1", 2)]);
  await ingest("wd_third", [q("t1", 25), q("t1", 3)]);
  await w.deps.events.flush();

  // Still in the log.
  await ingest("wd_main", [
    click("a2", 0.5),
    load("a3", 3),
    q("a3", 3),
    q("a4", -4), // up to 5 minutes ahead (the client's clock)
    q("a5", 31), // older than 30 minutes
    q("a9", 4, { event_id: "ev_flushed_then_retried" }), // its first answer lost after the flush
  ]);
  await ingest("wd_second", [q("b1", 10), click("b1", 6), q("b1", 4.9)]);
  const retried = [load("a7", 2, { event_id: "ev_retry_1" }), q("a7", 2, { event_id: "ev_retry_2" })];
  await ingest("wd_main", retried);
  await ingest("wd_main", retried);
  await ingest("wd_other", [q("o2", 1), q("o2", 1), click("o2", 0)]);
  await ingest("wd_third", [load("t2", 40), q("t2", 29), click("t2", 28)]);
  // The service's own events of several tenants in one batch.
  await w.deps.events.record([
    { event_type: "query", ai_agent: "am_main", ts: at(1), interaction_type: "search", prompt: "s" },
    { event_type: "query", ai_agent: "am_other", ts: at(12), interaction_type: "search", prompt: "s" },
    { event_type: "click", ai_agent: "am_third", ts: at(2), click_type: "article" },
  ]);

  const get = async (key: string, query = "") => {
    const res = await w.app.request(`/v1/analytics/realtime${query}`, { headers: bearer(key) });
    assert.equal(res.status, 200);
    const body = await res.json();
    return {
      last_5_minutes: body.last_5_minutes,
      last_30_minutes: body.last_30_minutes,
      unflushed_events: body.unflushed_events,
    };
  };
  const figures = async () => ({
    main: await get(world.key),
    mainWidget: await get(world.key, "?widget_id=wd_main"),
    secondWidget: await get(world.key, "?widget_id=wd_second"),
    other: await get(world.other.key),
    third: await get(third.key),
  });
  const before = await figures();
  assert.deepEqual(before.main, {
    // Sessions a2, a3, a4, a7, a9, b1 (its query 4.9 minutes ago); the service's query has none.
    last_5_minutes: { active_sessions: 6, queries: 7, clicks: 1 },
    // Sessions a1 too; a0 and a5 are older.
    last_30_minutes: { active_sessions: 7, queries: 9, clicks: 2 },
    unflushed_events: 11,
  });
  assert.deepEqual(before.mainWidget, {
    last_5_minutes: { active_sessions: 5, queries: 6, clicks: 1 },
    last_30_minutes: { active_sessions: 6, queries: 7, clicks: 1 },
    unflushed_events: 8,
  });
  assert.deepEqual(before.secondWidget, {
    last_5_minutes: { active_sessions: 1, queries: 1, clicks: 0 },
    last_30_minutes: { active_sessions: 1, queries: 2, clicks: 1 },
    unflushed_events: 3,
  });
  assert.deepEqual(before.other, {
    last_5_minutes: { active_sessions: 2, queries: 2, clicks: 2 },
    last_30_minutes: { active_sessions: 2, queries: 4, clicks: 2 },
    unflushed_events: 4,
  });
  assert.deepEqual(before.third, {
    last_5_minutes: { active_sessions: 1, queries: 1, clicks: 1 },
    last_30_minutes: { active_sessions: 2, queries: 3, clicks: 2 },
    unflushed_events: 3,
  });
  // Once everything is flushed the same events count from Parquet alone: the same figures.
  await w.deps.events.flush();
  const after = await figures();
  for (const [name, f] of Object.entries(after)) {
    const b = before[name as keyof typeof before];
    assert.deepEqual(f, { ...b, unflushed_events: 0 }, name);
  }
});

Deno.test("realtime counters: a tenant's read of the event log does not grow with other tenants' events", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  await thirdTenant(world);
  const at = (minAgo: number) => new Date(w.clock.now().getTime() - minAgo * MIN).toISOString();
  const widget = async (id: string) => (await w.deps.repos.widgets.get(id))!;
  await w.deps.events.ingest([
    { event_type: "widget_load", session_id: "mine", ts: at(3) },
    { event_type: "query", session_id: "mine", ts: at(2), interaction_type: "free_form", prompt: "p" },
  ], { source: "widget", widget: await widget("wd_main") });

  const volume = { reads: 0, entries: 0, bytes: 0 };
  const deps = { ...rollupDepsOf(w.deps), wal: new EventWal(readVolumeCounting(w.deps.kv, volume), w.clock) };
  const measure = async () => {
    Object.assign(volume, { reads: 0, entries: 0, bytes: 0 });
    const body = await realtimeCounters(deps, world.tenantId, {});
    return { volume: { ...volume }, figures: [body.last_5_minutes, body.last_30_minutes, body.unflushed_events] };
  };
  const alone = await measure();
  assert.deepEqual(alone.figures, [
    { active_sessions: 1, queries: 1, clicks: 0 },
    { active_sessions: 1, queries: 1, clicks: 0 },
    2,
  ]);

  // 1,500 events of another tenant in the same minutes, and a service batch of a third.
  for (let b = 0; b < 3; b++) {
    await w.deps.events.ingest(
      Array.from({ length: 500 }, (_, i) => ({
        event_type: "query",
        session_id: `o${b}-${i % 50}`,
        ts: at((i % 30) / 10),
        interaction_type: "free_form",
        prompt: "x".repeat(200),
      })),
      { source: "widget", widget: await widget("wd_other") },
    );
  }
  await w.deps.events.record(
    Array.from(
      { length: 200 },
      () => ({ event_type: "click", ai_agent: "am_third", ts: at(2), click_type: "article" }),
    ),
  );
  const crowded = await measure();
  assert.deepEqual(crowded.figures, alone.figures);
  assert.deepEqual(crowded.volume, alone.volume);
  assert.ok(alone.volume.bytes < 5_000, `read ${alone.volume.bytes} bytes for two events`);
});

Deno.test("the event log's tenant index: entries only for minutes a realtime window can reach, each expiring, none left usable after a flush", async () => {
  await using kv = await Deno.openKv(":memory:");
  const clock = new FixedClock("2026-11-22T12:00:30Z");
  const now = clock.now().getTime();
  const indexed: { key: Deno.KvKey; expireIn?: number }[] = [];
  const recording = kvThrough(kv, {
    atomic: () => ({
      set: (key, _value, options) => {
        if (key[0] === "ev_wal_ix") indexed.push({ key, expireIn: options?.expireIn });
      },
    }),
  });
  const wal = new EventWal(recording, clock);
  const rows = [
    { event_id: "e1", tenant_id: "tn_a", ts_ms: now - 40 * MIN }, // no window reaches it any more
    { event_id: "e2", tenant_id: "tn_a", ts_ms: now - 29 * MIN },
    { event_id: "e3", tenant_id: "tn_a", ts_ms: now },
    { event_id: "e4", tenant_id: "tn_a", ts_ms: now + 1 }, // the same minute: the same entry
    { event_id: "e5", tenant_id: "tn_a", ts_ms: now + 5 * MIN },
    { event_id: "e6", tenant_id: "tn_b", ts_ms: now },
  ];
  assert.ok(await wal.append("0195f0c0-0000-7000-8000-00000000000a", rows.map(ndjsonLine), rows));
  const minute = (ms: number) => Math.floor(ms / MIN);
  assert.deepEqual(
    indexed.map((x) => [x.key[1], x.key[2]]),
    [["tn_a", minute(now - 29 * MIN)], ["tn_a", minute(now)], ["tn_a", minute(now + 5 * MIN)], ["tn_b", minute(now)]],
  );
  for (const x of indexed) assert.ok(x.expireIn! > 0 && x.expireIn! <= 41 * MIN, String(x.expireIn));

  const chunks = await Array.fromAsync(wal.tenantChunks("tn_a", now - 30 * MIN, now + 5 * MIN));
  assert.equal(chunks.length, 1);
  assert.equal(await Array.fromAsync(wal.tenantChunks("tn_c", now - 30 * MIN, now + 5 * MIN)).then((c) => c.length), 0);
  // Flushed: the entries leave with the chunk.
  await wal.delete(chunks.map((c) => c.key), chunks[0]!.bytes.byteLength);
  assert.deepEqual(await Array.fromAsync(wal.tenantChunks("tn_a", now - 30 * MIN, now + 5 * MIN)), []);
});

Deno.test("realtime counters: the index entries flushed chunks leave behind cost the read of the event log nothing", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const at = (minAgo: number) => new Date(w.clock.now().getTime() - minAgo * MIN).toISOString();
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  const mine = (session: string) =>
    w.deps.events.ingest([
      { event_type: "widget_load", session_id: session, ts: at(3) },
      { event_type: "query", session_id: session, ts: at(2), interaction_type: "free_form", prompt: "p" },
    ], { source: "widget", widget });
  const volume = { reads: 0, entries: 0, bytes: 0 };
  const deps = { ...rollupDepsOf(w.deps), wal: new EventWal(readVolumeCounting(w.deps.kv, volume), w.clock) };
  const measure = async () => {
    Object.assign(volume, { reads: 0, entries: 0, bytes: 0 });
    const body = await realtimeCounters(deps, world.tenantId, {});
    return { volume: { ...volume }, unflushed: body.unflushed_events };
  };
  await mine("first");
  const alone = await measure();
  assert.equal(alone.unflushed, 2);
  await w.deps.events.flush();

  // 200 of the tenant's batches over the window's minutes, flushed: their index entries stay until they expire.
  for (let b = 0; b < 200; b++) {
    await w.deps.events.ingest(
      [{ event_type: "query", session_id: `s${b}`, ts: at(b % 25), interaction_type: "free_form", prompt: "p" }],
      { source: "widget", widget },
    );
  }
  await w.deps.events.flush();
  assert.deepEqual((await measure()).volume, { reads: 0, entries: 0, bytes: 0 }, "an empty log: nothing read");
  // A batch after them, still in the log: read as the first was, the leftovers not at all.
  await mine("again");
  const later = await measure();
  assert.equal(later.unflushed, 2);
  assert.deepEqual([later.volume.reads, later.volume.entries], [alone.volume.reads, alone.volume.entries]);
  // The same bytes but for the digits of each row's random visit id.
  assert.ok(Math.abs(later.volume.bytes - alone.volume.bytes) < 16, `${later.volume.bytes} bytes`);
});

Deno.test("realtime counters: 200,000 of the tenant's events in the log are read (no RangeError from spreading them)", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const now = w.clock.now().getTime();
  const wal = new EventWal(w.deps.kv, w.clock);
  // Straight into the log (a tenant's share holds this many): 200 batches of 1,000 queries over 20 minutes.
  for (let b = 0; b < 200; b++) {
    const rows = Array.from({ length: 1_000 }, (_, i) => ({
      event_id: `e${b}-${i}`,
      ts_ms: now - (b % 20) * MIN,
      tenant_id: world.tenantId,
      ai_agent: null,
      event_type: "query",
      visit_id: b,
    }));
    assert.ok(await wal.append(`b${String(b).padStart(4, "0")}`, rows.map(ndjsonLine), rows));
  }
  // The query's parameters, as the counters pass them (the figures' SQL is the other tests' concern).
  const deps = rollupDepsOf(w.deps);
  const seen: Record<string, unknown>[] = [];
  const engine = {
    timezones: () => deps.engine.timezones(),
    query: (_name: string, params: Record<string, unknown>) => (seen.push(params), Promise.resolve([{}])),
  } as unknown as typeof deps.engine;
  const body = await realtimeCounters({ ...deps, engine, wal }, world.tenantId, {});
  assert.equal(body.unflushed_events, 200_000);
  const [params] = seen;
  assert.equal(JSON.parse(params!.wal as string).length, 200_000);
  const day = new Date(now).toISOString().slice(0, 10);
  // The copies' UTC day, widened by the duplicate window either side.
  assert.deepEqual([params!.from_date, params!.to_date], [
    new Date(Date.parse(day) - 86_400_000).toISOString().slice(0, 10),
    new Date(Date.parse(day) + 86_400_000).toISOString().slice(0, 10),
  ]);
});
