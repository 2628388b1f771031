import assert from "node:assert/strict";
import { hasOwnedChunks, markOwnedChunks, releasingConsumed } from "../../core/owned_chunks.ts";
import { startServer } from "../../routes/server.ts";

/** A stream of `n` fresh chunks of `size` bytes, chunk i filled with the byte i. */
function freshChunks(n: number, size: number): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i === n) return c.close();
      c.enqueue(new Uint8Array(size).fill(i++));
    },
  });
}

Deno.test("releasingConsumed() hands over the same bytes and detaches each chunk two reads later", async () => {
  const reader = releasingConsumed(freshChunks(5, 8)).getReader();
  const seen: Uint8Array[] = [];
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    assert.deepEqual([...r.value], new Array(8).fill(seen.length), "chunk bytes as produced");
    // The chunk two reads back is released; the one just before is still readable.
    if (seen.length >= 2) assert.equal(seen[seen.length - 2]!.byteLength, 0);
    if (seen.length >= 1) assert.equal(seen[seen.length - 1]!.byteLength, 8);
    seen.push(r.value);
  }
  assert.equal(seen.length, 5);
  // At the end every chunk has been released.
  assert.deepEqual(seen.map((c) => c.byteLength), [0, 0, 0, 0, 0]);
});

Deno.test("hasOwnedChunks() is true only for a marked stream", () => {
  const marked = markOwnedChunks(freshChunks(1, 1));
  assert.equal(hasOwnedChunks(marked), true);
  assert.equal(hasOwnedChunks(freshChunks(1, 1)), false);
  assert.equal(hasOwnedChunks(null), false);
});

Deno.test("startServer(): a marked body arrives whole; an unmarked body's buffers are never detached", async () => {
  // A cached buffer served again and again (as static assets are) must survive every response.
  const cached = new Uint8Array(300_000).fill(7);
  const server = startServer((req) => {
    if (new URL(req.url).pathname === "/cached") {
      return new Response(
        new ReadableStream({
          pull(c) {
            c.enqueue(cached);
            c.close();
          },
        }),
      );
    }
    return new Response(markOwnedChunks(freshChunks(64, 65_536)));
  });
  try {
    const big = new Uint8Array(await (await fetch(`${server.url}/owned`)).arrayBuffer());
    assert.equal(big.length, 64 * 65_536);
    for (let i = 0; i < 64; i++) assert.equal(big[i * 65_536 + 100], i, `chunk ${i}`);
    for (let i = 0; i < 2; i++) {
      const got = new Uint8Array(await (await fetch(`${server.url}/cached`)).arrayBuffer());
      assert.equal(got.length, 300_000);
    }
    assert.equal(cached.byteLength, 300_000);
  } finally {
    await server.shutdown();
  }
});
