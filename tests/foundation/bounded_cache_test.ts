import assert from "node:assert/strict";
import { boundedCache } from "../../core/bounded_cache.ts";
import { FixedClock } from "../../core/clock.ts";

Deno.test("boundedCache() keeps at most max entries and drops the least recently used first", () => {
  const cache = boundedCache<string, number>({ max: 2 });
  cache.set("a", 1);
  cache.set("b", 2);
  assert.equal(cache.get("a"), 1); // "a" is now the most recently used
  cache.set("c", 3);
  assert.equal(cache.size, 2);
  assert.equal(cache.get("b"), undefined);
  assert.deepEqual([cache.get("a"), cache.get("c")], [1, 3]);
});

Deno.test("boundedCache() expires entries on the injected clock, with a per-entry lifetime override", () => {
  const clock = new FixedClock();
  const cache = boundedCache<string, true>({ max: 10, ttlMs: 1000, now: () => clock.now().getTime() });
  cache.set("default", true);
  cache.set("short", true, { ttl: 10 });
  clock.advance(11);
  assert.equal(cache.has("short"), false);
  assert.equal(cache.has("default"), true);
  clock.advance(1000);
  assert.equal(cache.get("default"), undefined);
});

Deno.test("boundedCache() refuses a bound that is not a positive integer", () => {
  assert.throws(() => boundedCache({ max: 0 }), RangeError);
  assert.throws(() => boundedCache({ max: 1.5 }), RangeError);
});

Deno.test("boundedCache() allocates nothing for its bound up front: a bound of a billion builds at once and still holds", () => {
  const started = performance.now();
  const cache = boundedCache<number, number>({ max: 1_000_000_000, ttlMs: 1000 });
  // Slots for a billion entries would take gigabytes and seconds (or fail) before the first set.
  assert.ok(performance.now() - started < 1000);
  for (let i = 0; i < 1000; i++) cache.set(i, i);
  assert.equal(cache.size, 1000);
  const small = boundedCache<number, number>({ max: 3 });
  for (let i = 0; i < 10; i++) small.set(i, i);
  assert.deepEqual([...small.keys()], [9, 8, 7]);
});
