import assert from "node:assert/strict";
import { sessionKey, type SessionState } from "../../analytics/enrich.ts";
import { EventPipeline, FLUSH_SCRATCH } from "../../analytics/events.ts";
import { writeNdjsonAsParquet } from "../../analytics/parquet_writer.ts";
import { CHUNK_BYTES, EventWal, ndjsonLine, WAL_PREFIX } from "../../analytics/wal.ts";
import { FixedClock } from "../../core/clock.ts";
import { parseConfig } from "../../core/config.ts";
import { openDeps } from "../../main.ts";
import { analyticsWorld } from "./_fixture.ts";
import { parquetFiles, parquetIdCounts } from "./_count.ts";
import { sqlString } from "../../analytics/sql_util.ts";
import { kvThrough } from "../_kv_proxy.ts";

const evts = (prefix: string, n: number, ts?: string) =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `${prefix}-${String(i).padStart(6, "0")}`,
    event_type: "query",
    ai_agent: "am_main",
    prompt: "Where should I travel?",
    ...(ts ? { ts } : {}),
  }));

Deno.test("EventWal.append() keeps every chunk under the KV value limit and loses no row", async () => {
  await using kv = await Deno.openKv(":memory:");
  const rows = Array.from({ length: 3000 }, (_, i) => ({ i, text: "ü".repeat(300), tenant_id: null, ts_ms: 0 }));
  const wal = new EventWal(kv, new FixedClock("2026-11-22T12:00:00Z"));
  assert.ok(await wal.append("0195f0c0-0000-7000-8000-00000000000a", rows.map(ndjsonLine), rows));
  const chunks = (await Array.fromAsync(kv.list<Uint8Array>({ prefix: [...WAL_PREFIX] }))).map((e) => e.value);
  assert.ok(chunks.length > 1);
  for (const c of chunks) assert.ok(c.byteLength <= CHUNK_BYTES);
  const lines = chunks.flatMap((c) => new TextDecoder().decode(c).trim().split("\n"));
  assert.equal(lines.length, 3000);
});

