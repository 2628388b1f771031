/**
 * Analytics reads racing compaction (analytics/compaction.ts, analytics/day_swaps.ts): a query
 * never reports a figure computed over a day folder that holds neither all its inputs nor the
 * merged file, never fails because compaction deleted a file it had listed, and a process that dies
 * mid-swap leaves readers answering 503 (bounded) until the next flusher lease holder repairs the
 * day. Real flusher, real Parquet, real DuckDB; compaction is stopped between its deletes and its
 * rename through `compactDay`'s hook, and the query's DuckDB run is seen through a wrapped
 * connection.
 */
import assert from "node:assert/strict";
import { compactDay } from "../../analytics/compaction.ts";
import {
  daysRead,
  DaySwapGuard,
  type DaySwapGuardOptions,
  SWAP_STATE_KEY,
  swapEnded,
  swapStarted,
  type SwapState,
} from "../../analytics/day_swaps.ts";
import type { AnalyticsDb } from "../../analytics/duckdb.ts";
import { AnalyticsEngine } from "../../analytics/engine.ts";
import { EventPipeline } from "../../analytics/events.ts";
import { logsCsvStream } from "../../analytics/export.ts";
import { blockCounts, windowParams } from "../../analytics/metrics.ts";
import { AppError } from "../../core/errors.ts";
import { analyticsWorld } from "./_fixture.ts";
import { kvThrough, readCounting } from "../_kv_proxy.ts";
import { parquetFiles } from "./_count.ts";

type World = Awaited<ReturnType<typeof analyticsWorld>>;

const DAY = "2026-11-22";
const PER_FILE = 4;

const questions = (prefix: string, n: number, ts: string) =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `${prefix}-${String(i).padStart(6, "0")}`,
    event_type: "query",
    interaction_type: "free_form",
    ai_agent: "am_main",
    prompt: "Where should I travel?",
    ts,
  }));

/** Three flushed files on DAY (PER_FILE questions each) and one file the day before (one question). */
async function threeFilesOnDay(world: World): Promise<void> {
  const { deps } = world.w;
  await deps.events.record(questions("before", 1, "2026-11-21T10:00:00Z"));
  for (let i = 0; i < 3; i++) {
    await deps.events.record(questions(`f${i}`, PER_FILE, `${DAY}T0${i + 1}:00:00Z`));
    await deps.events.flush();
  }
  assert.equal((await parquetFiles(deps.analytics.eventsDir)).filter((f) => f.startsWith(`date=${DAY}`)).length, 3);
}

/** The Ask AI log rows of `day` (the logs endpoint's count rollup). */
async function questionsOn(world: World, engine: AnalyticsEngine, day = DAY): Promise<number> {
  const rows = await engine.query("ask_ai_logs_count", {
    ...windowParams({ start: day, end: day, days: [], tz: "UTC" }),
    tenant_id: world.tenantId,
    interaction_types: ["free_form"],
    ai_agent: null,
    placement_id: null,
    deployment_type: null,
  });
  return Number(rows[0]?.count);
}

/** A DuckDB whose prepared statements run through `around` (the real run is `run()`), once armed. */
function watchedDb(db: AnalyticsDb, around: (run: () => Promise<unknown>, start: () => unknown) => Promise<unknown>) {
  const watch = { armed: false };
  const wrapStmt = (stmt: object) =>
    new Proxy(stmt, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (prop !== "runAndReadAll" || !watch.armed) return value.bind(target);
        return () => {
          const s = target as { runAndReadAll(): Promise<unknown>; start(): unknown };
          return around(() => s.runAndReadAll(), () => s.start());
        };
      },
    });
  const wrapConn = (conn: object) =>
    new Proxy(conn, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (prop !== "prepare") return value.bind(target);
        return async (sql: string) => wrapStmt(await (target as { prepare(s: string): Promise<object> }).prepare(sql));
      },
    });
  const wrapped = {
    withConnection: <T>(fn: (conn: never) => Promise<T>) => db.withConnection((conn) => fn(wrapConn(conn) as never)),
  } as unknown as AnalyticsDb;
  return { db: wrapped, watch };
}

/** A KV whose reads of the swap state are reported to `seen`. */
function watchedKv(kv: Deno.Kv, seen: (state: SwapState | null) => void): Deno.Kv {
  return kvThrough(kv, {
    get: async (key, real) => {
      const entry = await real();
      if (JSON.stringify(key) === JSON.stringify(SWAP_STATE_KEY)) seen(entry.value as SwapState | null);
      return entry;
    },
  });
}

const engineOf = (world: World, db: AnalyticsDb, kv: Deno.Kv, options: DaySwapGuardOptions = {}) =>
  new AnalyticsEngine(db, world.w.deps.analytics.eventsDir, new DaySwapGuard({ kv, clock: world.w.clock }, options));

