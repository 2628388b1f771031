/**
 * Result impressions are recorded off the response path, in batches, with nothing lost on an
 * orderly path (analytics/impressions.ts): the pages are handed in, written a batch at a time in a
 * later macrotask through the real event pipeline (KV write-ahead log), kept when a write fails,
 * and every one arrives. Timers are the test's own: nothing sleeps.
 */
import assert from "node:assert/strict";
import { ImpressionRecorder } from "../../analytics/impressions.ts";
import { WAL_PREFIX } from "../../analytics/wal.ts";
import type { EventInput, EventSink } from "../../core/events.ts";
import { FixedClock } from "../../core/clock.ts";
import { memoryLogger } from "../../core/log.ts";
import type { ServedResults } from "../../core/search/engine.ts";
import type { TimerId, Timers } from "../../core/timers.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { parquetIdCounts } from "./_count.ts";
import { hoursAgo, search, searchWorld } from "../search/_world.ts";

/** Timers run by hand: `run()` fires what is due, in order. */
function manualTimers() {
  const due: { id: number; fn: () => void }[] = [];
  let next = 1;
  const timers: Timers = {
    setTimeout: (fn) => {
      const id = next++;
      due.push({ id, fn });
      return id as unknown as TimerId;
    },
    clearTimeout: (id) => {
      const i = due.findIndex((t) => t.id === (id as unknown as number));
      if (i >= 0) due.splice(i, 1);
    },
  };
  return { timers, pending: () => due.length, run: () => due.splice(0).forEach((t) => t.fn()) };
}

function page(w: { deps: { clock: { now(): Date } } }, n: number, results = 10): ServedResults {
  return {
    tenantId: "tn_batches",
    dataModelId: "dm_batches",
    query: `query ${n}`,
    caller: undefined,
    at: w.deps.clock.now(),
    results: Array.from({ length: results }, (_, i) => ({
      articleId: `ar_${n}_${i}`,
      url: `https://news.example/${n}/${i}`,
      position: i + 1,
    })),
  } as ServedResults;
}

/** Every event row in the KV write-ahead log, and how many batches hold them. */
async function logged(kv: Deno.Kv) {
  const rows: Record<string, unknown>[] = [];
  const batches = new Set<unknown>();
  for await (const chunk of kv.list<Uint8Array>({ prefix: [...WAL_PREFIX] })) {
    batches.add(chunk.key[1]);
    for (const line of new TextDecoder().decode(chunk.value).split("\n")) if (line) rows.push(JSON.parse(line));
  }
  return { rows, batches: batches.size };
}

Deno.test("ImpressionRecorder: every impression of 300 pages arrives in the event log, each once, in batches", async () => {
  await using w = await createTestWorld();
  const { timers, run } = manualTimers();
  const recorder = new ImpressionRecorder(w.deps.events, w.deps.clock, w.log, { timers });
  for (let n = 0; n < 300; n++) {
    recorder.add(page(w, n));
    // The write waits for a later macrotask: never inside the request that filled the batch.
    if (n % 37 === 0) run();
  }
  await recorder.flush();
  assert.equal(recorder.waiting, 0);
  const { rows, batches } = await logged(w.deps.kv);
  assert.equal(rows.length, 300 * 11, "one api_call and ten result_impressions a page");
  const impressions = rows.filter((r) => r.event_type === "result_impression").map((r) => r.article_id);
  assert.equal(new Set(impressions).size, 3000, "every article once, none twice");
  assert.equal(rows.filter((r) => r.event_type === "api_call").length, 300);
  assert.ok(batches < 300, `written in batches, not a page at a time (${batches} batches)`);
});

