/**
 * A compaction whose process stalled past the flusher lease (analytics/compaction.ts): the holder
 * that took over finished its manifest and compacted the day again; the stalled one, waking, must
 * not end the newer compaction's manifest or swap. A compactor whose lease another holder took
 * (between two days, or during a day's merge) claims and swaps no further day: that holder's flush
 * dedupe reads the day's files.
 */
import assert from "node:assert/strict";
import { compactDay, recoverCompactions } from "../../analytics/compaction.ts";
import { EventPipeline } from "../../analytics/events.ts";
import { KvLease } from "../../core/kv_lease.ts";
import { analyticsWorld } from "./_fixture.ts";
import { parquetIdCounts } from "./_count.ts";
import { kvThrough } from "../_kv_proxy.ts";

const DAY = "2026-11-22";

const questions = (prefix: string, n: number, ts: string) =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `${prefix}-${String(i).padStart(6, "0")}`,
    event_type: "query",
    ai_agent: "am_main",
    prompt: "Where should I travel?",
    ts,
  }));

Deno.test("compaction: a compactor stalled in its swap leaves the manifest of the day's next compaction in place, so no event is lost", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const dir = deps.analytics.eventsDir;
  const kvDeps = { kv: deps.kv, db: deps.duckdb, clock: world.w.clock };
  for (let i = 0; i < 3; i++) {
    await deps.events.record(questions(`f${i}`, 4, `${DAY}T0${i + 1}:00:00Z`));
    await deps.events.flush();
  }
  // A marks its manifest written, deletes its inputs and stalls before its rename.
  const stalledA = Promise.withResolvers<void>();
  const gateA = Promise.withResolvers<void>();
  const a = compactDay(kvDeps, dir, DAY, 2, {
    afterInputsRemoved: async () => {
      stalledA.resolve();
      await gateA.promise;
    },
  });
  await stalledA.promise;
  // The next holder finishes A's compaction, flushes more and compacts the day again; it dies mid-swap.
  await recoverCompactions(deps.kv, dir);
  await deps.events.record(questions("g", 4, `${DAY}T05:00:00Z`));
  await deps.events.flush();
  const stalledB = Promise.withResolvers<void>();
  const gateB = Promise.withResolvers<void>();
  const b = compactDay(kvDeps, dir, DAY, 2, {
    afterInputsRemoved: async () => {
      stalledB.resolve();
      await gateB.promise;
    },
  });
  await stalledB.promise;
  gateA.resolve();
  await a;
  const manifest = await deps.kv.get<{ state: string }>(["ev_compaction", DAY]);
  assert.equal(manifest.value?.state, "written", "the newer compaction's manifest is kept for recovery");
  // The holder after them finishes the newer compaction: every event of the day is there.
  await recoverCompactions(deps.kv, dir);
  const counts = await parquetIdCounts(deps.duckdb, dir);
  assert.equal(counts.size, 16);
  gateB.resolve();
  await b;
  assert.equal((await parquetIdCounts(deps.duckdb, dir)).size, 16);
});

Deno.test("compaction recovery: a planned compaction whose stalled compactor marks it written meanwhile is not undone under it, so no event is lost", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const dir = deps.analytics.eventsDir;
  for (let i = 0; i < 3; i++) {
    await deps.events.record(questions(`f${i}`, 4, `${DAY}T0${i + 1}:00:00Z`));
    await deps.events.flush();
  }
  const isManifest = (k: Deno.KvKey) => k[0] === "ev_compaction";
  // A has written its merged `.tmp` and stalls before the commit that marks its manifest written.
  const stalledA = Promise.withResolvers<void>();
  const gateA = Promise.withResolvers<void>();
  const kvA = kvThrough(deps.kv, {
    atomic() {
      let marks = false;
      return {
        set(key, value) {
          if (isManifest(key) && (value as { state?: string }).state === "written") marks = true;
        },
        async commit(real) {
          if (marks) {
            stalledA.resolve();
            await gateA.promise;
          }
          return await real();
        },
      };
    },
  });
  const a = compactDay({ kv: kvA, db: deps.duckdb, clock: world.w.clock }, dir, DAY, 2);
  await stalledA.promise;
  // The next holder recovers the planned manifest; A wakes as it is about to drop the manifest.
  const wake = async () => {
    gateA.resolve();
    await a;
  };
  const kvB = kvThrough(deps.kv, {
    async delete(key, real) {
      if (isManifest(key)) await wake();
      return await real();
    },
    atomic() {
      let drops = false;
      return {
        delete(key) {
          if (isManifest(key)) drops = true;
        },
        async commit(real) {
          if (drops) await wake();
          return await real();
        },
      };
    },
  });
  await recoverCompactions(kvB, dir);
  await a;
  await recoverCompactions(deps.kv, dir);
  assert.equal((await parquetIdCounts(deps.duckdb, dir)).size, 12, "every event of the day");
});

