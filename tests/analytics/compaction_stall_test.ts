/**
 * A compaction whose process stalled past the flusher lease (analytics/compaction.ts): the holder
 * that took over finished its manifest and compacted the day again; the stalled one, waking, must
 * not end the newer compaction's manifest or swap.
 */
import assert from "node:assert/strict";
import { compactDay, recoverCompactions } from "../../analytics/compaction.ts";
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
