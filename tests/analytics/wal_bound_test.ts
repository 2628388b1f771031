/**
 * Left by round 6: the events write-ahead log had no bound of its own. While the flush could not
 * write (a full disk, DuckDB failing, the lease lost for good) accepted events piled up in KV
 * without limit. Now the log's size is kept in KV beside it and a batch that would take it past
 * `EVENTS_WAL_MAX_BYTES` is refused 503 `server_busy` with `Retry-After` before anything of it is
 * stored; what was acknowledged is all flushed once the writer recovers, and the refusal clears.
 * Round 7 left: one tenant's batches could take the whole bound, and every other tenant's were then
 * refused; each tenant now has a part of it (`EVENTS_WAL_TENANT_SHARE_PCT`, a quarter by default).
 */
import assert from "node:assert/strict";
import { EventPipeline } from "../../analytics/events.ts";
import type { EventLimiters } from "../../core/public_limits.ts";
import { parquetIdCounts } from "./_count.ts";
import { analyticsWorld } from "./_fixture.ts";

const BOUND = 65_536;

/** What a widget batch from an unknown address to wd_main has left to charge: per address, per widget, per widget-day. */
const chargesLeft = async (limiters: EventLimiters) => [
  (await limiters.perAddress.peek("unknown")).remaining,
  (await limiters.perWidget.peek("wd_main")).remaining,
  (await limiters.perWidgetDaily.peek("wd_main")).remaining,
];

const batch = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `evt-${prefix}-${String(i).padStart(3, "0")}`,
    event_type: "query",
    ai_agent: "am_main",
    prompt: "Where should I travel?",
  }));

type AnalyticsWorld = Awaited<ReturnType<typeof analyticsWorld>>;

/** Posts a server batch of `events` with a tenant's API key. */
const postWithKey = (w: AnalyticsWorld["w"], key: string, events: unknown[]) =>
  w.app.request("/v1/events", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ events }),
  });

/** Makes the event writer fail, as DuckDB on a full disk does, until `restore()`. */
function failingWriter(w: AnalyticsWorld["w"]): { restore(): void } {
  const db = w.deps.duckdb;
  const write = db.withConnection;
  db.withConnection = () => Promise.reject(new Error("No space left on device"));
  return { restore: () => void (db.withConnection = write) };
}

/** Bytes of the chunks in the log, counted the slow way. */
async function walBytes(kv: Deno.Kv): Promise<number> {
  let n = 0;
  for await (const e of kv.list<Uint8Array>({ prefix: ["ev_wal"] })) n += e.value.byteLength;
  return n;
}

Deno.test("POST /v1/events: a log its flush cannot write is bounded; past the bound 503 server_busy, nothing acknowledged is lost", async () => {
  // One tenant may take the whole log here: the bound itself is under test.
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND), EVENTS_WAL_TENANT_SHARE_PCT: "100" });
  const { w } = world;
  const post = (events: unknown[]) => postWithKey(w, world.key, events);

  const writer = failingWriter(w);
  const acknowledged: string[] = [];
  let refused: Response | undefined;
  try {
    for (let b = 0; b < 120 && !refused; b++) {
      const events = batch(`b${b}`, 10);
      const res = await post(events);
      if (res.status === 202) {
        assert.deepEqual(await res.json(), { accepted: 10 });
        acknowledged.push(...events.map((e) => e.event_id));
        await assert.rejects(() => w.deps.events.flush());
      } else refused = res;
    }
    assert.ok(refused, "the log filled up");
    assert.equal(refused.status, 503);
    assert.deepEqual(await refused.json(), {
      message: "The event log is full until it is written out, try again shortly",
    });
    assert.equal(refused.headers.get("retry-after"), "10");
    assert.ok(acknowledged.length >= 40, `${acknowledged.length} events fit`);
    const held = await walBytes(w.deps.kv);
    assert.ok(held <= BOUND, `${held} bytes held`);
    assert.equal(await w.deps.events.wal.size(), held, "the kept size is the log's");

    // Another process on the same KV reads the same size and refuses too; the service's own
    // events (record) are refused the same way.
    const other = new EventPipeline({ ...w.deps, repos: w.deps.repos }, { ...w.deps.events.options });
    await assert.rejects(() => other.record(batch("other", 10)), { kind: "unavailable", code: "server_busy" });
    assert.equal(await walBytes(w.deps.kv), held, "nothing of a refused batch is stored");
  } finally {
    writer.restore();
  }

  // The writer recovers: every acknowledged event is flushed once, the log is empty, batches are taken again.
  await w.deps.events.flush();
  const counts = await parquetIdCounts(w.deps.duckdb, w.deps.analytics.eventsDir);
  assert.deepEqual(acknowledged.filter((id) => counts.get(id) !== 1), []);
  assert.equal(counts.size, acknowledged.length);
  assert.equal(await walBytes(w.deps.kv), 0);
  assert.equal(await w.deps.events.wal.size(), 0);
  const again = await post(batch("again", 10));
  assert.equal(again.status, 202);
  await again.body?.cancel();
});

