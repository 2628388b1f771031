/**
 * A WebAssembly SIMD kernel for the vector scan over int8 rows: for each row, the exact integer
 * dot product of its int8 components with an int16 query (sixteen components per step), then an
 * affine per-row map to the cosine. Rows are a quarter of the size of f32 rows, and the scan is
 * bound by memory traffic, so at a million rows this is several times faster than an f32 scan;
 * {@link VectorIndex} falls back to a JavaScript loop where WebAssembly SIMD is unavailable.
 *
 * The module is tiny, so it is assembled here byte by byte (with the WAT beside each part)
 * instead of shipping a binary:
 *
 *   (module
 *     (import "env" "memory" (memory 1))
 *     (func (export "scan") (param $q i32) (param $m i32) (param $n i32) (param $stride i32)
 *           (param $a i32) (param $b i32) (param $out i32) (param $alpha f32) (param $beta f32)
 *       (local $r i32) (local $j i32) (local $acc v128) (local $v v128)
 *       for r in 0..n:
 *         acc = 0
 *         for j in 0..stride step 16:
 *           v = load(m + j)                                   ;; 16 x i8 of the row
 *           acc += i32x4.dot_i16x8_s(extend_low_s(v), load(q + 2j))
 *           acc += i32x4.dot_i16x8_s(extend_high_s(v), load(q + 2j + 16))
 *         out[r] = f32(acc[0] + acc[1] + acc[2] + acc[3]) * a[r] * alpha - b[r] * beta
 *         m += stride
 *
 * `stride` must be a multiple of 16 (callers pad rows with zeros). No overflow: each i32 lane sums
 * stride / 4 products of at most 127 x 32767.
 */

const I32 = 0x7f, F32 = 0x7d, V128 = 0x7b;
const LOCAL_GET = 0x20, LOCAL_SET = 0x21, I32_CONST = 0x41, I32_ADD = 0x6a, I32_SHL = 0x74, I32_GE_U = 0x4f;
const BLOCK = 0x02, LOOP = 0x03, VOID = 0x40, END = 0x0b, BR = 0x0c, BR_IF = 0x0d;
const F32_LOAD = 0x2a, F32_STORE = 0x38, F32_MUL = 0x94, F32_SUB = 0x93, F32_CONVERT_I32_S = 0xb2;
const MEM_ALIGN4 = [0x02, 0x00]; // memarg: align 2^2, offset 0
const SIMD = 0xfd;
const V128_LOAD = [SIMD, 0x00, 0x04, 0x00]; // align 16 is only a hint; offset 0
const V128_LOAD_16 = [SIMD, 0x00, 0x04, 0x10]; // offset 16
/** v128.load at a constant offset from the address on the stack. */
const v128Load = (offset: number) => [SIMD, 0x00, 0x04, ...leb(offset)];
const V128_ZERO = [SIMD, 0x0c, ...new Array(16).fill(0)];
const I16X8_EXTEND_LOW_I8X16_S = [SIMD, 0x87, 0x01];
const I16X8_EXTEND_HIGH_I8X16_S = [SIMD, 0x88, 0x01];
const I32X4_DOT_I16X8_S = [SIMD, 0xba, 0x01];
const I32X4_ADD = [SIMD, 0xae, 0x01];
const i32Lane = (i: number) => [SIMD, 0x1b, i]; // i32x4.extract_lane
// Parameters, then locals.
const [Q, M, N, STRIDE, A, B, OUT, ALPHA, BETA, R, J, ACC, V] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

const get = (i: number) => [LOCAL_GET, i];
const set = (i: number) => [LOCAL_SET, i];
/** `base + (index << shift)` as an address. */
const addr = (base: number, index: number, shift: number) =>
  shift === 0
    ? [...get(base), ...get(index), I32_ADD]
    : [...get(base), ...get(index), I32_CONST, shift, I32_SHL, I32_ADD];

function section(id: number, bytes: number[]): number[] {
  return [id, ...leb(bytes.length), ...bytes];
}

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];

/** `acc += dot(extend(v), load(q + 2j + offset))`. */
const accumulate = (extend: number[], load: number[]) => [
  ...get(ACC),
  ...get(V),
  ...extend,
  ...addr(Q, J, 1),
  ...load,
  ...I32X4_DOT_I16X8_S,
  ...I32X4_ADD,
  ...set(ACC),
];

/** Largest shared memory (4 GiB): a shared memory is created with its maximum reserved. */
const SHARED_MAX_PAGES = 65_536;

/**
 * The kernel module. `shared` imports a shared memory (threads proposal), so a second thread can
 * scan part of the same rows (see scan_helper.ts).
 */