Deno.test("flush(): a widget text with a lone surrogate is stored as U+FFFD and stops no flush of the events after it", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  // JSON lets a page send "\\ud800" (half a surrogate pair); the log's NDJSON carried it escaped, and
  // DuckDB refuses such a line: every flush failed on it and no acknowledged event reached Parquet.
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: "https://news.example", "content-type": "application/json", "x-forwarded-for": "198.51.100.9" },
    body: '{"widget_id":"wd_main","events":[{"event_id":"evt-lone-0001","event_type":"query","session_id":"s1",' +
      '"prompt":"caf\\ud800 or \\udc00 tea"}]}',
  });
  assert.deepEqual(await res.json(), { accepted: 1 });
  // A server's events after it, in the same log.
  const other = await w.app.request("/v1/events", {
    method: "POST",
    headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
    body: JSON.stringify({ events: evts("evt-after", 3) }),
  });
  assert.equal(other.status, 202);
  await other.body?.cancel();
  const flushed = await w.deps.events.flush();
  assert.equal(flushed.rows, 4);
  assert.equal((await w.deps.events.wal.take(1)).length, 0, "the log is empty");
  const ids = await parquetIdCounts(w.deps.duckdb, w.deps.analytics.eventsDir);
  assert.equal(ids.get("evt-lone-0001"), 1);
  const prompt = await w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT prompt FROM read_parquet(${sqlString(`${w.deps.analytics.eventsDir}/*/*.parquet`)})
       WHERE event_id = 'evt-lone-0001'`,
    )).getRowObjectsJS()[0]!.prompt
  );
  assert.equal(prompt, "caf\ufffd or \ufffd tea");
});

Deno.test("flush(): a log written before lines were well-formed, holding an escaped lone surrogate, still flushes", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
    body: JSON.stringify({ events: [...evts("evt-old", 2), { ...evts("evt-mark", 1)[0], prompt: "cafMARK tea" }] }),
  });
  assert.equal(res.status, 202);
  await res.body?.cancel();
  // What the log held when JSON.stringify escaped a lone surrogate, and when a text had a backslash.
  const [chunk] = await w.deps.events.wal.take(10);
  const old = new TextDecoder().decode(chunk!.bytes).replace("MARK", "\\ud800 \\\\ud800");
  await w.deps.kv.set(chunk!.key, new TextEncoder().encode(old));
  const flushed = await w.deps.events.flush();
  assert.equal(flushed.rows, 3);
  const prompt = await w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT prompt FROM read_parquet(${sqlString(`${w.deps.analytics.eventsDir}/*/*.parquet`)})
       WHERE event_id = 'evt-mark-000000'`,
    )).getRowObjectsJS()[0]!.prompt
  );
  assert.equal(prompt, "caf\ufffd \\ud800 tea");
});

Deno.test("POST /v1/events: 500 sessions with long ad-render values commit under KV's 800 KiB, not a 500", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  // Each event starts a sponsored conversation: 500 session states of about 900 bytes go in with
  // the batch, which a flat 512 bytes apiece under-counted.
  const long = (c: string, n: number) => c.repeat(n);
  const events = Array.from({ length: 500 }, (_, i) => ({
    event_type: "sponsored_impression",
    campaign_id: "cp_spring",
    session_id: `s${String(i).padStart(4, "0")}${long("x", 123)}`,
    creative_id: long("c", 128),
    line_item_id: long("l", 128),
    publisher_id: long("p", 128),
    ad_partner: long("a", 64),
    placement_id: long("q", 128),
    referring_url: `https://news.example/${long("r", 1500)}`,
  }));
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: "https://news.example", "content-type": "application/json", "x-forwarded-for": "198.51.100.3" },
    body: JSON.stringify({ widget_id: "wd_main", events }),
  });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { accepted: 500 });
  assert.equal((await w.deps.events.flush()).rows, 500);
});

Deno.test("POST /v1/events: 500 widget loads with distinct 128-character sessions commit under KV's 80 KiB of keys, not a 500", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  // Each event's session state goes in with the batch under a key holding its session id: 500 of
  // them are over 64 KB of keys, more than one commit may set.
  const events = Array.from({ length: 500 }, (_, i) => ({
    event_type: "widget_load",
    session_id: `s${String(i).padStart(4, "0")}${"k".repeat(123)}`,
  }));
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: "https://news.example", "content-type": "application/json", "x-forwarded-for": "198.51.100.3" },
    body: JSON.stringify({ widget_id: "wd_main", events }),
  });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { accepted: 500 });
  assert.equal((await w.deps.events.flush()).rows, 500);
});

Deno.test("POST /v1/events: 100 sessions whose states hold every remembered id at its longest commit in one checked commit, not a 500", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  // A session day's state remembers its latest heartbeat, query and other event ids (a copy of one
  // changes nothing): 100 states at their largest must still fit the batch's checked commit with it.
  const id = (kind: string, i: number, j: number) => `${kind}${i}_${j}_`.padEnd(64, "z");
  const day = "2026-11-22";
  const sessions = Array.from({ length: 100 }, (_, i) => `s${String(i).padStart(4, "0")}${"k".repeat(123)}`);
  const ts = Date.parse("2026-11-22T11:55:00Z");
  for (const [i, session] of sessions.entries()) {
    const state: SessionState = {
      visit_id: 1000 + i,
      last_ms: ts,
      viewable: true,
      queries: 10,
      sponsor: {
        campaign_id: "cp_spring",
        creative_id: "c".repeat(128),
        line_item_id: "l".repeat(128),
        publisher_id: "p".repeat(128),
        ad_partner: "a".repeat(64),
        started_ms: ts,
        last_ms: ts,
      },
      first_ms: ts - 600_000,
      heartbeats: 40,
      heartbeat_ids: Array.from({ length: 40 }, (_, j) => id("h", i, j)),
      query_ids: Array.from(
        { length: 10 },
        (_, j) => [id("q", i, j), 1000 + i, j + 1, ts] as [string, number, number, number],
      ),
      event_ids: Array.from({ length: 20 }, (_, j) => id("e", i, j)),
    };
    await w.deps.kv.set(sessionKey(world.tenantId, session, day), state);
  }
  const events = sessions.map((session) => ({
    event_type: "widget_load",
    session_id: session,
    referring_url: `https://news.example/${"r".repeat(1500)}`,
  }));
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: "https://news.example", "content-type": "application/json", "x-forwarded-for": "198.51.100.3" },
    body: JSON.stringify({ widget_id: "wd_main", events }),
  });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { accepted: 100 });
  const after = await w.deps.kv.get<SessionState>(sessionKey(world.tenantId, sessions[0]!, day));
  assert.equal(after.value?.event_ids?.length, 20, "the list stays at its bound");
});

Deno.test("EventWal.append() splits a large batch across commits under the KV limits", async () => {
  await using world = await analyticsWorld();
  const big = Array.from({ length: 500 }, (_, i) => ({
    event_id: `big-${String(i).padStart(6, "0")}`,
    event_type: "query",
    ai_agent: "am_main",
    prompt: "p".repeat(2000),
    response: "r".repeat(10_000),
  }));
  await world.w.deps.events.record(big); // ~6 MB: many chunks, several atomic commits
  const r = await world.w.deps.events.flush();
  assert.equal(r.rows, 500);
  const counts = await parquetIdCounts(world.w.deps.duckdb, world.w.deps.analytics.eventsDir);
  assert.equal(counts.size, 500);
});

Deno.test("flush(): events of several days land in one file per day (date=YYYY-MM-DD)", async () => {
  await using world = await analyticsWorld();
  await world.w.deps.events.record([
    ...evts("d1", 3, "2026-11-20T23:59:59.999Z"),
    ...evts("d2", 2, "2026-11-21T00:00:00Z"),
  ]);
  await world.w.deps.events.flush();
  const files = await parquetFiles(world.w.deps.analytics.eventsDir);
  assert.deepEqual(files.map((f) => f.split("/")[0]), ["date=2026-11-20", "date=2026-11-21"]);
  assert.equal(files[0]!.split("/")[1], files[1]!.split("/")[1], "one file id per flush");
});

Deno.test("flush() recovery: a crash after the Parquet rename but before the WAL delete writes nothing twice", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await deps.events.record(evts("c", 50));
  // Simulate the crash: plan stored, file written and renamed, WAL never deleted.
  const chunks = await deps.events.wal.take(100);
  const fileId = "0195f0c0-0000-7000-8000-000000000001";
  await deps.kv.set(["ev_flush_plan", fileId], { fileId, keys: chunks.map((c) => c.key), state: "planned" });
  const tmp = await Deno.makeTempFile();
  await Deno.writeFile(tmp, new Uint8Array(chunks.flatMap((c) => [...c.bytes])));
  await writeNdjsonAsParquet(deps.duckdb, deps.analytics.eventsDir, fileId, tmp);
  await Deno.remove(tmp);
  // A restart replays: the plan is redone under the same name (overwrite), then the WAL is emptied.
  const r = await deps.events.flush();
  assert.equal(r.rows, 50);
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 50);
  assert.ok([...counts.values()].every((n) => n === 1));
  assert.deepEqual(await parquetFiles(deps.analytics.eventsDir), [`date=2026-11-22/${fileId}.parquet`]);
  assert.equal((await deps.events.wal.take(1)).length, 0);
  assert.equal((await Array.fromAsync(deps.kv.list({ prefix: ["ev_flush_plan"] }))).length, 0);
});

Deno.test("flush() recovery: a plan marked written only deletes what is left of the WAL", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await deps.events.record(evts("w", 20));
  const chunks = await deps.events.wal.take(100);
  const fileId = "0195f0c0-0000-7000-8000-000000000002";
  const tmp = await Deno.makeTempFile();
  await Deno.writeFile(tmp, new Uint8Array(chunks.flatMap((c) => [...c.bytes])));
  await writeNdjsonAsParquet(deps.duckdb, deps.analytics.eventsDir, fileId, tmp);
  await Deno.remove(tmp);
  await deps.kv.set(["ev_flush_plan", fileId], { fileId, keys: chunks.map((c) => c.key), state: "written" });
  await deps.events.flush();
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 20);
  assert.ok([...counts.values()].every((n) => n === 1));
  assert.equal((await deps.events.wal.take(1)).length, 0);
});

Deno.test("compact(): a day's small files merge into one, duplicates across flushes removed", async () => {
  await using world = await analyticsWorld({ EVENTS_COMPACT_MIN_FILES: "3" });
  const { deps } = world.w;
  for (let i = 0; i < 3; i++) {
    await deps.events.record([...evts(`f${i}`, 10), {
      event_id: "same-000001",
      event_type: "widget_load",
      ai_agent: "am_main",
    }]);
    await deps.events.flush();
  }
  assert.equal((await parquetFiles(deps.analytics.eventsDir)).length, 3);
  assert.equal(await deps.events.compact(), 3);
  const files = await parquetFiles(deps.analytics.eventsDir);
  assert.equal(files.length, 1);
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 31);
  assert.equal(counts.get("same-000001"), 1);
  assert.equal(await deps.events.compact(), 0, "a single file is left alone");
});

Deno.test("start() replays the WAL left by a previous process; stop() flushes what is left", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-replay-" });
  try {
    const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "error" });
    let deps = await openDeps(config);
    await deps.repos.tenants.create({ id: "tn_r", name: "R", createdAt: "2026-11-22T00:00:00Z" });
    await deps.events.record(evts("r", 30).map((e) => ({ ...e, ai_agent: undefined, tenant_id: "tn_r" })));
    await deps[Symbol.asyncDispose](); // no flush (the flusher never started): the events exist only in the KV log
    deps = await openDeps(config);
    const replayed = await deps.events.start();
    assert.equal(replayed.rows, 30);
    await deps.events.record(evts("s", 5).map((e) => ({ ...e, ai_agent: undefined, tenant_id: "tn_r" })));
    const stopped = await deps.events.stop();
    assert.equal(stopped.rows, 5);
    const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
    assert.equal(counts.size, 35);
    await deps[Symbol.asyncDispose]();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("flush() writes its NDJSON scratch file under the events folder; start() removes what a dead flusher left", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-scratch-" });
  const tmpBefore = await walTempFiles();
  try {
    const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "error" });
    const deps = await openDeps(config);
    try {
      const scratch = `${deps.analytics.eventsDir}/${FLUSH_SCRATCH}`;
      await Deno.mkdir(scratch, { recursive: true });
      await Deno.writeTextFile(`${scratch}/wal-left-by-a-killed-flusher.ndjson`, "{}\n");
      // An export folder a dead process left two days ago goes; one of a running export stays.
      await Deno.mkdir(`${scratch}/export-old`);
      await Deno.utime(`${scratch}/export-old`, new Date("2026-11-19T00:00:00Z"), new Date("2026-11-19T00:00:00Z"));
      const live = `${scratch}/export-live`;
      await Deno.mkdir(live);
      await Deno.utime(live, deps.clock.now(), deps.clock.now());
      await deps.repos.tenants.create({ id: "tn_s", name: "S", createdAt: "2026-11-22T00:00:00Z" });
      await deps.events.start();
      assert.deepEqual(await names(scratch), ["export-live"], "start() cleared the scratch folder");
      await Deno.remove(live);
      await deps.events.record(evts("sc", 3).map((e) => ({ ...e, ai_agent: undefined, tenant_id: "tn_s" })));
      assert.equal((await deps.events.stop()).rows, 3);
      assert.deepEqual(await names(scratch), [], "a finished flush removes its scratch file");
      assert.deepEqual(await walTempFiles(), tmpBefore, "nothing written to the system temp dir");
    } finally {
      await deps[Symbol.asyncDispose]();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

/** The `wal-*` files of the system temp dir (where flushes used to write). */
async function walTempFiles(): Promise<string[]> {
  const dir = Deno.env.get("TMPDIR") ?? "/tmp";
  return (await names(dir)).filter((n) => n.startsWith("wal-"));
}

