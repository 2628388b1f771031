import { createSimdScan, type SimdScan } from "./simd.ts";

const PAGE = 65_536;

/**
 * Dense vectors of one data model, one row per slot, stored L2-normalised so a dot product is
 * the cosine similarity. Rows are padded to a multiple of four floats and live in WebAssembly
 * memory, where a SIMD kernel scans all of them in one pass (100k x 100 dimensions in about a
 * millisecond); without WebAssembly SIMD an unrolled JavaScript loop does the same.
 *
 * Memory layout (SIMD): [query row][matrix: capacity rows][scores: capacity floats].
 */
export class VectorIndex {
  readonly dims: number;
  /** Row length in floats (dims rounded up to a multiple of 4). */
  readonly stride: number;
  private capacity: number;
  private readonly kernel: SimdScan | null;
  private readonly queryBytes: number;
  private data!: Float32Array;
  private query!: Float32Array;
  private scores!: Float32Array;

  constructor(dims: number, capacity = 1024, { simd = true }: { simd?: boolean } = {}) {
    this.dims = dims;
    this.stride = Math.ceil(dims / 4) * 4;
    this.capacity = Math.max(1, capacity);
    this.queryBytes = Math.ceil((this.stride * 4) / 64) * 64;
    this.kernel = simd ? createSimdScan(Math.ceil(this.bytesFor(this.capacity) / PAGE)) : null;
    this.layout();
  }

  /** Whether the WebAssembly SIMD kernel is in use. */
  get simd(): boolean {
    return this.kernel !== null;
  }

  private bytesFor(capacity: number): number {
    return this.queryBytes + capacity * this.stride * 4 + capacity * 4;
  }

  private layout(): void {
    const rows = this.capacity * this.stride;
    if (this.kernel) {
      const buf = this.kernel.memory.buffer;
      this.query = new Float32Array(buf, 0, this.stride);
      this.data = new Float32Array(buf, this.queryBytes, rows);
      this.scores = new Float32Array(buf, this.queryBytes + rows * 4, this.capacity);
    } else {
      const data = new Float32Array(rows);
      if (this.data) data.set(this.data);
      this.data = data;
      this.query = new Float32Array(this.stride);
      this.scores = new Float32Array(this.capacity);
    }
  }

  private grow(slot: number): void {
    let cap = this.capacity;
    while (cap <= slot) cap *= 2;
    if (this.kernel) {
      const need = Math.ceil(this.bytesFor(cap) / PAGE) - this.kernel.memory.buffer.byteLength / PAGE;
      if (need > 0) this.kernel.memory.grow(need);
    }
    // Rows keep their place (the matrix starts at the same offset); only the scores move.
    this.capacity = cap;
    this.layout();
  }

  /** Stores `vector` (normalised here) at `slot`; a zero or missing vector stores zeros. */
  set(slot: number, vector: Float32Array | null): void {
    if (slot >= this.capacity) this.grow(slot);
    const row = this.data.subarray(slot * this.stride, (slot + 1) * this.stride);
    row.fill(0);
    if (!vector || vector.length !== this.dims) return;
    const norm = l2norm(vector);
    if (norm > 0) { for (let i = 0; i < this.dims; i++) row[i] = vector[i]! / norm; }
  }

  /** Clears a slot. */
  clear(slot: number): void {
    if (slot < this.capacity) this.data.fill(0, slot * this.stride, (slot + 1) * this.stride);
  }

  /** Row `slot` (normalised, zeros when empty); a view valid until the next growth. */
  row(slot: number): Float32Array {
    return this.data.subarray(slot * this.stride, slot * this.stride + this.dims);
  }

  /**
   * The first principal component (uncentred) of the first `count` rows, by power iteration: the
   * direction averaged word vectors all share, which says little about topic (Arora et al., "A
   * Simple but Tough-to-Beat Baseline for Sentence Embeddings", 2017). Null when there are no rows.
   */
  principalDirection(count: number, iterations = 12): Float32Array | null {
    const d = this.dims, m = this.data;
    let u = new Float64Array(d).fill(1 / Math.sqrt(d));
    let any = false;
    for (let it = 0; it < iterations; it++) {
      const next = new Float64Array(d);
      for (let r = 0, o = 0; r < count; r++, o += this.stride) {
        let dot = 0;
        for (let j = 0; j < d; j++) dot += m[o + j]! * u[j]!;
        if (dot === 0) continue;
        any = true;
        for (let j = 0; j < d; j++) next[j]! += dot * m[o + j]!;
      }
      const n = l2norm(next);
      if (n === 0) return null;
      for (let j = 0; j < d; j++) next[j]! /= n;
      u = next;
    }
    return any ? Float32Array.from(u) : null;
  }

  /** Cosine similarity of one slot with a normalised query. */
  cosine(slot: number, query: Float32Array): number {
    const o = slot * this.stride, m = this.data;
    let s = 0;
    for (let j = 0; j < this.dims; j++) s += m[o + j]! * query[j]!;
    return s;
  }

  /**
   * Cosine of every slot in [0, count) with `query` (already normalised; null gives zeros).
   * @returns a view valid until the next scan or growth: read it synchronously
   */
  scan(query: Float32Array | null, count: number): Float32Array {
    const out = this.scores.subarray(0, count);
    if (!query || count === 0) return out.fill(0);
    this.query.fill(0);
    this.query.set(query.subarray(0, this.dims));
    if (this.kernel) {
      const dataPtr = this.queryBytes;
      this.kernel.scan(0, dataPtr, count, this.stride, dataPtr + this.capacity * this.stride * 4);
      return out;
    }
    const d = this.stride, m = this.data, q = this.query;
    for (let r = 0, o = 0; r < count; r++, o += d) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let j = 0; j < d; j += 4) {
        s0 += m[o + j]! * q[j]!;
        s1 += m[o + j + 1]! * q[j + 1]!;
        s2 += m[o + j + 2]! * q[j + 2]!;
        s3 += m[o + j + 3]! * q[j + 3]!;
      }
      out[r] = s0 + s1 + s2 + s3;
    }
    return out;
  }

  /** Bytes held by the vectors. */
  get bytes(): number {
    return this.capacity * this.stride * 4;
  }
}

/** Euclidean norm. */
export function l2norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}

/** A normalised copy (zeros stay zeros). */
export function normalized(v: ArrayLike<number>): Float32Array {
  const n = l2norm(v);
  const out = new Float32Array(v.length);
  if (n > 0) { for (let i = 0; i < v.length; i++) out[i] = v[i]! / n; }
  return out;
}

/** Int8 quantisation for storage: values scaled by max |v| into [-127, 127]. */
export function quantize(v: Float32Array): { q: Int8Array; scale: number } {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  const scale = max > 0 ? max / 127 : 1;
  const q = new Int8Array(v.length);
  for (let i = 0; i < v.length; i++) q[i] = Math.round(v[i]! / scale);
  return { q, scale };
}

/** Inverse of {@link quantize}. */
export function dequantize(q: Int8Array, scale: number): Float32Array {
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = q[i]! * scale;
  return out;
}
