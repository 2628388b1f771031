import assert from "node:assert/strict";
import { AnalyticsDb } from "../../analytics/duckdb.ts";
import { buildDeps } from "../../composition.ts";
import { FixedClock } from "../../core/clock.ts";
import { parseConfig } from "../../core/config.ts";
import { memoryLogger } from "../../core/log.ts";
import { createTestWorld } from "../_helpers.ts";

Deno.test("Deps lifecycle: start() brings up indexes and background work once; dispose closes DuckDB and KV once", async () => {
  const world = await createTestWorld({ env: { EVENTS_FLUSHER: "true" } });
  const { deps } = world;
  const calls: string[] = [];
  const spy = <T extends object>(name: string, target: T, method: keyof T & string) => {
    const original = (target[method] as (...a: unknown[]) => unknown).bind(target);
    (target as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls.push(`${name}.${method}`);
      return original(...args);
    };
  };
  spy("search", deps.search, "start");
  spy("search", deps.search, "close");
  spy("events", deps.events, "start");
  spy("events", deps.events, "stop");
  spy("retention", deps.retention, "start");
  spy("retention", deps.retention, "stop");
  spy("visits", deps.analyticsVisits, "start");
  spy("visits", deps.analyticsVisits, "stop");
  spy("duckdb", deps.duckdb, "close");

  let seeded = false;
  await deps.start({ indexes: true, background: true, beforeBackground: () => Promise.resolve(void (seeded = true)) });
  await deps.start({ indexes: true, background: true });
  assert.ok(seeded);
  assert.deepEqual(
    calls,
    ["search.start", "retention.start", "events.start", "visits.start"],
    "each part started once, in order",
  );

  calls.length = 0;
  await world.close();
  await world.close();
  assert.deepEqual(
    calls,
    ["retention.stop", "visits.stop", "events.stop", "search.close", "search.close", "duckdb.close"],
    "background work stops in reverse order, the final flush before the stores close, DuckDB closed once",
  );
  await assert.rejects(() => deps.kv.get(["anything"]), "KV is closed");
});

Deno.test("Deps lifecycle: a world that never started background work disposes without flushing the event log", async () => {
  const world = await createTestWorld();
  let stopped = 0;
  const stop = world.deps.events.stop.bind(world.deps.events);
  world.deps.events.stop = () => (stopped++, stop());
  await world.close();
  assert.equal(stopped, 0);
});

Deno.test("Deps lifecycle: a dispose that arrives while start() replays the event log waits for it, then frees the flusher lease", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-lifecycle-" });
  const kvPath = `${dataDir}/kv.sqlite3`;
  try {
    const config = parseConfig({ DATA_DIR: dataDir, KV_PATH: kvPath, EVENTS_FLUSHER: "true", SOURCES_POLLER: "false" });
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    // The replay's Parquet write waits at this gate: start() is then blocked inside its replay, holding the lease.
    let inReplay!: () => void;
    const replaying = new Promise<void>((r) => inReplay = r);
    let open!: () => void;
    const gate = new Promise<void>((r) => open = r);
    const real = AnalyticsDb.lazy({ threads: 1 });
    const duckdb = new Proxy(real, {
      get(target, prop) {
        if (prop === "withConnection") {
          return async (fn: Parameters<AnalyticsDb["withConnection"]>[0]) => {
            inReplay();
            await gate;
            return await target.withConnection(fn);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const deps = buildDeps({ config, kv: await Deno.openKv(kvPath), duckdb, clock, log: memoryLogger() });
    await deps.start();
    await deps.repos.tenants.create({ id: "tn_l", name: "L", createdAt: clock.now().toISOString() });
    await deps.events.record([{ event_id: "lifecycle-1", event_type: "query", tenant_id: "tn_l", prompt: "Tides?" }]);

    const starting = deps.start({ background: true });
    await replaying;
    const disposing = deps[Symbol.asyncDispose]();
    open();
    const started = await starting.then(() => "started", (err: unknown) => err);
    await disposing;

    const kv = await Deno.openKv(kvPath);
    try {
      assert.equal((await kv.get(["ev_flush_lease"])).value, null, "the lease the replay took is released");
      assert.deepEqual(await Array.fromAsync(kv.list({ prefix: ["ev_wal"] })), [], "the replay finished");
      assert.equal(started, "started", "the stores stayed open under the start");
    } finally {
      kv.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