Deno.test("a killed process (SIGKILL mid-load) loses no acknowledged event and stores none twice", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-crash-" });
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./_ingest_child.ts", import.meta.url).pathname, dataDir],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const acked: number[] = [];
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    while (acked.length < 50) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) if (l.startsWith("ack ")) acked.push(Number(l.slice(4)));
    }
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel().catch(() => {});
    assert.ok(acked.length >= 50, "the child acknowledged batches before the kill");

    // The dead child's flusher lease (2 s) must lapse before the replay: start() waits for it.
    const deps = await openDeps(parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "error", EVENTS_FLUSH_LEASE_S: "2" }));
    try {
      const replayed = await deps.events.start();
      assert.ok(!replayed.skipped);
      await deps.events.stop();
      const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
      for (const b of acked) {
        for (let i = 0; i < 200; i++) {
          const id = `k-${String(b).padStart(5, "0")}-${String(i).padStart(3, "0")}`;
          assert.equal(counts.get(id), 1, `${id} stored exactly once`);
        }
      }
      for (const [id, n] of counts) assert.equal(n, 1, `${id} stored once`);
    } finally {
      await deps[Symbol.asyncDispose]();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("flusher lease: with two processes on one KV only the holder flushes; a dead holder is replaced", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const other = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  await deps.events.record(evts("l", 5));
  const first = await deps.events.flush();
  assert.equal(first.rows, 5);
  await other.record(evts("m", 5));
  assert.deepEqual(await other.flush(), { rows: 0, files: 0, skipped: true });
  assert.equal(await other.compact(), 0);
  // The holder stops renewing (it died): after the lease period the other takes over.
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  const taken = await other.flush();
  assert.equal(taken.rows, 5);
  assert.equal((await deps.events.flush()).skipped, true);
  await other.stop(); // releases the lease
  await deps.events.record(evts("n", 2));
  assert.equal((await deps.events.flush()).rows, 2);
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 12);
});

