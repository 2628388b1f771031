/**
 * Byte streams whose chunks are fresh buffers that nobody else holds (the logs CSV export: about
 * 250 MB in 256 KiB pieces). A consumer that has finished with such a chunk may return its memory at
 * once. Left to the garbage collector, buffers are freed only when V8's external-memory budget
 * (about 64 MB) runs out, which costs a long download about 60 MB of resident memory.
 */

const owned = new WeakSet<ReadableStream<Uint8Array>>();
// How many marked streams may still be alive: while none is, a server need not look at a
// response's body at all (reading `Response.body` turns a string body into a stream, and Deno then
// sends it on its slower stream path).
let alive = 0;
const collected = new FinalizationRegistry<void>(() => alive--);

/**
 * Marks `stream` as one whose every chunk has its own `ArrayBuffer`, referenced by nothing but
 * the chunk: no cache, no shared backing buffer, no view of another chunk's memory.
 *
 * @returns the same stream
 */
export function markOwnedChunks(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  if (!owned.has(stream)) {
    owned.add(stream);
    alive++;
    collected.register(stream);
  }
  return stream;
}

/** Whether any marked stream may still be alive; when not, no response can carry one. */
export function anyOwnedChunks(): boolean {
  return alive > 0;
}

/** Whether `stream` was marked by {@link markOwnedChunks}. */
export function hasOwnedChunks(stream: ReadableStream<Uint8Array> | null): boolean {
  return stream !== null && owned.has(stream);
}

/**
 * The same bytes, for a consumer that has finished with a chunk before it reads the next but one
 * (Deno.serve writes each chunk before it reads the next). Each chunk's buffer is detached
 * (`ArrayBuffer.prototype.transfer(0)`) two reads after it was handed over: the script's hold on
 * the memory ends there, and the memory is freed as soon as the runtime, which keeps its own
 * reference while it writes, lets go. Never use it for a consumer that keeps chunks (e.g.
 * `Response.text()`): the kept views would become empty.
 */
export function releasingConsumed(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  const handed: Uint8Array[] = [];
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (handed.length >= 2) release(handed.shift()!);
      const r = await reader.read();
      if (r.done) {
        handed.splice(0).forEach(release);
        controller.close();
        return;
      }
      handed.push(r.value);
      controller.enqueue(r.value);
    },
    cancel(reason) {
      handed.splice(0).forEach(release);
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

function release(chunk: Uint8Array): void {
  try {
    (chunk.buffer as ArrayBuffer).transfer(0);
  } catch {
    // Not detachable (already detached, or shared memory): the collector frees it as before.
  }
}
