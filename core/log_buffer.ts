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

/**
 * Where batches go; the process's stdout by default. It must be done with the bytes when it
 * returns: they are a view of the buffer the next lines are written into.
 */
export type WriteSync = (bytes: Uint8Array) => void;

const encoder = new TextEncoder();
// Room beyond `maxBytes`, so the line that crosses it still fits; a longer line goes out on its own.
const SLACK_BYTES = 64 * 1024;

/**
 * Gathers lines and writes them out in batches. Each line is encoded into one reused byte buffer
 * as it arrives: a line kept as a string until the batch went out lived long enough (up to
 * `intervalMs`) to be promoted to the old generation, which then cost full garbage collections of
 * the whole heap in proportion to the log (bench/RESULTS.md, "Fixed cost of a request").
 */
export class LineBuffer {
  readonly #buffer: Uint8Array;
  #used = 0;
  #timer: TimerId | undefined;
  #closed = false;
  readonly #out: WriteSync;
  readonly #maxBytes: number;
  readonly #intervalMs: number;
  readonly #onUnload = () => this.flush();

  constructor(
    { out = writeAllSync(Deno.stdout), maxBytes = 64 * 1024, intervalMs = 100 }: {
      out?: WriteSync;
      /** Write as soon as this many bytes wait. */
      maxBytes?: number;
      /** Longest a line waits. */
      intervalMs?: number;
    } = {},
  ) {
    this.#out = out;
    this.#maxBytes = maxBytes;
    this.#intervalMs = intervalMs;
    this.#buffer = new Uint8Array(maxBytes + SLACK_BYTES);
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /** Takes one line (without its newline). After {@link close}, lines are written at once. */
  write = (line: string): void => {
    if (!this.#append(line)) {
      // It did not fit after what waits: that goes first, then the line into the emptied buffer,
      // or on its own when even that is too small.
      this.flush();
      if (!this.#append(line)) this.#out(encoder.encode(`${line}\n`));
    }
    this.#afterLine();
  };

  /**
   * Takes one line that `writeInto` writes straight into the buffer at `at`, newline included,
   * returning where it stopped; it must write at most `maxBytes`. Saves a line built as a string
   * its string and its encoding (the access log, core/log.ts). False, with nothing taken, when
   * `maxBytes` exceeds what the buffer can ever hold: the caller writes the line as a string.
   */
  writeBytes<T>(maxBytes: number, writeInto: (buffer: Uint8Array, at: number, item: T) => number, item: T): boolean {
    if (maxBytes > this.#buffer.length) return false;
    if (this.#used + maxBytes > this.#buffer.length) this.flush();
    this.#used = writeInto(this.#buffer, this.#used, item);
    this.#afterLine();
    return true;
  }

  #afterLine(): void {
    if (this.#closed || this.#used >= this.#maxBytes) {
      this.flush();
    } else if (this.#timer === undefined && this.#used > 0) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      // A pending batch never keeps the process alive: exit flushes it.
      Deno.unrefTimer(this.#timer);
    }
  }

  /** Encodes `line` and its newline after what waits; false (nothing taken) when it does not fit. */
  #append(line: string): boolean {
    const room = this.#buffer.subarray(this.#used, this.#buffer.length - 1);
    const { read, written } = encoder.encodeInto(line, room);
    if (read < line.length) return false;
    this.#buffer[this.#used + written] = 0x0a;
    this.#used += written + 1;
    return true;
  }

  /** Writes what waits, in one call. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#used === 0) return;
    const used = this.#used;
    this.#used = 0;
    this.#out(this.#buffer.subarray(0, used));
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