Deno.test("flush() and compact(): an event_id is one tenant's; another tenant's same id never hides it", async () => {
  await using world = await analyticsWorld({ EVENTS_COMPACT_MIN_FILES: "2" });
  const { deps } = world.w;
  const load = (agent: string, id: string) => ({ event_id: id, event_type: "widget_load", ai_agent: agent });
  const tenantsOf = async () =>
    await deps.duckdb.withConnection(async (c) =>
      (await c.runAndReadAll(
        `SELECT tenant_id, count(*)::INTEGER AS n FROM read_parquet(${
          sqlString(`${deps.analytics.eventsDir}/*/*.parquet`)
        }) GROUP BY tenant_id ORDER BY tenant_id`,
      )).getRowObjectsJS().map((r) => `${r.tenant_id === world.tenantId ? "publisher" : "other"}:${r.n}`).sort()
    );
  // Another tenant sends the publisher's (guessable) ids first, in the same flush and in an earlier one.
  await deps.events.record([load("am_other", "order-000001")]);
  await deps.events.flush();
  await deps.events.record([load("am_other", "order-000002"), load("am_main", "order-000002")]);
  await deps.events.record([load("am_main", "order-000001")]);
  await deps.events.flush();
  assert.deepEqual(await tenantsOf(), ["other:2", "publisher:2"]);
  // A retry of the publisher's own event is still stored once.
  await deps.events.record([load("am_main", "order-000001")]);
  await deps.events.flush();
  assert.deepEqual(await tenantsOf(), ["other:2", "publisher:2"]);
  assert.ok(await deps.events.compact() >= 2);
  assert.deepEqual(await tenantsOf(), ["other:2", "publisher:2"], "compaction keeps both tenants' events");
});

Deno.test("flush(): a widget batch retried just after midnight is stored once, not once per day", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const batch = JSON.stringify({
    widget_id: "wd_main",
    events: [{ event_id: "ev_0123456789abcdef01234567", event_type: "widget_load", session_id: "s_night" }],
  });
  const post = () =>
    world.w.app.request("/v1/events", {
      method: "POST",
      headers: { origin: "https://news.example", "content-type": "application/json" },
      body: batch,
    });
  // The widget sends no timestamp: the server stamps arrival. The first try is stored, but its
  // answer is lost; the widget sends the same batch again 20 s later, in the next UTC day.
  world.w.clock.set("2026-11-21T23:59:50Z");
  assert.equal((await post()).status, 202);
  await deps.events.flush();
  world.w.clock.set("2026-11-22T00:00:10Z");
  assert.equal((await post()).status, 202);
  await deps.events.flush();
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.get("ev_0123456789abcdef01234567"), 1);
});

Deno.test("flush(): an event_id is one day's, in one flush as across flushes (an id reused days apart is stored each time)", async () => {
  // A server that numbers its events per day sends `daily-000001` on two days. Flushed apart, both
  // are stored (the id was not stored that day); flushed together they must be too. A retry just
  // after midnight in the same flush as its first try is still stored once.
  const stored = async (together: boolean) => {
    await using world = await analyticsWorld();
    const { deps } = world.w;
    const send = async (events: unknown[]) => {
      const res = await world.w.app.request("/v1/events", {
        method: "POST",
        headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
        body: JSON.stringify({ events }),
      });
      assert.equal(res.status, 202);
      await res.body?.cancel();
      if (!together) await deps.events.flush();
    };
    const ev = (id: string, ts: string) => ({ event_id: id, event_type: "widget_load", ai_agent: "am_main", ts });
    await send([ev("daily-000001", "2026-11-18T09:00:00Z")]);
    await send([ev("daily-000001", "2026-11-20T09:00:00Z")]);
    await send([ev("retry-000001", "2026-11-20T23:59:50Z")]);
    await send([ev("retry-000001", "2026-11-21T00:00:10Z")]);
    await deps.events.flush();
    const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
    return [counts.get("daily-000001"), counts.get("retry-000001")];
  };
  assert.deepEqual(await stored(false), [2, 1]);
  assert.deepEqual(await stored(true), [2, 1]);
});

Deno.test("flush(): an id of a day and of the next day's first minutes is stored twice whichever day is flushed first; a retry across midnight once", async () => {
  // `daily` at D 08:00 and D+1 00:05 are two events (the earlier is not in D's last ten minutes);
  // `retry` at D 23:59:50 and D+1 00:00:10 is one, also when the later copy is flushed first.
  const stored = async (order: "together" | "day first" | "next day first") => {
    await using world = await analyticsWorld();
    const { deps } = world.w;
    const send = async (events: unknown[]) => {
      const res = await world.w.app.request("/v1/events", {
        method: "POST",
        headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
        body: JSON.stringify({ events }),
      });
      assert.equal(res.status, 202);
      await res.body?.cancel();
      if (order !== "together") await deps.events.flush();
    };
    const ev = (id: string, ts: string) => ({ event_id: id, event_type: "widget_load", ai_agent: "am_main", ts });
    const day = [ev("daily-000001", "2026-11-19T08:00:00Z"), ev("retry-000001", "2026-11-19T23:59:50Z")];
    const next = [ev("daily-000001", "2026-11-20T00:05:00Z"), ev("retry-000001", "2026-11-20T00:00:10Z")];
    if (order === "next day first") {
      await send(next);
      await send(day);
    } else {
      await send(day);
      await send(next);
    }
    await deps.events.flush();
    const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
    return [counts.get("daily-000001"), counts.get("retry-000001")];
  };
  assert.deepEqual(await stored("together"), [2, 1]);
  assert.deepEqual(await stored("day first"), [2, 1]);
  assert.deepEqual(await stored("next day first"), [2, 1]);
});

Deno.test("flusher lease: a holder stalled past its lease mid-write renames nothing after the next holder redid and compacted its flush", async () => {
  await using world = await analyticsWorld({ EVENTS_COMPACT_MIN_FILES: "2" });
  const { deps } = world.w;
  const db = deps.duckdb;
  const withConnection = db.withConnection.bind(db);
  // The first Parquet COPY (this holder's) stalls before it runs: its day's other files were listed
  // already, and it writes its `.tmp` and renames it only once released.
  let armed = true;
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let stalled!: () => void;
  const started = new Promise<void>((r) => stalled = r);
  db.withConnection = ((fn: (conn: unknown) => Promise<unknown>) =>
    withConnection((conn) =>
      fn(
        new Proxy(conn, {
          get(target, prop) {
            const v = Reflect.get(target, prop, target);
            if (prop !== "run" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
            return async (sql: string, ...rest: unknown[]) => {
              if (armed && sql.startsWith("COPY") && sql.includes(".parquet.tmp")) {
                armed = false;
                stalled();
                await gate;
              }
              return await v.apply(target, [sql, ...rest]);
            };
          },
        }),
      )
    )) as typeof db.withConnection;

  await deps.events.record(evts("p", 40));
  const stalledFlush = deps.events.flush().catch((err) => err);
  await started;
  // The holder stalls past its lease: another process takes over, redoes the planned flush,
  // flushes more and compacts the day (the redone file merged away).
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  const other = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  assert.equal((await other.flush()).rows, 40);
  await other.record(evts("q", 10));
  assert.equal((await other.flush()).rows, 10);
  assert.equal(await other.compact(), 2);
  release();
  await stalledFlush;
  db.withConnection = withConnection;

  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 50);
  assert.deepEqual([...counts.entries()].filter(([, n]) => n !== 1), [], "no event stored twice");
  assert.equal((await parquetFiles(deps.analytics.eventsDir)).length, 1);
});

Deno.test("flusher lease: a holder stalled past its lease before deleting its flushed chunks takes their bytes off the log's size only once with the holder that recovered its plan", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  /** Bytes of the chunks in the log, counted the slow way. */
  const held = async () => {
    let n = 0;
    for await (const e of deps.kv.list<Uint8Array>({ prefix: ["ev_wal"] })) n += e.value.byteLength;
    return n;
  };
  // This holder's plan is written (its file renamed in) when it stalls before deleting the chunks.
  const wal = deps.events.wal;
  const del = wal.delete.bind(wal);
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let stalled!: () => void;
  const started = new Promise<void>((r) => stalled = r);
  wal.delete = async (...args) => {
    stalled();
    await gate;
    return await del(...args);
  };
  await deps.events.record(evts("p", 40));
  const stalledFlush = deps.events.flush();
  await started;
  // Another process takes over and finishes the written plan.
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  const other = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  await other.flush();
  assert.equal(await held(), 0);
  release();
  assert.equal((await stalledFlush).skipped, true, "the stalled holder finds its plan finished");
  wal.delete = del;
  // The size is the log's: the 40 events' bytes were taken off once.
  await other.record(evts("q", 10));
  assert.ok((await held()) > 0);
  assert.equal(await other.wal.size(), await held());
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 40);
});

Deno.test("flusher lease: a stalled holder's `written` commit fails once another holder recovers its plan, so no event of the plan is lost", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const isPlanKey = (k: Deno.KvKey) => k[0] === "ev_flush_plan";
  // Holder A renames its file in, then stalls before its `written` commit.
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let stalled!: () => void;
  const started = new Promise<void>((r) => stalled = r);
  const kvA = kvThrough(deps.kv, {
    atomic() {
      let written = false;
      return {
        set(key, value) {
          if (isPlanKey(key) && (value as { state?: string }).state === "written") written = true;
        },
        async commit(real) {
          if (written) {
            stalled();
            await gate;
          }
          return await real();
        },
      };
    },
  });
  const a = new EventPipeline({ ...deps, kv: kvA, repos: deps.repos }, { ...deps.events.options });
  // Twelve batches, twelve chunks: the recovering holder loads them in two reads of at most ten.
  for (let i = 0; i < 12; i++) await a.record(evts(`p${i}`, 5));
  const flushA = a.flush().catch((err) => err);
  await started;
  // Holder B takes over and recovers the plan; A wakes between B's two chunk reads.
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  let reads = 0;
  const kvB = kvThrough(deps.kv, {
    async getMany(_keys, real) {
      if (++reads === 2) {
        release();
        await flushA;
      }
      return await real();
    },
  });
  const b = new EventPipeline({ ...deps, kv: kvB, repos: deps.repos }, { ...deps.events.options });
  await b.flush();
  release();
  await flushA;

  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 60, "every event of the plan is stored");
  assert.deepEqual([...counts.entries()].filter(([, n]) => n !== 1), [], "no event stored twice");
  assert.deepEqual(await Array.fromAsync(deps.kv.list({ prefix: ["ev_flush_plan"] })), [], "the plan is finished");
});