Deno.test("compaction: a compactor whose lease another holder took swaps no day under that holder's flush, so a retried event is stored once", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const { clock } = world.w;
  const dir = deps.analytics.eventsDir;
  const leaseMs = deps.events.options.leaseMs;
  for (let i = 0; i < 3; i++) {
    await deps.events.record(questions(`f${i}`, 4, `${DAY}T0${i + 1}:00:00Z`));
    await deps.events.flush();
  }
  // Compactor A held the flusher lease (it merged the days before this one); it lapsed meanwhile.
  clock.advance(leaseMs + 1);
  const leaseA = new KvLease({ kv: deps.kv, clock, key: ["ev_flush_lease"], owner: "compactor-a", ttlMs: leaseMs });
  assert.ok(await leaseA.acquire());
  clock.advance(leaseMs + 1);
  const db = deps.duckdb;
  const real = db.withConnection.bind(db);
  const aDeps = { kv: deps.kv, db: { withConnection: real } as typeof db, clock, lease: leaseA };
  // An agent retries a batch the holder after A (B) stored already.
  await deps.events.record(questions("f0", 1, `${DAY}T01:00:00Z`));
  // B's flush (it takes the lease) reads the day's files for its dedupe just as A gets to the day.
  const halfSwapped = Promise.withResolvers<void>();
  const gateA = Promise.withResolvers<void>();
  let a: Promise<number> | undefined;
  db.withConnection = async (fn) => {
    if (!a) {
      a = compactDay(aDeps, dir, DAY, 2, {
        afterInputsRemoved: async () => {
          halfSwapped.resolve();
          await gateA.promise;
        },
      });
      await Promise.race([halfSwapped.promise, a]);
    }
    try {
      return await real(fn);
    } finally {
      gateA.resolve();
    }
  };
  try {
    await deps.events.flush();
  } finally {
    db.withConnection = real;
    gateA.resolve();
  }
  assert.equal(await a, 0, "A merged nothing: the lease is B's");
  const counts = await parquetIdCounts(deps.duckdb, dir);
  assert.equal(counts.size, 12);
  assert.equal(counts.get("f0-000000"), 1, "the retried event is stored once");
});

Deno.test("compaction: a pipeline's compact() whose lease another holder took between two days compacts the second day no more", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const { clock } = world.w;
  const dir = deps.analytics.eventsDir;
  const DAYS = ["2026-11-21", DAY];
  for (const day of DAYS) {
    for (let i = 0; i < 2; i++) {
      await deps.events.record(questions(`${day}-${i}`, 2, `${day}T0${i + 1}:00:00Z`));
      await deps.events.flush();
    }
  }
  const files = async (day: string) => (await Array.fromAsync(Deno.readDir(`${dir}/date=${day}`))).length;
  // A stalls as it claims the second day; B takes the lapsed lease meanwhile.
  const stalled = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  const kvA = kvThrough(deps.kv, {
    atomic() {
      let claimsSecond = false;
      return {
        set(key) {
          if (key[0] === "ev_compaction" && key[1] === DAY) claimsSecond = true;
        },
        async commit(realCommit) {
          if (claimsSecond) {
            stalled.resolve();
            await gate.promise;
          }
          return await realCommit();
        },
      };
    },
  });
  clock.advance(deps.events.options.leaseMs + 1);
  const a = new EventPipeline({ ...deps, kv: kvA, repos: deps.repos }, { ...deps.events.options, compactMinFiles: 2 });
  const compacting = a.compact();
  await stalled.promise;
  clock.advance(deps.events.options.leaseMs + 1);
  await deps.events.flush();
  gate.resolve();
  assert.equal(await compacting, 2, "the first day's two files only");
  assert.deepEqual([await files(DAYS[0]!), await files(DAY)], [1, 2]);
  assert.equal((await deps.kv.get(["ev_compaction", DAY])).value, null, "no manifest left for the second day");
  assert.equal((await parquetIdCounts(deps.duckdb, dir)).size, 8);
});

Deno.test("compaction: a tick over 30 days with nothing to merge renews the lease for none of them", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const dir = deps.analytics.eventsDir;
  // 30 days of one file each: below compactMinFiles, nothing to merge.
  for (let d = 1; d <= 30; d++) {
    const day = `2026-10-${String(d).padStart(2, "0")}`;
    await Deno.mkdir(`${dir}/date=${day}`, { recursive: true });
    await Deno.writeFile(`${dir}/date=${day}/0195f0c0-0000-7000-8000-000000000001.parquet`, new Uint8Array());
  }
  let leaseWrites = 0;
  const counting = kvThrough(deps.kv, {
    atomic: () => ({
      set(key) {
        if (key[0] === "ev_flush_lease") leaseWrites++;
      },
    }),
  });
  const pipeline = new EventPipeline({ ...deps, kv: counting, repos: deps.repos }, {
    ...deps.events.options,
    compactMinFiles: 2,
  });
  assert.equal(await pipeline.compact(), 0);
  assert.equal(leaseWrites, 1, "the tick's own take of the lease, no renewal per day");
});

Deno.test("flush: a tick over an empty log writes the flusher lease once (its take), not again before its first listing", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  let leaseWrites = 0;
  const counting = kvThrough(deps.kv, {
    atomic: () => ({
      set(key) {
        if (key[0] === "ev_flush_lease") leaseWrites++;
      },
    }),
  });
  const pipeline = new EventPipeline({ ...deps, kv: counting, repos: deps.repos }, deps.events.options);
  await pipeline.flush();
  assert.equal(leaseWrites, 1);
});
