import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { MAX_BATCH, ReplayMarks } from "../../core/payproxy/replay.ts";

async function withKv(fn: (kv: Deno.Kv) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

Deno.test("ReplayMarks.mark() is true once per key, false after", () =>
  withKv(async (kv) => {
    const marks = new ReplayMarks(kv, { clock: new FixedClock() });
    assert.equal(await marks.mark(["r", "a"], 60_000), true);
    assert.equal(await marks.mark(["r", "a"], 60_000), false);
    assert.equal(await marks.mark(["r", "b"], 60_000), true);
  }));

Deno.test("ReplayMarks: a replay inside a group commit fails alone", () =>
  withKv(async (kv) => {
    const marks = new ReplayMarks(kv, { clock: new FixedClock() });
    await marks.mark(["r", "used"], 60_000);
    const keys = Array.from({ length: 3 * MAX_BATCH }, (_, i) => (i === 70 ? "used" : `k${i}`));
    const results = await Promise.all(keys.map((k) => marks.mark(["r", k], 60_000)));
    assert.deepEqual(results.map((ok, i) => ok ? null : keys[i]).filter(Boolean), ["used"]);
    for (const k of keys) assert.notEqual((await kv.get(["r", k])).versionstamp, null);
  }));

Deno.test("ReplayMarks: the same key from two processes and within one batch is first-use exactly once", () =>
  withKv(async (kv) => {
    // Two instances over one KV stand for two server processes.
    const a = new ReplayMarks(kv, { clock: new FixedClock() }), b = new ReplayMarks(kv, { clock: new FixedClock() });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).mark(["r", "same"], 60_000)),
    );
    assert.equal(results.filter(Boolean).length, 1);
  }));

Deno.test("ReplayMarks: a mark this process made is refused at once, without asking KV", () =>
  withKv(async (kv) => {
    const marks = new ReplayMarks(kv, { clock: new FixedClock() });
    assert.equal(await marks.mark(["r", "a"], 60_000), true);
    // Even with the KV mark gone, this process remembers it: the answer is synchronous.
    await kv.delete(["r", "a"]);
    assert.equal(marks.mark(["r", "a"], 60_000), false);
    // Another process does not remember it and asks KV (where it is gone).
    assert.equal(await new ReplayMarks(kv, { clock: new FixedClock() }).mark(["r", "a"], 60_000), true);
  }));

Deno.test("ReplayMarks: a replay of a mark still committing is refused at once", () =>
  withKv(async (kv) => {
    const marks = new ReplayMarks(kv, { clock: new FixedClock() });
    const first = marks.mark(["r", "a"], 60_000);
    assert.equal(marks.mark(["r", "a"], 60_000), false);
    assert.equal(await first, true);
  }));

Deno.test("ReplayMarks: forgotten marks (expired or beyond the memory bound) are decided by KV", () =>
  withKv(async (kv) => {
    const clock = new FixedClock(new Date("2026-11-22T00:00:00Z"));
    const marks = new ReplayMarks(kv, { clock, recentLimit: 2 });
    for (const k of ["a", "b", "c"]) assert.equal(await marks.mark(["r", k], 60_000), true);
    // "a" was pushed out of memory: KV still refuses it, asynchronously.
    const a = marks.mark(["r", "a"], 60_000);
    assert.ok(a instanceof Promise);
    assert.equal(await a, false);
    // Past its expiry the memory stops answering for "c"; KV (which still holds it) refuses.
    clock.advance(61_000);
    const c = marks.mark(["r", "c"], 60_000);
    assert.ok(c instanceof Promise);
    assert.equal(await c, false);
  }));