Deno.test("record(): a batch reads the log's size once (the room check before anything is written)", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  let sizeReads = 0;
  const kv = kvThrough(deps.kv, {
    getMany(keys, real) {
      if (keys.some((k) => k[0] === "ev_wal_size")) sizeReads++;
      return real();
    },
  });
  const pipeline = new EventPipeline({ ...deps, kv, repos: deps.repos }, { ...deps.events.options });
  await pipeline.record(evts("r", 3));
  assert.equal(sizeReads, 1);
  assert.equal((await pipeline.flush()).rows, 3);
});

Deno.test("record(): a batch of many tenants' events reads the log's size and its tenants' parts once", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  let sizeReads = 0;
  const kv = kvThrough(deps.kv, {
    getMany(keys, real) {
      if (keys.some((k) => k[0] === "ev_wal_size" || k[0] === "ev_wal_tsize")) sizeReads++;
      return real();
    },
  });
  const pipeline = new EventPipeline({ ...deps, kv, repos: deps.repos }, { ...deps.events.options });
  // The service's own impressions of six tenants' searches, in one batch.
  const impressions = Array.from({ length: 12 }, (_, i) => ({
    event_type: "result_impression",
    tenant_id: `tn_many${i % 6}`,
    data_model_id: "dm_many",
    article_id: `ar_${i}`,
    article_url: `https://news.example/${i}`,
    position: 1,
  }));
  await pipeline.record(impressions);
  assert.equal(sizeReads, 1);
  assert.equal((await pipeline.flush()).rows, 12);
});

