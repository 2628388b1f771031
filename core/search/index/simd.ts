/**
 * A WebAssembly SIMD kernel for the vector scan over int8 rows: for each row, the exact integer
 * dot product of its int8 components with an int16 query (sixteen components per step), then an
 * affine per-row map to the cosine. Rows are a quarter of the size of f32 rows, and the scan is
 * bound by memory traffic, so at a million rows this is several times faster than an f32 scan;
 * {@link VectorIndex} falls back to a JavaScript loop where WebAssembly SIMD is unavailable.
 *
 * The source is simd.wat (WebAssembly text, one instruction per line); `deno task wasm:build`
 * compiles it into simd.wasm.ts, and a test fails when that file is not its build. In short:
 *
 *   scan(q, m, n, stride, a, b, out, alpha, beta), for r in 0..n:
 *     acc = sum over j in 0..stride step 16 of
 *           i32x4.dot_i16x8_s(extend_low_s(16 x i8 at m + j), 8 x i16 at q + 2j)
 *         + i32x4.dot_i16x8_s(extend_high_s(16 x i8 at m + j), 8 x i16 at q + 2j + 16)
 *     out[r] = f32(acc[0] + acc[1] + acc[2] + acc[3]) * a[r] * alpha - b[r] * beta;  m += stride
 *
 * `stride` must be a multiple of 16 (callers pad rows with zeros). No overflow: each i32 lane sums
 * stride / 4 products of at most 127 x 32767.
 */
import { SHARED_MAX_PAGES, SIMD_SHARED_WASM, SIMD_WASM } from "./simd.wasm.ts";

/**
 * The kernel module's bytes. `shared` imports a shared memory (threads proposal), so a second
 * thread can scan part of the same rows (see scan_helper.ts).
 */
const moduleBytes = (shared: boolean): Uint8Array<ArrayBuffer> => shared ? SIMD_SHARED_WASM : SIMD_WASM;

/** The compiled kernel bound to one memory. */
export interface SimdScan {
  memory: WebAssembly.Memory;
  /**
   * Pointers are byte offsets into `memory`: the int16 query (`stride` values), the int8 matrix
   * (`rows` x `stride`), the per-row factors `a` and offsets `b` (f32) and the output (f32).
   * Row r gets `dot(q, row r) * a[r] * alpha - b[r] * beta`.
   */
  scan(
    queryPtr: number,
    matrixPtr: number,
    rows: number,
    stride: number,
    aPtr: number,
    bPtr: number,
    outPtr: number,
    alpha: number,
    beta: number,
  ): void;
  /** Writes the maximum of each of `blocks` blocks of {@link MAX_BLOCK} floats at `srcPtr` to `dstPtr`. */
  blockMax(srcPtr: number, blocks: number, dstPtr: number): void;
}

/** Floats per block of {@link SimdScan.blockMax}. */
export const MAX_BLOCK = 64;

const compiled = new Map<boolean, WebAssembly.Module | null>();

/** The compiled kernel module (plain or over a shared memory), or null where it cannot compile. */
export function simdModule(shared = false): WebAssembly.Module | null {
  if (!compiled.has(shared)) {
    try {
      compiled.set(shared, new WebAssembly.Module(moduleBytes(shared) as BufferSource));
    } catch {
      compiled.set(shared, null);
    }
  }
  return compiled.get(shared)!;
}

/** Binds a kernel module to a memory. */
export function bindSimdScan(module: WebAssembly.Module, memory: WebAssembly.Memory): SimdScan {
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  const { scan, blockMax } = instance.exports;
  return { memory, scan: scan as SimdScan["scan"], blockMax: blockMax as SimdScan["blockMax"] };
}

/**
 * A kernel over a fresh memory of `pages` 64 KiB pages, or null where SIMD is not supported.
 * `shared` gives a shared memory (for a second scanning thread) when the runtime has one.
 */
export function createSimdScan(pages = 1, { shared = false }: { shared?: boolean } = {}): SimdScan | null {
  const module = (shared && simdModule(true)) || simdModule(false);
  if (!module) return null;
  const isShared = module === compiled.get(true);
  const memory = isShared
    ? new WebAssembly.Memory({ initial: pages, maximum: SHARED_MAX_PAGES, shared: true })
    : new WebAssembly.Memory({ initial: pages });
  return bindSimdScan(module, memory);
}