Deno.test("ImpressionRecorder writes in a later macrotask, one batch at a time", async () => {
  await using w = await createTestWorld();
  const { timers, pending, run } = manualTimers();
  let inFlight = 0;
  let most = 0;
  // The real pipeline, watched: how many writes run at once.
  const watched: EventSink = {
    record: async (events: EventInput[]) => {
      most = Math.max(most, ++inFlight);
      try {
        await w.deps.events.record(events);
      } finally {
        inFlight--;
      }
    },
  };
  const recorder = new ImpressionRecorder(watched, w.deps.clock, w.log, { timers, batchEvents: 22 });
  recorder.add(page(w, 1));
  assert.equal(pending(), 0, "11 events wait: below the batch size, nothing scheduled");
  recorder.add(page(w, 2));
  assert.equal(pending(), 1, "a full batch schedules a write");
  assert.equal(inFlight, 0, "but does not write inside add()");
  run();
  for (let n = 3; n < 40; n++) recorder.add(page(w, n)); // more full batches while the first is written
  run();
  await recorder.flush();
  assert.equal(most, 1, "never two writes at once");
  assert.equal((await logged(w.deps.kv)).rows.length, 39 * 11);
});

Deno.test("ImpressionRecorder keeps a batch whose write failed and writes it at the next flush", async () => {
  await using w = await createTestWorld();
  const log = memoryLogger();
  let failures = 1;
  // Fault injection in front of the real pipeline: the first write fails as a KV outage would.
  const flaky: EventSink = {
    record: (events: EventInput[]) =>
      failures-- > 0 ? Promise.reject(new Error("event log commit failed")) : w.deps.events.record(events),
  };
  const recorder = new ImpressionRecorder(flaky, w.deps.clock, log, { timers: manualTimers().timers });
  for (let n = 0; n < 5; n++) recorder.add(page(w, n));
  await recorder.flush();
  assert.equal(recorder.waiting, 55, "kept after the failed write");
  assert.equal(log.lines.filter((l) => l.level === "error").length, 1);
  assert.equal((await logged(w.deps.kv)).rows.length, 0);
  await recorder.flush();
  assert.equal(recorder.waiting, 0);
  assert.equal((await logged(w.deps.kv)).rows.length, 55, "every event arrives, none twice");
});

Deno.test("ImpressionRecorder: a write that landed but whose answer was lost is written again under the same ids, stored once", async () => {
  await using w = await createTestWorld();
  const log = memoryLogger();
  let lost = 1;
  // The commit reaches the log, the answer does not (a remote KV's timeout): the batch is kept and written again.
  const flaky: EventSink = {
    record: async (events: EventInput[]) => {
      await w.deps.events.record(events);
      if (lost-- > 0) throw new Error("event log commit answer lost");
    },
  };
  const recorder = new ImpressionRecorder(flaky, w.deps.clock, log, { timers: manualTimers().timers });
  for (let n = 0; n < 5; n++) recorder.add(page(w, n));
  await recorder.flush();
  await recorder.flush();
  assert.equal(recorder.waiting, 0);
  await w.deps.events.flush();
  const counts = await parquetIdCounts(w.deps.duckdb, `${w.deps.config.dataDir.replace(/\/+$/, "")}/events`);
  assert.equal(counts.size, 55, "every event stored");
  assert.ok([...counts.values()].every((n) => n === 1), "none twice");
});