Deno.test("flusher lease: a holder stalled past its lease between listing chunks and planning their flush plans none another holder flushed meanwhile, so the log's size is not taken down twice", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  /** Bytes of the chunks in the log, counted the slow way. */
  const held = async () => {
    let n = 0;
    for await (const e of deps.kv.list<Uint8Array>({ prefix: ["ev_wal"] })) n += e.value.byteLength;
    return n;
  };
  // Holder A lists the log's chunks, then stalls before it plans their flush.
  const a = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  const take = a.wal.take.bind(a.wal);
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let stalled!: () => void;
  const started = new Promise<void>((r) => stalled = r);
  a.wal.take = async (limit) => {
    const chunks = await take(limit);
    if (chunks.length) {
      a.wal.take = take;
      stalled();
      await gate;
    }
    return chunks;
  };
  await a.record(evts("p", 40));
  const flushA = a.flush().catch((err) => err);
  await started;
  // Holder B takes over and flushes those chunks; then B falls quiet and its lease lapses too.
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  const b = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  assert.equal((await b.flush()).rows, 40);
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  // Had A planned them, new events arrive once it has deleted them, and the writer then fails (a full
  // disk): the log is not found empty, so nothing sets its size right.
  const db = deps.duckdb;
  const write = db.withConnection;
  const del = a.wal.delete.bind(a.wal);
  a.wal.delete = async (...args) => {
    const done = await del(...args);
    await b.record(evts("q", 10));
    db.withConnection = () => Promise.reject(new Error("No space left on device"));
    return done;
  };
  release();
  await flushA;
  db.withConnection = write;
  if (!(await held())) await b.record(evts("q", 10));
  // The kept size is the log's: the 40 events' bytes were taken off once, by B.
  assert.ok((await held()) > 0);
  assert.equal(await b.wal.size(), await held());
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.deepEqual([...counts.values()].filter((n) => n !== 1), [], "no event stored twice");
});

