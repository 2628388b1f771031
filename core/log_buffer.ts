/**
 * Buffered log output: lines are gathered in memory and written to the output in one call per
 * batch, when `maxBytes` wait, every `intervalMs`, and on {@link LineBuffer.close} (shutdown). One
 * `console.log` per request line cost a synchronous write each, about a fifth of the CPU of a
 * `/healthz` request (bench/RESULTS.md, "Fixed cost of a request").
 *
 * What a crash loses: lines written in the last `intervalMs` (100 ms by default) when the process
 * dies without running its exit handlers (SIGKILL, out of memory). A normal exit, a signal the
 * service handles and `Deno.exit()` flush first (`unload`). Log lines are operational records, not
 * acknowledged data: events go through the KV write-ahead log instead.
 */
import type { TimerId } from "./timers.ts";

/** Where batches go; the process's stdout by default. */
export type WriteSync = (bytes: Uint8Array) => void;

const encoder = new TextEncoder();

/** Gathers lines and writes them out in batches. */
export class LineBuffer {
  #lines: string[] = [];
  #bytes = 0;
  #timer: TimerId | undefined;
  #closed = false;
  readonly #out: WriteSync;
  readonly #maxBytes: number;
  readonly #intervalMs: number;
  readonly #onUnload = () => this.flush();

  constructor(
    { out = writeAllSync(Deno.stdout), maxBytes = 64 * 1024, intervalMs = 100 }: {
      out?: WriteSync;
      /** Write as soon as this many bytes (about; counted in UTF-16 units) wait. */
      maxBytes?: number;
      /** Longest a line waits. */
      intervalMs?: number;
    } = {},
  ) {
    this.#out = out;
    this.#maxBytes = maxBytes;
    this.#intervalMs = intervalMs;
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /** Takes one line (without its newline). After {@link close}, lines are written at once. */
  write = (line: string): void => {
    this.#lines.push(line);
    this.#bytes += line.length + 1;
    if (this.#closed || this.#bytes >= this.#maxBytes) {
      this.flush();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      // A pending batch never keeps the process alive: exit flushes it.
      Deno.unrefTimer(this.#timer);
    }
  };

  /** Writes what waits, in one call. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#lines.length) return;
    const text = this.#lines.join("\n") + "\n";
    this.#lines = [];
    this.#bytes = 0;
    this.#out(encoder.encode(text));
  }

  /** Flushes and writes every later line at once (for the last lines of a shutdown). */
  close(): void {
    this.flush();
    this.#closed = true;
    globalThis.removeEventListener("unload", this.#onUnload);
  }
}

/** A {@link WriteSync} that writes every byte to `file` (a short write continues). */
export function writeAllSync(file: { writeSync(p: Uint8Array): number }): WriteSync {
  return (bytes) => {
    let at = 0;
    while (at < bytes.length) at += file.writeSync(bytes.subarray(at));
  };
}
