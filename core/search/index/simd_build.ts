/**
 * Builds the vector scan's WebAssembly (simd.ts) from its source, simd.wat, with wabt (WABT's
 * wat2wasm compiled to JavaScript, from npm):
 *
 *   deno task wasm:build          writes core/search/index/simd.wasm.ts
 *   deno task wasm:build --check  exits 1 when the committed simd.wasm.ts is not the build of simd.wat
 *
 * The built bytes are committed as a TypeScript module, so `deno task start`, `test` and `compile`
 * need neither wabt nor a file read at run time. Two modules come from the one source: one over a
 * plain memory, and one whose memory import is shared (threads proposal) for the helper thread.
 */
import wabtInit from "wabt";

const here = new URL(".", import.meta.url).pathname;
export const WAT_PATH = `${here}simd.wat`;
export const OUT_PATH = `${here}simd.wasm.ts`;

/** Largest shared memory (4 GiB): a shared memory is created with its maximum reserved. */
export const SHARED_MAX_PAGES = 65_536;
/** The source's memory import, and what it becomes in the shared module. */
const PLAIN_MEMORY = `(import "env" "memory" (memory 1))`;
const SHARED_MEMORY = `(import "env" "memory" (memory 1 ${SHARED_MAX_PAGES} shared))`;
const FEATURES = { simd: true, threads: true };

/** The two modules' bytes built from WAT text. */
export interface SimdBuild {
  plain: Uint8Array;
  shared: Uint8Array;
}

/** Compiles `wat` twice: as written, and with its one memory import made shared. */
export async function buildSimd(wat: string): Promise<SimdBuild> {
  if (wat.split(PLAIN_MEMORY).length !== 2) throw new Error(`simd.wat must import its memory once as ${PLAIN_MEMORY}`);
  const wabt = await wabtInit();
  const compile = (text: string): Uint8Array => {
    const module = wabt.parseWat("simd.wat", text, FEATURES);
    try {
      // index.js takes the features here too (without them it refuses the shared memory); its typings omit them.
      (module as unknown as { validate(features: typeof FEATURES): void }).validate(FEATURES);
      return module.toBinary({ log: false, write_debug_names: false }).buffer;
    } finally {
      module.destroy();
    }
  };
  return { plain: compile(wat), shared: compile(wat.replace(PLAIN_MEMORY, SHARED_MEMORY)) };
}

/** Bytes as lines of hex, 48 bytes a line. */
function hexLines(bytes: Uint8Array): string {
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const lines: string[] = [];
  for (let i = 0; i < hex.length; i += 96) lines.push(`  "${hex.slice(i, i + 96)}",`);
  return lines.join("\n");
}

/** The text of simd.wasm.ts for a build (formatted as `deno fmt` leaves it). */
export function renderModule(build: SimdBuild): string {
  return `// Generated from simd.wat by \`deno task wasm:build\`: do not edit. A test fails when this file is not the
// build of simd.wat (\`deno task wasm:build --check\`).

/** Pages of the shared module's memory: its maximum, reserved when the memory is created. */
export const SHARED_MAX_PAGES = ${String(SHARED_MAX_PAGES).replace(/(\d)(?=(\d{3})+$)/g, "$1_")};

/** The kernel module over a plain memory (${build.plain.length} bytes). */
export const SIMD_WASM: Uint8Array<ArrayBuffer> = fromHex([
${hexLines(build.plain)}
]);

/** The kernel module over a shared memory, for a second scanning thread (${build.shared.length} bytes). */
export const SIMD_SHARED_WASM: Uint8Array<ArrayBuffer> = fromHex([
${hexLines(build.shared)}
]);

function fromHex(lines: string[]): Uint8Array<ArrayBuffer> {
  const hex = lines.join("");
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}
`;
}

if (import.meta.main) {
  const fresh = renderModule(await buildSimd(await Deno.readTextFile(WAT_PATH)));
  if (Deno.args.includes("--check")) {
    if (fresh !== await Deno.readTextFile(OUT_PATH)) {
      console.error("core/search/index/simd.wasm.ts is out of date: run deno task wasm:build");
      Deno.exit(1);
    }
  } else {
    await Deno.writeTextFile(OUT_PATH, fresh);
    console.log(`core/search/index/simd.wasm.ts written from simd.wat`);
  }
}