Deno.test("flusher lease: a holder stalled past its lease while deleting its flushed chunks takes their bytes off its tenant's part of the log only once with the holder that recovered its plan", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  /** Bytes of the chunks in the log, counted the slow way. */
  const held = async () => {
    let n = 0;
    for await (const e of deps.kv.list<Uint8Array>({ prefix: ["ev_wal"] })) n += e.value.byteLength;
    return n;
  };
  // Holder A has read all its chunks' records (their tenants' bytes, ten a read) when it stalls,
  // before any delete.
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let stalled!: () => void;
  const started = new Promise<void>((r) => stalled = r);
  let recordReads = 0;
  const kvA = kvThrough(deps.kv, {
    async getMany(keys, real) {
      const got = await real();
      if (keys[0]?.[0] === "ev_wal_ixof" && ++recordReads === 32) {
        stalled();
        await gate;
      }
      return got;
    },
  });
  const a = new EventPipeline({ ...deps, kv: kvA, repos: deps.repos }, { ...deps.events.options });
  // 320 batches, a chunk each: their deletes take more than one commit.
  for (let i = 0; i < 320; i++) await a.record(evts(`p${i}`, 1));
  const flushA = a.flush().catch((err) => err);
  await started;
  // Holder B takes over and finishes A's written plan.
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  const b = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  await b.flush();
  assert.equal(await held(), 0);
  release();
  assert.equal((await flushA).skipped, true, "the stalled holder finds its plan taken");
  // The tenant's part is the log's: the 320 events' bytes were taken off once.
  await b.record(evts("q", 10));
  assert.ok((await held()) > 0);
  const sizes = await b.wal.sizes([world.tenantId]);
  assert.deepEqual([sizes.total, sizes.byTenant.get(world.tenantId)], [await held(), await held()]);
});

