import assert from "node:assert/strict";
import { buildSimd, OUT_PATH, renderModule, WAT_PATH } from "../../core/search/index/simd_build.ts";
import { SHARED_MAX_PAGES, SIMD_SHARED_WASM, SIMD_WASM } from "../../core/search/index/simd.wasm.ts";
import { createSimdScan, simdModule } from "../../core/search/index/simd.ts";

Deno.test("simd.wasm.ts is the build of simd.wat (deno task wasm:build --check)", async () => {
  const build = await buildSimd(await Deno.readTextFile(WAT_PATH));
  assert.deepEqual(SIMD_WASM, build.plain, "the plain module's bytes");
  assert.deepEqual(SIMD_SHARED_WASM, build.shared, "the shared module's bytes");
  assert.equal(await Deno.readTextFile(OUT_PATH), renderModule(build), "the generated file's text");
});

Deno.test("the kernel in use is compiled from the built bytes: two exports, memory imported (plain and shared)", () => {
  for (const shared of [false, true]) {
    const module = simdModule(shared);
    assert.ok(module, `shared ${shared}: compiles`);
    assert.deepEqual(WebAssembly.Module.exports(module).map((e) => `${e.kind} ${e.name}`), [
      "function scan",
      "function blockMax",
    ]);
    assert.deepEqual(WebAssembly.Module.imports(module), [{ module: "env", name: "memory", kind: "memory" }]);
  }
  // Each module takes only its own kind of memory.
  const plainMemory = new WebAssembly.Memory({ initial: 1 });
  const sharedMemory = new WebAssembly.Memory({ initial: 1, maximum: SHARED_MAX_PAGES, shared: true });
  assert.throws(() => new WebAssembly.Instance(simdModule(true)!, { env: { memory: plainMemory } }));
  assert.throws(() => new WebAssembly.Instance(simdModule(false)!, { env: { memory: sharedMemory } }));
  assert.ok(createSimdScan(1, { shared: true })!.memory.buffer instanceof SharedArrayBuffer);
});

Deno.test("buildSimd() refuses a source whose memory import is not the one it knows how to share", async () => {
  const wat = await Deno.readTextFile(WAT_PATH);
  await assert.rejects(() => buildSimd(wat.replace(`(memory 1))`, `(memory 2))`)), /must import its memory once/);
});
