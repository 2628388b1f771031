/**
 * A concurrent client that polls `/healthz` from its own thread (a worker has its own event loop,
 * so a stalled server cannot also stall the measurement). Messages in: `{ url, intervalMs }` to
 * start, `"reset"` to start a new worst-latency window, `"read"` for `{ worstMs, probes, failures }`
 * of the window, sent once the next probe completes (so a stall in progress is counted). Each probe
 * has a 30 s cap so a stall shows as a number, not a hang.
 */
interface Scope {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
}
const scope = self as unknown as Scope;
let worstMs = 0, probes = 0, failures = 0;
let readWanted = false;

async function probeLoop(url: string, intervalMs: number) {
  while (true) {
    const started = performance.now();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
      await res.body?.cancel();
      if (!res.ok) failures++;
    } catch {
      failures++;
    }
    const ms = performance.now() - started;
    worstMs = Math.max(worstMs, ms);
    probes++;
    if (readWanted) {
      readWanted = false;
      scope.postMessage({ worstMs: Math.round(worstMs), probes, failures });
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

scope.onmessage = (e) => {
  if (e.data === "reset") {
    worstMs = 0;
    probes = 0;
    failures = 0;
  } else if (e.data === "read") {
    readWanted = true;
  } else probeLoop(e.data.url, e.data.intervalMs);
};