Deno.test("EventWal.delete: two flushers deleting one plan's chunks at once (interleaved commits) take each tenant's bytes off once", async () => {
  await using kv = await Deno.openKv(":memory:");
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  const wal = new EventWal(kv, clock);
  const ts = clock.now().getTime();
  // 400 one-chunk batches: chunks, index entries and records pass one commit's mutations, so a delete takes several.
  for (let b = 0; b < 400; b++) {
    const row = { tenant_id: "t1", ts_ms: ts, event_id: `e${b}` };
    assert.ok(await wal.append(`b${String(b).padStart(4, "0")}`, [ndjsonLine(row)], [row]));
  }
  const { total } = await wal.sizes(["t1"]);
  const keys: Deno.KvKey[] = [];
  for await (const e of kv.list({ prefix: [...WAL_PREFIX] })) keys.push(e.key);
  const planKey = ["plan", "x"];
  const { versionstamp } = await kv.set(planKey, 1);
  const guard = (op: Deno.AtomicOperation) => op.check({ key: planKey, versionstamp });
  const last = (op: Deno.AtomicOperation) => op.delete(planKey);
  // A commits its first step; then B, which read the same records, commits its first step before A's next.
  const { promise: aFirstDone, resolve: aFirst } = Promise.withResolvers<void>();
  const { promise: bFirstDone, resolve: bFirst } = Promise.withResolvers<void>();
  let ac = 0, bc = 0;
  const kvA = kvThrough(kv, {
    atomic: () => ({
      commit: async (real) => {
        const n = ++ac;
        if (n === 2) await bFirstDone;
        const r = await real();
        if (n === 1) aFirst();
        return r;
      },
    }),
  });
  const kvB = kvThrough(kv, {
    atomic: () => ({
      commit: async (real) => {
        const n = ++bc;
        if (n === 1) await aFirstDone;
        const r = await real();
        if (n === 1) bFirst();
        return r;
      },
    }),
  });
  const done = await Promise.all([
    new EventWal(kvA, clock).delete(keys, total, last, guard),
    new EventWal(kvB, clock).delete(keys, total, last, guard),
  ]);
  assert.deepEqual(done.toSorted(), [false, true], "one of them carries the plan out");
  let left = 0;
  for await (const e of kv.list<Uint8Array>({ prefix: [...WAL_PREFIX] })) left += e.value.byteLength;
  const [added, removed] = await kv.getMany<Deno.KvU64[]>([["ev_wal_tsize", "t1", "added"], [
    "ev_wal_tsize",
    "t1",
    "removed",
  ]]);
  assert.equal(
    added.value!.value - (removed.value?.value ?? 0n),
    BigInt(left),
    "the tenant's part is what it still has logged",
  );
});

Deno.test("EventWal chunk records: an array of [tenant, minute] pairs a previous release's flusher reads, the tenants' bytes riding as a third element; old records without bytes are deleted too", async () => {
  await using kv = await Deno.openKv(":memory:");
  const clock = new FixedClock("2026-11-22T12:00:30Z");
  const wal = new EventWal(kv, clock);
  const now = clock.now().getTime();
  const minute = (ms: number) => Math.floor(ms / 60_000);
  // t2's row is older than any realtime window: no index entry, its bytes still named.
  const rows = [
    { event_id: "e1", tenant_id: "t1", ts_ms: now },
    { event_id: "e2", tenant_id: "t1", ts_ms: now - 60_000 },
    { event_id: "e3", tenant_id: "t2", ts_ms: now - 40 * 60_000 },
  ];
  const lines = rows.map(ndjsonLine);
  assert.ok(await wal.append("0195f0c0-0000-7000-8000-00000000000b", lines, rows));
  const record = (await kv.get<unknown[]>(["ev_wal_ixof", "0195f0c0-0000-7000-8000-00000000000b", 0])).value!;
  // What a previous release's flusher reads of it: pairs, the index entries it deletes (a missing one is no harm).
  assert.ok(Array.isArray(record) && record.every((x) => Array.isArray(x) && typeof x[0] === "string"));
  assert.deepEqual(record, [
    ["t1", minute(now), lines[0]!.byteLength + lines[1]!.byteLength],
    ["t1", minute(now - 60_000)],
    ["t2", -1, lines[2]!.byteLength],
  ]);
  // A chunk a previous release logged: its record has the pairs alone, and no tenant's bytes were counted.
  const oldRow = { event_id: "e4", tenant_id: "t1", ts_ms: now };
  const oldBatch = "0195f0c0-0000-7000-8000-00000000000a";
  await kv.atomic()
    .set([...WAL_PREFIX, oldBatch, 0], ndjsonLine(oldRow))
    .set(["ev_wal_ix", "t1", minute(now), oldBatch, 0], 1)
    .set(["ev_wal_ixof", oldBatch, 0], [["t1", minute(now)]])
    .commit();
  const chunks = await wal.take(10);
  assert.equal(chunks.length, 2);
  assert.ok(await wal.delete(chunks.map((c) => c.key), chunks.reduce((n, c) => n + c.bytes.byteLength, 0)));
  for (const prefix of [WAL_PREFIX, ["ev_wal_ix"], ["ev_wal_ixof"]]) {
    assert.deepEqual(await Array.fromAsync(kv.list({ prefix: [...prefix] })), [], `nothing left under ${prefix}`);
  }
  const sizes = await wal.sizes(["t1", "t2"]);
  assert.deepEqual([sizes.byTenant.get("t1"), sizes.byTenant.get("t2")], [0, 0]);
  const [added, removed] = await kv.getMany<Deno.KvU64[]>([["ev_wal_tsize", "t1", "added"], [
    "ev_wal_tsize",
    "t1",
    "removed",
  ]]);
  assert.equal(
    added.value!.value,
    removed.value!.value,
    "the new chunk's bytes taken off once, the old one's never counted",
  );
});