Deno.test("EventWal size: a size left wrong by an older log (entries not counted, plans without bytes) is reset when a flush empties the log", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  // As an older version left it: more counted in than out (a written plan that kept no bytes).
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND)));
  await assert.rejects(() => w.deps.events.record(batch("stuck", 1)), { kind: "unavailable", code: "server_busy" });
  await w.deps.events.flush();
  assert.equal(await w.deps.events.wal.size(), 0);
  await w.deps.events.record(batch("freed", 1));
  assert.ok((await w.deps.events.wal.size()) > 0);
});

Deno.test("POST /v1/events: a widget batch refused because the log is full gives back what it was charged", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  // Full, as an older log or a stopped flush leaves it.
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND)));
  const limiters = w.deps.eventLimiters;
  const left = () => chargesLeft(limiters);
  const before = await left();
  for (let attempt = 0; attempt < 3; attempt++) {
    const res = await w.app.request("/v1/events", {
      method: "POST",
      headers: { origin: "https://news.example", "content-type": "application/json" },
      body: JSON.stringify({
        widget_id: "wd_main",
        events: [{ event_type: "widget_load", session_id: "s1" }, { event_type: "heartbeat", session_id: "s1" }],
      }),
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "10");
    await res.body?.cancel();
  }
  assert.deepEqual(await left(), before);
});

Deno.test("POST /v1/events: while the log is full a batch is refused unread, before its size or events are charged", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND)));
  const left = async () => (await w.deps.eventLimiters.perAddress.peek("unknown")).remaining;
  const before = await left();
  const send = (body: string) =>
    w.app.request("/v1/events", {
      method: "POST",
      headers: { origin: "https://news.example", "content-type": "application/json" },
      body,
    });
  // Read, each would be refused for what it holds (600 events: 422; not JSON: 400) and charged.
  const bodies = [
    JSON.stringify({ widget_id: "wd_main", events: Array(600).fill({ event_type: "heartbeat" }) }),
    `{"widget_id":"wd_main","events":[${"x".repeat(100_000)}`,
  ];
  for (const body of bodies) {
    const res = await send(body);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "10");
    await res.body?.cancel();
  }
  assert.equal(await left(), before);
  // A server batch too.
  const keyed = await w.app.request("/v1/events", {
    method: "POST",
    headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
    body: "not json",
  });
  assert.equal(keyed.status, 503);
  await keyed.body?.cancel();
});

Deno.test("POST /v1/events: a widget batch the log fills up under keeps its size charge and gets back the rest", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  const limiters = w.deps.eventLimiters;
  const left = () => chargesLeft(limiters);
  const before = await left();
  // Room when the batch is let in; none by the time it is stored (another process filled the log).
  const events = w.deps.events;
  const refuseWhenFull = events.refuseWhenFull;
  events.refuseWhenFull = async () => {
    await refuseWhenFull.call(events);
    await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND)));
  };
  const post = (events: unknown[]) =>
    w.app.request("/v1/events", {
      method: "POST",
      headers: { origin: "https://news.example", "content-type": "application/json" },
      body: JSON.stringify({ widget_id: "wd_main", events }),
    });
  try {
    // 100 KB of body in one event: charged 13 events for its size before it was decoded.
    const big = await post([{ event_type: "widget_load", note: "n".repeat(100_000) }]);
    assert.equal(big.status, 503);
    await big.body?.cancel();
    assert.deepEqual(await left(), [before[0]! - 13, before[1], before[2]]);
    await w.deps.kv.delete(["ev_wal_size", "added"]);
    // 20 small events: charged by the handler, all given back.
    const small = await post(Array(20).fill({ event_type: "heartbeat", session_id: "s1" }));
    assert.equal(small.status, 503);
    await small.body?.cancel();
    assert.deepEqual(await left(), [before[0]! - 13, before[1], before[2]]);
  } finally {
    events.refuseWhenFull = refuseWhenFull;
  }
});

