import assert from "node:assert/strict";
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