Deno.test("a query that starts while compaction swaps its day (inputs deleted, merged file not renamed yet) counts every event", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await threeFilesOnDay(world);
  const sawSwap = Promise.withResolvers<void>();
  const ranSql = Promise.withResolvers<void>();
  const kv = watchedKv(deps.kv, (s) => s?.swapping.some((d) => d.date === DAY) && sawSwap.resolve());
  const { db, watch } = watchedDb(deps.duckdb, async (run) => {
    const r = await run();
    ranSql.resolve();
    return r;
  });
  const engine = engineOf(world, db, kv);
  assert.equal(await questionsOn(world, engine), 3 * PER_FILE);
  watch.armed = true;
  let reading: Promise<number> | null = null;
  const merged = await compactDay(
    { kv: deps.kv, db: deps.duckdb, clock: world.w.clock },
    deps.analytics.eventsDir,
    DAY,
    2,
    {
      afterInputsRemoved: async () => {
        assert.deepEqual((await parquetFiles(deps.analytics.eventsDir)).filter((f) => f.startsWith(`date=${DAY}`)), []);
        reading = questionsOn(world, engine);
        // Let the swap go on once the query ran its SQL over the half-swapped day, or waits for the swap.
        await Promise.race([sawSwap.promise, ranSql.promise]);
      },
    },
  );
  assert.equal(merged, 3);
  assert.equal(await reading, 3 * PER_FILE, "every event of the day, not the ones of a half-swapped folder");
  assert.equal(await questionsOn(world, engine, "2026-11-21"), 1);
});

Deno.test("a logs CSV export that lists its day folders while compaction swaps one of them still holds every row of that day", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await threeFilesOnDay(world);
  const sawSwap = Promise.withResolvers<void>();
  const kv = watchedKv(deps.kv, (s) => s?.swapping.some((d) => d.date === DAY) && sawSwap.resolve());
  const engine = engineOf(world, deps.duckdb, kv);
  const rollupDeps = { engine, repos: deps.repos, clock: world.w.clock };
  // One batch of two UTC days (the swapped day and the day before, which keeps the listing non-empty).
  const q = { start_date: "2026-11-21", end_date: DAY };
  const rows = async () => {
    const text = await new Response(await logsCsvStream(rollupDeps, world.tenantId, q)).text();
    return text.trim().split("\n").length - 1;
  };
  assert.equal(await rows(), 3 * PER_FILE + 1);
  let exporting: Promise<number> | null = null;
  await compactDay({ kv: deps.kv, db: deps.duckdb, clock: world.w.clock }, deps.analytics.eventsDir, DAY, 2, {
    afterInputsRemoved: async () => {
      exporting = rows();
      // The export has listed the half-swapped day and waits for the swap to end.
      await sawSwap.promise;
    },
  });
  assert.equal(await exporting, 3 * PER_FILE + 1, "the swapped day's rows are exported, not skipped");
});

Deno.test("an Ask AI rollup that plans its days from derived visit figures while compaction swaps one of them counts that day", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await threeFilesOnDay(world);
  // The day before is closed: its figures are built, so the window reads them and DAY's events.
  assert.equal(await deps.analyticsVisits.build("2026-11-21"), true);
  const sawSwap = Promise.withResolvers<void>();
  const kv = watchedKv(deps.kv, (s) => s?.swapping.some((d) => d.date === DAY) && sawSwap.resolve());
  const source = { engine: engineOf(world, deps.duckdb, kv), visits: deps.analyticsVisits };
  const filters = {
    tenant_id: world.tenantId,
    ai_agent: null,
    placement_id: null,
    deployment_type: null,
    creative_id: null,
    line_item_id: null,
    publisher_id: null,
  };
  const questionsIn = async () => {
    const w = { start: "2026-11-21", end: DAY, days: ["2026-11-21", DAY], tz: "UTC" };
    const byDay = await blockCounts(source, w, filters, { interval: "day" });
    return [...byDay.values()].reduce((n, c) => n + c.engagement_queries, 0);
  };
  assert.equal(await questionsIn(), 3 * PER_FILE + 1);
  let reading: Promise<number> | null = null;
  await compactDay({ kv: deps.kv, db: deps.duckdb, clock: world.w.clock }, deps.analytics.eventsDir, DAY, 2, {
    afterInputsRemoved: async () => {
      reading = questionsIn();
      await sawSwap.promise;
    },
  });
  assert.equal(await reading, 3 * PER_FILE + 1, "the swapped day's events are counted, not left out of the plan");
});