function moduleBytes(shared: boolean): Uint8Array {
  const maxBody = blockMaxBytes();
  const body = [
    // locals: 2 x i32 (r, j), 2 x v128 (acc, v)
    2,
    2,
    I32,
    2,
    V128,
    BLOCK,
    VOID,
    LOOP,
    VOID,
    // if r >= n: break
    ...get(R),
    ...get(N),
    I32_GE_U,
    BR_IF,
    1,
    ...V128_ZERO,
    ...set(ACC),
    I32_CONST,
    0,
    ...set(J),
    BLOCK,
    VOID,
    LOOP,
    VOID,
    // if j >= stride: break
    ...get(J),
    ...get(STRIDE),
    I32_GE_U,
    BR_IF,
    1,
    ...addr(M, J, 0),
    ...V128_LOAD,
    ...set(V),
    ...accumulate(I16X8_EXTEND_LOW_I8X16_S, V128_LOAD),
    ...accumulate(I16X8_EXTEND_HIGH_I8X16_S, V128_LOAD_16),
    ...get(J),
    I32_CONST,
    16,
    I32_ADD,
    ...set(J),
    BR,
    0,
    END,
    END,
    // out[r] = f32(sum of lanes) * a[r] * alpha - b[r] * beta
    ...addr(OUT, R, 2),
    ...get(ACC),
    ...i32Lane(0),
    ...get(ACC),
    ...i32Lane(1),
    I32_ADD,
    ...get(ACC),
    ...i32Lane(2),
    I32_ADD,
    ...get(ACC),
    ...i32Lane(3),
    I32_ADD,
    F32_CONVERT_I32_S,
    ...addr(A, R, 2),
    F32_LOAD,
    ...MEM_ALIGN4,
    F32_MUL,
    ...get(ALPHA),
    F32_MUL,
    ...addr(B, R, 2),
    F32_LOAD,
    ...MEM_ALIGN4,
    ...get(BETA),
    F32_MUL,
    F32_SUB,
    F32_STORE,
    ...MEM_ALIGN4,
    // m += stride; r += 1
    ...get(M),
    ...get(STRIDE),
    I32_ADD,
    ...set(M),
    ...get(R),
    I32_CONST,
    1,
    I32_ADD,
    ...set(R),
    BR,
    0,
    END,
    END,
    END, // function
  ];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00, // magic, version 1
    // types: (i32 x7, f32 x2) -> () and (i32 x3) -> ()
    ...section(1, [2, 0x60, 9, I32, I32, I32, I32, I32, I32, I32, F32, F32, 0, 0x60, 3, I32, I32, I32, 0]),
    // import memory, min 1 page (shared: flags 3, with the maximum the threads proposal requires)
    ...section(2, [
      1,
      ...name("env"),
      ...name("memory"),
      0x02,
      ...(shared ? [0x03, 1, ...leb(SHARED_MAX_PAGES)] : [0x00, 1]),
    ]),
    ...section(3, [2, 0, 1]), // two functions, of types 0 and 1
    ...section(7, [2, ...name("scan"), 0x00, 0, ...name("blockMax"), 0x00, 1]), // exports
    ...section(10, [2, ...leb(body.length), ...body, ...leb(maxBody.length), ...maxBody]),
  ]);
}

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

/**
 * A second function over the same memory: the maximum of each block of 64 floats (the scan's
 * cosines), sixteen f32x4 loads and maxima per block:
 *
 *   (func (export "blockMax") (param $src i32) (param $blocks i32) (param $dst i32)
 *     (local $b i32) (local $acc v128)
 *     for b in 0..blocks: acc = max of load(src + 16i), i = 0..15; dst[b] = max of acc's lanes;
 *       src += 256)
 */
function blockMaxBytes(): number[] {
  const [SRC, BLOCKS, DST, BI, MACC] = [0, 1, 2, 3, 4];
  const F32X4_MAX = [SIMD, 0xe9, 0x01], F32_MAX = 0x97;
  const f32Lane = (i: number) => [SIMD, 0x1f, i];
  const loads: number[] = [...get(SRC), ...v128Load(0)];
  for (let i = 1; i < 16; i++) loads.push(...get(SRC), ...v128Load(16 * i), ...F32X4_MAX);
  const step = (local: number, by: number[]) => [...get(local), I32_CONST, ...by, I32_ADD, ...set(local)];
  return [
    // locals: 1 x i32 (b), 1 x v128 (acc)
    2,
    1,
    I32,
    1,
    V128,
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(BI),
    ...get(BLOCKS),
    I32_GE_U,
    BR_IF,
    1,
    ...loads,
    ...set(MACC),
    ...get(DST),
    ...get(MACC),
    ...f32Lane(0),
    ...get(MACC),
    ...f32Lane(1),
    F32_MAX,
    ...get(MACC),
    ...f32Lane(2),
    F32_MAX,
    ...get(MACC),
    ...f32Lane(3),
    F32_MAX,
    F32_STORE,
    ...MEM_ALIGN4,
    ...step(SRC, [0x80, 0x02]), // 256
    ...step(DST, [4]),
    ...step(BI, [1]),
    BR,
    0,
    END,
    END,
    END,
  ];
}

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
