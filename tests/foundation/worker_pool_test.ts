import assert from "node:assert/strict";
import { PoolBusyError, PoolTimeoutError, WorkerPool } from "../../core/worker_pool.ts";

const pool = (options: { size: number; deadlineMs?: number; maxQueued?: number; maxQueuedPerCaller?: number }) =>
  new WorkerPool<{ tag: string; ms: number }, string>({
    name: "test work",
    module: new URL("./_busy_worker.ts", import.meta.url),
    deadlineMs: 10_000,
    maxQueued: 100,
    // A start that hangs (seen now and then under `deno test --parallel`) is replaced well before a job's deadline.
    startLimitMs: 5_000,
    ...options,
  });

Deno.test("WorkerPool takes callers' queues in turn, one job each", async () => {
  const p = pool({ size: 1 });
  try {
    await p.run("warm", { tag: "warm", ms: 0 });
    const order: string[] = [];
    const jobs = [
      ...["a1", "a2", "a3"].map((tag) => p.run("a", { tag, ms: 30 })),
      ...["b1", "b2"].map((tag) => p.run("b", { tag, ms: 30 })),
      p.run("c", { tag: "c1", ms: 30 }),
    ].map((job) => job.then((tag) => order.push(tag)));
    await Promise.all(jobs);
    assert.deepEqual(order, ["a1", "b1", "c1", "a2", "b2", "a3"]);
  } finally {
    p.close();
  }
});

Deno.test("WorkerPool keeps one worker free of a caller that already runs on all others", async () => {
  const p = pool({ size: 2 });
  try {
    await p.run("warm", { tag: "warm", ms: 0 });
    const finished: string[] = [];
    const slow = Array.from(
      { length: 4 },
      (_, i) => p.run("a", { tag: `a${i}`, ms: 600 }).then((t) => finished.push(t)),
    );
    // Handled at once: a failed assertion below closes the pool under them, and their rejections
    // must not outlive this test.
    for (const job of slow) job.catch(() => {});
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(await p.run("b", { tag: "b", ms: 0 }), "b");
    // By order, not by a time: a slow machine stretches both alike.
    assert.deepEqual(finished, [], "the other caller found a free worker before the busy one's first job ended");
    assert.equal(p.stats().running, 1, "the busy caller runs on one worker only");
    await Promise.all(slow);
  } finally {
    p.close();
  }
});

Deno.test("WorkerPool refuses past its queue bounds, and its deadline covers the wait and the run", async () => {
  const p = pool({ size: 1, deadlineMs: 300, maxQueued: 3, maxQueuedPerCaller: 2 });
  try {
    await p.run("warm", { tag: "warm", ms: 0 });
    const started = performance.now();
    const running = p.run("a", { tag: "a0", ms: 2000 });
    await new Promise((r) => setTimeout(r, 20)); // a0 has left the queue
    const waiting = [p.run("a", { tag: "a1", ms: 0 }), p.run("a", { tag: "a2", ms: 0 })];
    await assert.rejects(p.run("a", { tag: "a3", ms: 0 }), PoolBusyError, "one caller's share of the queue is full");
    const b = p.run("b", { tag: "b1", ms: 0 });
    await assert.rejects(p.run("c", { tag: "c1", ms: 0 }), (err: unknown) => {
      assert.ok(err instanceof PoolBusyError);
      assert.equal(err.message, "test work is busy");
      assert.equal(err.retryAfterS, 1);
      return true;
    });
    // a0 runs past the deadline: its worker is stopped; those waiting behind it end at their own deadlines
    // (still waiting, or just started on the fresh worker when this machine is slow), never after a0's 2 s.
    await assert.rejects(running, (err: unknown) => err instanceof PoolTimeoutError && err.started);
    // Each ends by its own deadline: dropped while waiting, or run on the fresh worker when it came up in time
    // (an idle machine starts a worker in a few ms): either way never held for a0's 2 s.
    for (const [job, tag] of [[waiting[0], "a1"], [waiting[1], "a2"], [b, "b1"]] as const) {
      const outcome = await job.then((v) => v, (err) => err);
      assert.ok(outcome === tag || outcome instanceof PoolTimeoutError, `${tag}: ${outcome}`);
    }
    assert.ok(performance.now() - started < 1000, "nothing waited for the 2 s job");
    assert.equal(await p.run("a", { tag: "again", ms: 0 }), "again", "a fresh worker took the slot");
    // a0's worker was replaced; a waiting job that started on a fresh worker still loading may have been too.
    assert.ok(p.stats().replaced >= 1);
  } finally {
    p.close();
  }
});

Deno.test("WorkerPool replaces a worker whose start hangs, and the waiting job runs on the next one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pool-hang-" });
  const p = new WorkerPool<{ tag: string }, string>({
    name: "hang once",
    module: new URL(`./_hang_once_worker.ts?marker=${encodeURIComponent(`${dir}/started`)}`, import.meta.url),
    size: 1,
    deadlineMs: 10_000,
    maxQueued: 10,
    startLimitMs: 2_000,
  });
  try {
    assert.equal(await p.run("a", { tag: "after a hung start" }), "after a hung start");
    assert.equal(p.stats().replaced, 1);
  } finally {
    p.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("WorkerPool fails waiting jobs once startAttempts workers in a row never start", async () => {
  const p = new WorkerPool<{ tag: string }, string>({
    name: "never starts",
    module: new URL("data:text/javascript,"),
    size: 1,
    deadlineMs: 10_000,
    maxQueued: 10,
    startLimitMs: 100,
    startAttempts: 2,
  });
  try {
    await assert.rejects(p.run("a", { tag: "x" }), /never starts worker did not start/);
  } finally {
    p.close();
  }
});