Deno.test("a query whose files compaction deletes after it listed them runs again instead of failing with DuckDB's IO error", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await threeFilesOnDay(world);
  const removed = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  let compacting: Promise<number> | null = null;
  let firstError: unknown = null;
  const { db, watch } = watchedDb(deps.duckdb, async (_run, start) => {
    watch.armed = false; // only the first run is held
    // The statement starts (DuckDB expands the view's glob), then compaction deletes the inputs.
    const pending = start() as { readAll(): Promise<unknown> };
    compacting = compactDay({ kv: deps.kv, db: deps.duckdb, clock: world.w.clock }, deps.analytics.eventsDir, DAY, 2, {
      afterInputsRemoved: () => {
        removed.resolve();
        return release.promise;
      },
    });
    await removed.promise;
    try {
      return await pending.readAll();
    } catch (err) {
      firstError = err;
      throw err;
    } finally {
      release.resolve();
    }
  });
  const engine = engineOf(world, db, deps.kv);
  assert.equal(await questionsOn(world, engine), 3 * PER_FILE); // the view is built
  watch.armed = true;
  try {
    assert.equal(await questionsOn(world, engine), 3 * PER_FILE);
  } finally {
    release.resolve();
    await compacting;
  }
  assert.match(String(firstError), /No such file|Cannot open file/, "the first run met the deleted inputs");
  assert.equal((await parquetFiles(deps.analytics.eventsDir)).filter((f) => f.startsWith(`date=${DAY}`)).length, 1);
});

Deno.test("a process that dies mid-swap: readers of the day answer 503 within their bound, other days answer, and the next lease holder's flush repairs the day", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await threeFilesOnDay(world);
  await assert.rejects(
    compactDay({ kv: deps.kv, db: deps.duckdb, clock: world.w.clock }, deps.analytics.eventsDir, DAY, 2, {
      afterInputsRemoved: () => Promise.reject(new Error("process died")),
    }),
    /process died/,
  );
  const state = async () => (await deps.kv.get<SwapState>(SWAP_STATE_KEY)).value;
  assert.deepEqual((await state())?.swapping.map((s) => s.date), [DAY]);
  const engine = engineOf(world, deps.duckdb, deps.kv, { waitMs: 50, pollMs: 10 });
  const started = performance.now();
  await assert.rejects(questionsOn(world, engine), (err) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.code, "events_reorganising");
    assert.equal(err.kind, "unavailable");
    assert.equal(err.headers?.["retry-after"], "1");
    return true;
  });
  assert.ok(performance.now() - started < 5000, "bounded, not waiting for a swap nobody finishes");
  assert.equal(await questionsOn(world, engine, "2026-11-21"), 1, "a day not being swapped is read as usual");
  // Another process takes the flusher lease once the dead holder's has lapsed; its flush repairs the day.
  const other = new EventPipeline({ ...deps, repos: deps.repos }, { ...deps.events.options });
  world.w.clock.advance(deps.events.options.leaseMs + 1);
  assert.equal((await other.flush()).skipped, undefined);
  assert.deepEqual((await state())?.swapping, []);
  assert.equal((await deps.kv.get(["ev_compaction", DAY])).value, null);
  assert.equal((await parquetFiles(deps.analytics.eventsDir)).filter((f) => f.startsWith(`date=${DAY}`)).length, 1);
  assert.equal(await questionsOn(world, engine), 3 * PER_FILE);
  assert.equal(await questionsOn(world, deps.analytics), 3 * PER_FILE);
  await other.stop();
});

Deno.test("daysRead(): a query waits only for swaps of its window's UTC days, the day before, and the folders of files it names", () => {
  const window = daysRead({ from_date: "2026-11-20", to_date: "2026-11-22", tenant_id: "tn_x", keys: ["a"] });
  // sponsored_daily.sql reads the evening before the window.
  assert.deepEqual(["2026-11-18", "2026-11-19", "2026-11-22", "2026-11-23"].map(window), [false, true, true, false]);
  const files = daysRead({ files: ["/d/events/date=2026-11-02/x.parquet", "/d/events/date=2026-11-04/y.parquet"] });
  assert.deepEqual(["2026-11-02", "2026-11-03", "2026-11-04"].map(files), [true, false, true]);
  assert.equal(daysRead({ tenant_id: "tn_x" })("1999-01-01"), true, "unknown days: every day");
});

