/** Drives the `/healthz` prober thread (_healthz_prober.ts) from a test. */

/** The worst `/healthz` latency of a window, the probes made and the probes that failed. */
export interface ProbeWindow {
  worstMs: number;
  probes: number;
  failures: number;
}

/** Starts polling `${base}/healthz` every `intervalMs` from its own thread; `await using` it. */
export async function healthzProber(base: string, intervalMs = 25) {
  const worker = new Worker(new URL("./_healthz_prober.ts", import.meta.url), { type: "module" });
  /** The window so far, once the next probe completes (a stall in progress is counted). */
  const read = () =>
    new Promise<ProbeWindow>((resolve) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.postMessage("read");
    });
  worker.postMessage({ url: `${base}/healthz`, intervalMs });
  await read(); // the prober is up and the server has answered once
  return {
    read,
    /** Starts a new window. */
    reset: () => worker.postMessage("reset"),
    /** Runs `work` in a fresh window and returns its result with the window. */
    async measure<T>(work: () => Promise<T>): Promise<{ out: T; window: ProbeWindow }> {
      worker.postMessage("reset");
      const out = await work();
      return { out, window: await read() };
    },
    [Symbol.asyncDispose]: () => Promise.resolve(worker.terminate()),
  };
}