Deno.test("ImpressionRecorder: one caller's refused impression does not hold back other tenants' impressions", async () => {
  await using w = await createTestWorld();
  const log = memoryLogger();
  const recorder = new ImpressionRecorder(w.deps.events, w.deps.clock, log, { timers: manualTimers().timers });
  for (let n = 0; n < 3; n++) recorder.add(page(w, n));
  // A Web Bot Auth caller at a long host (253 characters), or a payproxy agent id of 256: a caller the
  // service itself names. Its page shares the batch with the other searches of the moment.
  const longHost = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(53)}.example`;
  recorder.add({ ...page(w, 3), caller: `webbot:${longHost}` });
  recorder.add({ ...page(w, 4), caller: "webbot:x", tenantId: "tn_other", results: [] });
  await recorder.flush();
  await recorder.flush();
  assert.equal(recorder.waiting, 0, "nothing waits for ever behind one event");
  const { rows } = await logged(w.deps.kv);
  assert.equal(rows.length, 4 * 11 + 1, "every page is logged, the long caller's too");
  assert.equal(rows.filter((r) => r.agent_identity === `webbot:${longHost}`).length, 11);
});

Deno.test("ImpressionRecorder: one tenant whose part of the event log is full holds back only its own impressions; other tenants' are written", async () => {
  const BOUND = 65_536;
  await using w = await createTestWorld({ env: { EVENTS_WAL_MAX_BYTES: String(BOUND) } });
  const log = memoryLogger();
  const recorder = new ImpressionRecorder(w.deps.events, w.deps.clock, log, { timers: manualTimers().timers });
  // tn_batches's part of the log is full (its flush lags); the log itself has room.
  const full = ["ev_wal_tsize", "tn_batches", "added"];
  await w.deps.kv.set(full, new Deno.KvU64(BigInt(BOUND / 4)));
  // And the log holds all but its last part, kept for tenants under theirs.
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND - BOUND / 4)));
  for (let n = 0; n < 3; n++) {
    recorder.add(page(w, n, 3));
    recorder.add({ ...page(w, 10 + n, 3), tenantId: "tn_other" });
  }
  await recorder.flush();
  assert.equal(recorder.waiting, 12, "tn_batches's pages are kept for the next flush");
  const written = (await logged(w.deps.kv)).rows;
  assert.equal(written.length, 12);
  assert.ok(written.every((r) => r.tenant_id === "tn_other"), "every other tenant's page is written");
  // Its part drains: its pages are written at the next flush.
  await w.deps.kv.delete(full);
  await w.deps.kv.delete(["ev_wal_size", "added"]);
  await recorder.flush();
  assert.equal(recorder.waiting, 0);
  assert.equal((await logged(w.deps.kv)).rows.length, 24, "every page once");
});

Deno.test("ImpressionRecorder: an event the log refuses is dropped and counted alone; its batch is written", async () => {
  await using w = await createTestWorld();
  const log = memoryLogger();
  const recorder = new ImpressionRecorder(w.deps.events, w.deps.clock, log, { timers: manualTimers().timers });
  for (let n = 0; n < 3; n++) recorder.add(page(w, n));
  // A row no validation accepts (a position past the schema's bound) between good pages.
  recorder.add({
    ...page(w, 3, 1),
    results: [{ articleId: "ar_bad", url: "https://news.example/x", position: 20_001 }],
  });
  recorder.add(page(w, 4));
  await recorder.flush();
  assert.equal(recorder.waiting, 0, "a refusal that no retry can cure is not kept");
  const { rows } = await logged(w.deps.kv);
  assert.equal(rows.length, 4 * 11 + 1, "every other event of the batch is logged, once");
  assert.ok(!rows.some((r) => r.article_id === "ar_bad"));
  assert.equal(log.lines.filter((l) => l.level === "error").length, 1, "the dropped event is counted in one line");
});

Deno.test("ImpressionRecorder is bounded: past maxEvents the oldest are dropped and counted in an error line", async () => {
  await using w = await createTestWorld();
  const log = memoryLogger();
  const down: EventSink = { record: () => Promise.reject(new Error("event log commit failed")) };
  const recorder = new ImpressionRecorder(down, w.deps.clock, log, {
    timers: manualTimers().timers,
    maxEvents: 50,
  });
  for (let n = 0; n < 10; n++) recorder.add(page(w, n));
  assert.equal(recorder.waiting, 50);
  await recorder.flush();
  const dropped = log.lines.find((l) => String(l.msg).startsWith("search impressions dropped"));
  assert.equal(dropped?.events, 60);
});

Deno.test("searches over HTTP: every served result is an impression once the pipeline stops", async () => {
  await using w = await searchWorld();
  await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/rates",
      title: "Interest rates held",
      body: "The bank held interest rates.",
      pubdate: hoursAgo(w, 2),
    },
    {
      url: "https://beta.example/rates",
      title: "Rates and mortgages",
      body: "Mortgage rates follow interest rates.",
      pubdate: hoursAgo(w, 3),
    },
  ]);
  let served = 0;
  for (let i = 0; i < 30; i++) {
    const r = await search(w, { query: "interest rates" });
    assert.equal(r.status, 200);
    served += r.json.response.results.length;
  }
  assert.ok(served >= 30);
  await w.deps.events.stop(); // hands in what the recorder holds, then flushes the log to Parquet
  const articles = await (await w.app.request("/v1/analytics/articles", { headers: bearer(w.key) })).json();
  const impressions = articles.articles.reduce((n: number, a: { impressions: number }) => n + a.impressions, 0);
  assert.equal(impressions, served);
});

Deno.test("ImpressionRecorder: with one tenant's part of the event log full, searches retry its impressions at most once per Retry-After; other tenants' are written", async () => {
  const BOUND = 16 * 1024 * 1024;
  await using w = await createTestWorld({ env: { EVENTS_WAL_MAX_BYTES: String(BOUND) } });
  const clock = w.deps.clock as FixedClock;
  // Counts what the recorder hands the pipeline: each record() prepares its whole batch.
  const asked: string[] = [];
  const recorded: EventInput[][] = [];
  const sink: EventSink = {
    record: (events) => (recorded.push(events), w.deps.events.record(events)),
    refuseWhenFull: (tenantId) => (asked.push(tenantId ?? "*"), w.deps.events.refuseWhenFull(tenantId)),
  };
  const { timers, run } = manualTimers();
  const recorder = new ImpressionRecorder(sink, clock, memoryLogger(), { timers, batchEvents: 11 });
  await w.deps.kv.set(["ev_wal_tsize", "tn_batches", "added"], new Deno.KvU64(BigInt(BOUND / 4)));
  await w.deps.kv.set(["ev_wal_size", "added"], new Deno.KvU64(BigInt(BOUND - BOUND / 4)));
  for (let n = 0; n < 20; n++) recorder.add(page(w, n));
  // The write a timer started runs on the event loop's turns.
  const until = async (done: () => boolean | Promise<boolean>) => {
    for (let i = 0; !(await done()); i++) {
      if (i > 1000) throw new Error(`stuck: ${recorder.waiting} waiting, asked ${asked.length} times`);
      await new Promise((r) => setTimeout(r, 0));
    }
  };
  const settle = async () => {
    run();
    await recorder.flush().catch(() => {}); // waits for the write a timer started
  };
  run();
  const tries = () => asked.filter((t) => t === "tn_batches").length;
  const fullRecorded = () => recorded.flat().filter((e) => e.tenant_id === "tn_batches").length;
  // The first write asks, and keeps tn_batches's 220 events unprepared.
  await until(() => recorder.waiting === 220);
  assert.equal(tries(), 1);
  assert.equal(fullRecorded(), 0, "a tenant without room: nothing of it prepared");
  // 30 searches of another tenant within the Retry-After: each written, the kept events not retried.
  for (let n = 0; n < 30; n++) {
    recorder.add({ ...page(w, 100 + n), tenantId: "tn_other" });
    run();
    await until(() => recorder.waiting === 220);
  }
  assert.equal(tries(), 1, "no retry before the Retry-After");
  const others = async () => (await logged(w.deps.kv)).rows.filter((r) => r.tenant_id === "tn_other").length;
  await until(async () => await others() === 30 * 11);
  // Past it, the next search retries them once.
  clock.advance(60_000);
  recorder.add({ ...page(w, 200), tenantId: "tn_other" });
  run();
  await until(() => tries() === 2);
  await settle();
  assert.equal(recorder.waiting, 220);
  assert.equal(fullRecorded(), 0);
});
