/** Drives the `/healthz` prober thread (_healthz_prober.ts) from a test. */
import assert from "node:assert/strict";

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

/** An app as `Deno.serve` takes it (a Hono app, or a world's). */
interface Served {
  fetch(req: Request): Response | Promise<Response>;
}

/**
 * Serves `app` on 127.0.0.1 with a `/healthz` prober on it (the stall tests' setting): `base` to
 * call it, `measure` to run work in a fresh window. `await using` it: the prober stops, the server
 * shuts down.
 */
export async function servedAndProbed(app: Served) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  const base = `http://127.0.0.1:${server.addr.port}`;
  let prober: Awaited<ReturnType<typeof healthzProber>>;
  try {
    prober = await healthzProber(base);
  } catch (err) {
    await server.shutdown();
    throw err;
  }
  return {
    base,
    measure: prober.measure,
    async [Symbol.asyncDispose]() {
      await prober[Symbol.asyncDispose]();
      await server.shutdown();
    },
  };
}

/** Asserts that `/healthz` was probed throughout a window, every probe answered 200, the slowest within 1 s. */
export function assertNoStall(window: ProbeWindow, what = ""): void {
  const of = what ? `${what}: ` : "";
  assert.ok(window.probes > 0, `${of}the prober ran`);
  assert.equal(window.failures, 0, `${of}every /healthz probe answered 200`);
  assert.ok(window.worstMs < 1000, `${of}worst /healthz latency ${window.worstMs} ms`);
}

/** POSTs a JSON text to `url` and reads the JSON answer. */
export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string> = {},
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
  return { status: res.status, json: await res.json() };
}
