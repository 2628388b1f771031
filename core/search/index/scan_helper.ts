/**
 * A second thread for the vector scan of large indexes. At a million rows the int8 scan reads
 * about 112 MB per query and is bound by memory traffic on one core; with the rows in a shared
 * WebAssembly memory, a helper thread scans the upper half while this thread scans the lower
 * half, and this thread then waits (a blocking `Atomics.wait`, as the scan itself is
 * synchronous) until the helper has published the job's number. Below {@link minRows} rows the
 * hand-over (about 0.2 ms) costs more than it saves, so one thread scans alone.
 *
 * If the helper does not answer in time (it died), this thread scans the rest itself and stops
 * using the helper: a scan never returns partial cosines.
 */
import { Worker } from "node:worker_threads";
import type { SimdScan } from "./simd.ts";

/** Rows from which a scan is split over two threads. */
export const PARALLEL_SCAN_MIN_ROWS = 131_072;
const HELPER_TIMEOUT_MS = 5_000;

/** Splits large scans over this thread and one helper thread. */
export class ScanHelper {
  readonly minRows: number;
  #worker: Worker | null;
  readonly #done = new Int32Array(new SharedArrayBuffer(4));
  #gen = 0;
  #nextId = 1;
  readonly #ids = new WeakMap<WebAssembly.Memory, number>();
  // When an index's memory is collected here, the helper lets go of its view of it too.
  readonly #released = new FinalizationRegistry<number>((id) => this.#worker?.postMessage({ release: id }));

  constructor({ minRows = PARALLEL_SCAN_MIN_ROWS }: { minRows?: number } = {}) {
    this.minRows = minRows;
    this.#worker = new Worker(new URL("./scan_worker.ts", import.meta.url));
    this.#worker.unref(); // an idle helper does not keep the process alive
    this.#worker.postMessage({ done: this.#done });
  }

  /**
   * Whether a scan of `rows` rows over `kernel` would be split: the helper has started (until
   * then this thread scans alone, so no query waits for a thread to start), the scan is large
   * enough and the rows are in a shared memory.
   */
  splits(kernel: SimdScan, rows: number): boolean {
    return this.#worker !== null && Atomics.load(this.#done, 0) !== 0 && rows >= this.minRows &&
      kernel.memory.buffer instanceof SharedArrayBuffer;
  }

  /** Resolves once the helper thread has started (false if it did not within `timeoutMs`). */
  async started(timeoutMs = HELPER_TIMEOUT_MS): Promise<boolean> {
    const worker = this.#worker;
    if (!worker) return false;
    const r = Atomics.waitAsync(this.#done, 0, 0, timeoutMs);
    if (!r.async) return true;
    worker.ref(); // an unref'd worker would let the event loop end under this wait
    try {
      return (await r.value) !== "timed-out";
    } finally {
      worker.unref();
    }
  }

  /** `kernel.scan(...)`, the upper half of the rows on the helper thread when {@link splits}. */
  scan(kernel: SimdScan, ...args: Parameters<SimdScan["scan"]>): void {
    const [q, m, rows, stride, a, b, out, alpha, beta] = args;
    const worker = this.#worker;
    if (!worker || !this.splits(kernel, rows)) return kernel.scan(...args);
    const lower = rows >>> 1;
    const upper: Parameters<SimdScan["scan"]> = [
      q,
      m + lower * stride,
      rows - lower,
      stride,
      a + lower * 4,
      b + lower * 4,
      out + lower * 4,
      alpha,
      beta,
    ];
    let id = this.#ids.get(kernel.memory);
    if (id === undefined) {
      id = this.#nextId++;
      this.#ids.set(kernel.memory, id);
      this.#released.register(kernel.memory, id);
      worker.postMessage({ id, memory: kernel.memory });
    }
    const gen = this.#gen = (this.#gen % 0x7fff_ffff) + 1;
    worker.postMessage({ id, gen, args: upper });
    kernel.scan(q, m, lower, stride, a, b, out, alpha, beta);
    if (!this.#finished(gen)) {
      this.close();
      kernel.scan(...upper);
    }
  }

  #finished(gen: number): boolean {
    const deadline = performance.now() + HELPER_TIMEOUT_MS;
    for (;;) {
      const seen = Atomics.load(this.#done, 0);
      if (seen === gen) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.wait(this.#done, 0, seen, left);
    }
  }

  /** Stops the helper thread; later scans run on one thread. */
  close(): void {
    this.#worker?.terminate();
    this.#worker = null;
  }
}

let shared: ScanHelper | null | undefined;

/**
 * The process's helper, started on first use; null where threads are not available (then
 * every scan runs on one thread).
 */
export function processScanHelper(): ScanHelper | null {
  if (shared === undefined) {
    try {
      shared = navigator.hardwareConcurrency > 1 ? new ScanHelper() : null;
    } catch {
      shared = null;
    }
  }
  return shared;
}
