/**
 * Reads a byte stream into one array, or gives null as soon as it passes `maxBytes` (the rest
 * is cancelled, never buffered). An error of the stream is thrown as it is, for the caller to
 * put in its own words.
 */
export async function readStreamCapped(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/** The bytes of `parts`, one after another, in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Splits a byte stream into pieces of at most `maxBytes`. Put it before a `DecompressionStream`:
 * the inflater turns each input chunk into all of its output in one synchronous step, and a 64 KB
 * chunk of a gzip bomb inflates to 64 MB (a few hundred ms of the event loop). 4 KB pieces inflate
 * to at most about 4 MB each, and a capped reader stops after the first pieces past its cap.
 */
export function smallChunks(maxBytes = 4096): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, controller) {
      for (let at = 0; at < chunk.byteLength; at += maxBytes) controller.enqueue(chunk.subarray(at, at + maxBytes));
    },
  });
}