Deno.test("DaySwapGuard.run(): a swap that starts and ends during a run repeats it only when it is of a day the run reads", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const guard = new DaySwapGuard({ kv, clock: { now: () => new Date("2026-11-22T12:00:00Z") } });
    const swapDuring = (date: string, swaps: number) => {
      let runs = 0;
      return async () => {
        if (runs++ < swaps) {
          const s = (await kv.get<SwapState>(SWAP_STATE_KEY)).value;
          await kv.set(SWAP_STATE_KEY, swapEnded(swapStarted(s, date, 0), date));
        }
        return runs;
      };
    };
    const window = daysRead({ from_date: "2026-11-20", to_date: "2026-11-22" });
    assert.equal(await guard.run(window, swapDuring("2026-11-10", 1)), 1, "another day: one run");
    assert.equal(await guard.run(window, swapDuring("2026-11-21", 1)), 2, "its day: run again");
    await assert.rejects(guard.run(window, swapDuring("2026-11-21", 3)), (err) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.code, "events_reorganising");
      return true;
    });
    // The state stays small however many swaps it has seen.
    for (let i = 0; i < 100; i++) {
      const s = (await kv.get<SwapState>(SWAP_STATE_KEY)).value;
      await kv.set(SWAP_STATE_KEY, swapEnded(swapStarted(s, "2026-11-01", 0), "2026-11-01"));
    }
    const s = (await kv.get<SwapState>(SWAP_STATE_KEY)).value!;
    assert.ok(s.recent.length <= 64 && s.swapping.length === 0);
  } finally {
    kv.close();
  }
});

Deno.test("DaySwapGuard.run(): a run inside a run costs no reads of its own, and a swap of a day only it reads repeats the outer run", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const reads = { n: 0 };
    const guard = new DaySwapGuard({
      kv: readCounting(kv, reads),
      clock: { now: () => new Date("2026-11-22T12:00:00Z") },
    });
    const swap = async (date: string) => {
      const s = (await kv.get<SwapState>(SWAP_STATE_KEY)).value;
      await kv.set(SWAP_STATE_KEY, swapEnded(swapStarted(s, date, 0), date));
    };
    const window = daysRead({ from_date: "2026-11-21", to_date: "2026-11-22" });
    const inner = daysRead({ files: ["/d/events/date=2026-11-10/x.parquet"] });
    let outerRuns = 0, innerRuns = 0;
    const nested = (swapOnce: string | null) => () =>
      guard.run(window, async () => {
        outerRuns++;
        return await guard.run(inner, async () => {
          if (innerRuns++ === 0 && swapOnce) await swap(swapOnce);
          return innerRuns;
        });
      });
    assert.equal(await nested(null)(), 1);
    assert.deepEqual([reads.n, outerRuns], [2, 1], "two reads of the state for the pair, as for one run");
    reads.n = outerRuns = innerRuns = 0;
    assert.equal(await nested("2026-11-01")(), 1, "a day neither reads: one run");
    reads.n = outerRuns = innerRuns = 0;
    assert.equal(await nested("2026-11-10")(), 2, "a day only the inner run reads: both run again");
    assert.deepEqual([reads.n, outerRuns], [4, 2]);
    // Work a run leaves behind (read after it ended) guards itself.
    let later!: () => Promise<number>;
    await guard.run(window, () => Promise.resolve(later = () => guard.run(inner, () => Promise.resolve(7))));
    reads.n = 0;
    assert.equal(await later(), 7);
    assert.equal(reads.n, 2);
  } finally {
    kv.close();
  }
});

Deno.test("DaySwapGuard.run(): a run inside a run over a day whose swap began before the outer run does not answer over the half-swapped day", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = { now: () => new Date("2026-11-22T12:00:00Z") };
    // The swap of the 20th is under way (and not abandoned) before either run reads the state.
    await kv.set(SWAP_STATE_KEY, swapStarted(null, "2026-11-20", clock.now().getTime()));
    const guard = new DaySwapGuard({ kv, clock }, { waitMs: 100, pollMs: 10 });
    const outer = daysRead({ from_date: "2026-11-22", to_date: "2026-11-22" });
    const inner = daysRead({ files: ["/d/events/date=2026-11-20/x.parquet"] });
    let innerRuns = 0;
    const nested = guard.run(outer, () => guard.run(inner, () => Promise.resolve(++innerRuns)));
    // The nested day is waited for, as a run of it alone would be; the swap never ends here: 503.
    await assert.rejects(nested, (err) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.code, "events_reorganising");
      return true;
    });
    assert.equal(innerRuns, 1, "the figure computed over the half-swapped day is not returned");
    // Once the swap ends, the pair answers.
    const s = (await kv.get<SwapState>(SWAP_STATE_KEY)).value;
    await kv.set(SWAP_STATE_KEY, swapEnded(s, "2026-11-20"));
    assert.equal(await guard.run(outer, () => guard.run(inner, () => Promise.resolve(++innerRuns))), 2);
  } finally {
    kv.close();
  }
});