Deno.test("POST /v1/events: a lone tenant's batches fill the log but for one part; past it that tenant is refused 503 server_busy while another tenant's batches are still taken", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  const post = (key: string, events: unknown[]) => postWithKey(w, key, events);
  const writer = failingWriter(w);
  const acknowledged: string[] = [];
  let refused: Response | undefined;
  try {
    // The first tenant sends batch after batch while its flush lags.
    for (let b = 0; b < 120 && !refused; b++) {
      const events = batch(`a${b}`, 10);
      const res = await post(world.key, events);
      if (res.status === 202) {
        await res.body?.cancel();
        acknowledged.push(...events.map((e) => e.event_id));
        await assert.rejects(() => w.deps.events.flush());
      } else refused = res;
    }
    assert.ok(refused, "its part filled up");
    assert.equal(refused.status, 503);
    assert.deepEqual(await refused.json(), {
      message: "This tenant's part of the event log is full until it is written out, try again shortly",
    });
    assert.equal(refused.headers.get("retry-after"), "10");
    // Alone, it writes past its part, up to the log's bound less one part (kept for the other tenants).
    const held = await walBytes(w.deps.kv);
    assert.ok(held > BOUND / 4, `${held} bytes held by a lone tenant, past its part of ${BOUND / 4}`);
    assert.ok(held <= BOUND - BOUND / 4, `${held} bytes held by one tenant, the log keeps ${BOUND / 4} for others`);
    assert.ok(acknowledged.length >= 10, `${acknowledged.length} events fit`);
    const sizes = await w.deps.events.wal.sizes([world.tenantId, world.other.tenantId]);
    assert.deepEqual([sizes.total, sizes.byTenant.get(world.tenantId), sizes.byTenant.get(world.other.tenantId)], [
      held,
      held,
      0,
    ]);

    // Another tenant's batches are still taken.
    for (let b = 0; b < 2; b++) {
      const events = batch(`o${b}`, 5).map((e) => ({ ...e, ai_agent: "am_other" }));
      const res = await post(world.other.key, events);
      assert.equal(res.status, 202);
      await res.body?.cancel();
      acknowledged.push(...events.map((e) => e.event_id));
    }
    assert.equal(await walBytes(w.deps.kv), await w.deps.events.wal.size());
  } finally {
    writer.restore();
  }

  // The writer recovers: everything acknowledged is flushed once, each tenant's part is empty again.
  await w.deps.events.flush();
  const counts = await parquetIdCounts(w.deps.duckdb, w.deps.analytics.eventsDir);
  assert.deepEqual(acknowledged.filter((id) => counts.get(id) !== 1), []);
  const after = await w.deps.events.wal.sizes([world.tenantId, world.other.tenantId]);
  assert.deepEqual([after.total, ...after.byTenant.values()], [0, 0, 0]);
  const again = await post(world.key, batch("again", 10));
  assert.equal(again.status, 202);
  await again.body?.cancel();
});

Deno.test("POST /v1/events: while a tenant's part of the log is full its batch is refused unread; another tenant's is read", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND) });
  const { w } = world;
  // Full, as a lagging flush leaves it: its part, and the log but for the last part.
  await w.deps.kv.set(["ev_wal_tsize", world.tenantId, "added"], new Deno.KvU64(BigInt(BOUND - BOUND / 4)));
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND - BOUND / 4)));
  const send = (key: string) =>
    w.app.request("/v1/events", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "not json",
    });
  const full = await send(world.key);
  assert.equal(full.status, 503);
  assert.equal(full.headers.get("retry-after"), "10");
  await full.body?.cancel();
  const read = await send(world.other.key);
  assert.equal(read.status, 400, "read, and refused for what it holds");
  await read.body?.cancel();
});

Deno.test("POST /v1/events: a tenant's part of the log smaller than one batch still takes one batch while it holds nothing (then refuses until it is written out)", async () => {
  // 1% of 64 KiB: 655 bytes, less than a batch of ten events.
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND), EVENTS_WAL_TENANT_SHARE_PCT: "1" });
  const { w } = world;
  const post = (events: unknown[]) => postWithKey(w, world.key, events);
  const writer = failingWriter(w);
  try {
    const first = await post(batch("first", 10));
    assert.equal(first.status, 202, await first.clone().text());
    assert.deepEqual(await first.json(), { accepted: 10 });
    const held = (await w.deps.events.wal.sizes([world.tenantId])).byTenant.get(world.tenantId)!;
    assert.ok(held > Math.floor(BOUND / 100), `${held} bytes, more than its part`);
    await assert.rejects(() => w.deps.events.flush());
    // The log in its last part (kept for tenants under theirs), with room for the next batch: only
    // the tenant's part can refuse it.
    await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND - held - 400)));

    const second = await post(batch("second", 10));
    assert.equal(second.status, 503, "its part is taken until it is written out");
    assert.match((await second.json()).message, /tenant's part of the event log/);
  } finally {
    writer.restore();
  }
  await w.deps.events.flush();
  const again = await post(batch("again", 10));
  assert.equal(again.status, 202, "written out, it takes a batch again");
  await again.body?.cancel();
});

Deno.test("POST /v1/events: a batch larger than the whole event log is 413 for its size, not 503 to retry; nothing stored", async () => {
  await using world = await analyticsWorld({ EVENTS_WAL_MAX_BYTES: String(BOUND), EVENTS_WAL_TENANT_SHARE_PCT: "100" });
  const { w } = world;
  // 100 events of a 1,000-character question: well inside the body limit, more than the log's 64 KiB.
  const events = batch("huge", 100).map((e) => ({ ...e, prompt: "Where should I travel? ".repeat(44) }));
  const res = await postWithKey(w, world.key, events);
  assert.equal(res.status, 413);
  assert.equal(res.headers.get("retry-after"), null, "no retry can succeed");
  const body = await res.json();
  assert.match(body.message, /at most 65536 bytes in the event log; send fewer per batch/);
  assert.equal(await walBytes(w.deps.kv), 0, "nothing of it is stored");
  // The same events in batches the log can hold are taken.
  for (let i = 0; i < events.length; i += 20) {
    const part = await postWithKey(w, world.key, events.slice(i, i + 20));
    assert.equal(part.status, 202);
    await w.deps.events.flush();
  }
  assert.equal((await parquetIdCounts(w.deps.duckdb, w.deps.analytics.eventsDir)).size, 100);
});
