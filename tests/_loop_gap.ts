/** Measures how long work holds this thread's event loop (in-process; tests/security/_healthz.ts probes over HTTP). */

/** The longest gap between 10 ms timer ticks of this thread while `work` runs. */
export async function worstLoopGap<T>(work: () => Promise<T>): Promise<{ out: T; worstMs: number }> {
  let last = performance.now(), worstMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worstMs = Math.max(worstMs, now - last);
    last = now;
  }, 10);
  try {
    const out = await work();
    // A stall that ends with the work has had no tick after it yet.
    return { out, worstMs: Math.max(worstMs, performance.now() - last) };
  } finally {
    clearInterval(timer);
  }
}
