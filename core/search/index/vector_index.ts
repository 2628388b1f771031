import { PARALLEL_SCAN_MIN_ROWS, processScanHelper, type ScanHelper } from "./scan_helper.ts";
import { createSimdScan, MAX_BLOCK, type SimdScan } from "./simd.ts";
import { TopK } from "./topk.ts";

const PAGE = 65_536;
const QUERY_MAX = 32_767;
// A row (or query) this close to the common direction has no component left to compare.
const MIN_REST = 1e-9;
// How far from an integer a scaled component may be for the vector to count as int8 already.
const INT8_EXACT = 1e-3;

/**
 * Dense vectors of one data model, one row per slot, stored as int8 (the form articles are
 * stored in KV) with a per-row factor that makes each row unit length, so a scan is a cosine.
 * Rows are padded to a multiple of sixteen bytes and live in WebAssembly memory, where a SIMD
 * kernel scans all of them in one pass (a quarter of the memory traffic of f32 rows: the scan is
 * bound by it at a million rows); without WebAssembly SIMD a JavaScript loop does the same.
 *
 * Optionally cosines are taken with a common direction u removed from both sides (see
 * {@link setDirection}): (d.q - (d.u)(q.u)) / sqrt((1 - (d.u)^2)(1 - (q.u)^2)). That is an affine
 * map of the plain dot product per row, so it is folded into the scan: row r gets
 * `dot * a[r] * alpha - b[r] * beta` with a[r], b[r] kept per row and alpha, beta per query.
 *
 * Memory layout (SIMD): [query: stride int16][matrix: capacity x stride int8][a][b][scores]
 * (the last three: capacity f32 each). The matrix keeps its offset when memory grows.
 */
export class VectorIndex {
  readonly dims: number;
  /** Row length in bytes (dims rounded up to a multiple of 16). */
  readonly stride: number;
  private capacity: number;
  private readonly kernel: SimdScan | null;
  private readonly queryBytes: number;
  private data!: Int8Array;
  private query!: Int16Array;
  private a!: Float32Array;
  private b!: Float32Array;
  private scores!: Float32Array;
  /** Per block of {@link MAX_BLOCK} rows: the largest cosine of the last scan (see {@link best}). */
  private maxima!: Float32Array;
  /** The last scan's output and how many whole blocks its maxima cover. */
  private lastScan: Float32Array | null = null;
  private maximaBlocks = 0;
  /** Per row: the factor that makes the int8 row unit length (0 for an empty row). */
  private unit: Float32Array;
  private direction: Float32Array | null = null;
  /** Unit f32 rows of the slots whose vector is not int8 (see {@link set}). */
  private readonly exact = new Map<number, Float32Array>();
  private readonly keepFloats: boolean;
  /** Splits large scans over two threads (the rows live in a shared memory for it); see {@link helperFor}. */
  private readonly helper: ScanHelper | null | undefined;

  /**
   * @param keepFloats keep vectors that are not int8 already in f32 too, for exact cosines (see
   * {@link set}); off, they are stored as int8 like every vector from storage
   */
  constructor(
    dims: number,
    capacity = 1024,
    { simd = true, keepFloats = false, helper }: {
      simd?: boolean;
      keepFloats?: boolean;
      /** The scan helper thread: the process's by default (started by the first large scan); null for none. */
      helper?: ScanHelper | null;
    } = {},
  ) {
    this.keepFloats = keepFloats;
    this.helper = helper;
    this.dims = dims;
    this.stride = Math.ceil(dims / 16) * 16;
    this.capacity = Math.max(1, capacity);
    this.queryBytes = Math.ceil((this.stride * 2) / 64) * 64;
    this.unit = new Float32Array(this.capacity);
    this.kernel = simd
      ? createSimdScan(Math.ceil(this.bytesFor(this.capacity) / PAGE), { shared: helper !== null })
      : null;
    this.layout();
  }

  /** Whether the WebAssembly SIMD kernel is in use. */
  get simd(): boolean {
    return this.kernel !== null;
  }

  /**
   * How many scans took each path since the index was made: WebAssembly SIMD on this thread,
   * SIMD split with the helper thread, the JavaScript loop (no SIMD), or the plain cosine loop (a
   * query along the common direction), and how many rankings the owner's IVF index answered
   * instead of a scan (`ivf`, counted by DataModelIndex). Benchmarks print it, so a silent
   * fallback shows.
   */
  readonly scanPaths = { simd: 0, simdWithHelper: 0, javascript: 0, plain: 0, ivf: 0 };

  private bytesFor(capacity: number): number {
    return this.queryBytes + capacity * this.stride + 3 * capacity * 4 + Math.ceil(capacity / MAX_BLOCK) * 4;
  }

  // Places the arrays for the current capacity; after growth, `old` says where a and b were (the
  // views of a grown WebAssembly memory are detached, so their offsets are taken before).
  private layout(old?: { capacity: number; aAt: number; bAt: number }): void {
    const cap = this.capacity, rows = cap * this.stride;
    this.lastScan = null;
    if (this.kernel) {
      const buf = this.kernel.memory.buffer;
      const aAt = this.queryBytes + rows, bAt = aAt + cap * 4;
      this.query = new Int16Array(buf, 0, this.stride);
      this.data = new Int8Array(buf, this.queryBytes, rows);
      this.a = new Float32Array(buf, aAt, cap);
      this.b = new Float32Array(buf, bAt, cap);
      this.scores = new Float32Array(buf, bAt + cap * 4, cap);
      this.maxima = new Float32Array(buf, bAt + cap * 8, Math.ceil(cap / MAX_BLOCK));
      if (old) {
        // The old a and b sit where the grown matrix now is: move them past it (the new places
        // start beyond the old ones' end, so neither copy overwrites the other's source).
        const bytes = new Uint8Array(buf);
        bytes.copyWithin(bAt, old.bAt, old.bAt + old.capacity * 4);
        bytes.copyWithin(aAt, old.aAt, old.aAt + old.capacity * 4);
        this.a.fill(0, old.capacity);
        this.b.fill(0, old.capacity);
        this.data.fill(0, old.capacity * this.stride);
      }
    } else {
      const grown = <T extends Int8Array | Float32Array>(old: T | undefined, make: (n: number) => T, n: number) => {
        const next = make(n);
        if (old) next.set(old);
        return next;
      };
      this.data = grown(this.data, (n) => new Int8Array(n), rows);
      this.a = grown(this.a, (n) => new Float32Array(n), cap);
      this.b = grown(this.b, (n) => new Float32Array(n), cap);
      this.query = new Int16Array(this.stride);
      this.scores = new Float32Array(cap);
      this.maxima = new Float32Array(Math.ceil(cap / MAX_BLOCK));
    }
    if (this.unit.length < cap) {
      const unit = new Float32Array(cap);
      unit.set(this.unit);
      this.unit = unit;
    }
  }

  private grow(slot: number): void {
    const old = { capacity: this.capacity, aAt: this.a.byteOffset, bAt: this.b.byteOffset };
    let cap = old.capacity;
    while (cap <= slot) cap *= 2;
    if (this.kernel) {
      const need = Math.ceil(this.bytesFor(cap) / PAGE) - this.kernel.memory.buffer.byteLength / PAGE;
      if (need > 0) this.kernel.memory.grow(need);
    }
    this.capacity = cap;
    this.layout(old);
  }

  /**
   * Stores `vector` at `slot` as int8 scaled by its largest component; a zero or missing vector
   * stores zeros. A vector that came from int8 storage (every article the service indexes) is
   * stored exactly as it was. With `keepFloats`, any other vector also keeps its unit f32 form and
   * cosines with it are taken in f32 (exact, at the cost of a JavaScript loop per such row per
   * scan: for relevance evaluations over f32 embeddings, not for large indexes).
   */
  set(slot: number, vector: Float32Array | null): void {
    if (slot >= this.capacity) this.grow(slot);
    const o = slot * this.stride;
    this.data.fill(0, o, o + this.stride);
    this.unit[slot] = 0;
    this.exact.delete(slot);
    if (vector && vector.length === this.dims) {
      let max = 0;
      for (let j = 0; j < this.dims; j++) max = Math.max(max, Math.abs(vector[j]!));
      if (max > 0 && Number.isFinite(max)) {
        let sq = 0, representable = true;
        for (let j = 0; j < this.dims; j++) {
          const x = (vector[j]! / max) * 127, q = Math.round(x);
          if (Math.abs(x - q) > INT8_EXACT) representable = false;
          this.data[o + j] = q;
          sq += q * q;
        }
        this.unit[slot] = 1 / Math.sqrt(sq);
        if (!representable && this.keepFloats) this.exact.set(slot, normalized(vector));
      }
    }
    this.updateRow(slot);
  }

  /**
   * Stores at `slot` the row `from` of `source` (an index of the same dimensions) exactly as it
   * is there (int8 row, unit factor, f32 form), with this index's common direction.
   */
  copyRow(slot: number, source: VectorIndex, from: number): void {
    if (source.dims !== this.dims) throw new RangeError("vector dimensions differ");
    if (slot >= this.capacity) this.grow(slot);
    const o = slot * this.stride;
    this.data.set(source.data.subarray(from * source.stride, from * source.stride + this.dims), o);
    this.unit[slot] = source.unit[from] ?? 0;
    const exact = source.exact.get(from);
    if (exact) this.exact.set(slot, exact);
    else this.exact.delete(slot);
    this.updateRow(slot);
  }

  /** Clears a slot. */
  clear(slot: number): void {
    if (slot < this.capacity) this.set(slot, null);
  }

  /** Row `slot` as a unit vector (zeros when empty); a copy. */
  row(slot: number): Float32Array {
    const exact = this.exact.get(slot);
    if (exact) return exact.slice();
    const out = new Float32Array(this.dims);
    const o = slot * this.stride, f = this.unit[slot] ?? 0;
    for (let j = 0; j < this.dims; j++) out[j] = this.data[o + j]! * f;
    return out;
  }

  // The dot product of row `slot` (as a unit vector) with `v`.
  private dot(slot: number, v: ArrayLike<number>): number {
    let s = 0;
    const exact = this.exact.size === 0 ? undefined : this.exact.get(slot);
    if (exact) {
      for (let j = 0; j < this.dims; j++) s += exact[j]! * v[j]!;
      return s;
    }
    for (let j = 0, o = slot * this.stride; j < this.dims; j++) s += this.data[o + j]! * v[j]!;
    return s * this.unit[slot]!;
  }

  /**
   * The first principal component (uncentred) of the first `count` rows, by power iteration: the
   * direction averaged word vectors all share, which says little about topic (Arora et al., "A
   * Simple but Tough-to-Beat Baseline for Sentence Embeddings", 2017). Null when there are no rows.
   */
  principalDirection(count: number, iterations = 12): Float32Array | null {
    const d = this.dims, m = this.data, unit = this.unit;
    let u = new Float64Array(d).fill(1 / Math.sqrt(d));
    let any = false;
    for (let it = 0; it < iterations; it++) {
      const next = new Float64Array(d);
      for (let r = 0, o = 0; r < count; r++, o += this.stride) {
        const f = unit[r]!;
        if (f === 0) continue;
        const exact = this.exact.size === 0 ? undefined : this.exact.get(r);
        const dot = this.dot(r, u);
        if (dot === 0) continue;
        any = true;
        if (exact) { for (let j = 0; j < d; j++) next[j]! += dot * exact[j]!; }
        else for (let j = 0, w = dot * f; j < d; j++) next[j]! += w * m[o + j]!;
      }
      const n = l2norm(next);
      if (n === 0) return null;
      for (let j = 0; j < d; j++) next[j]! /= n;
      u = next;
    }
    return any ? Float32Array.from(u) : null;
  }

  /**
   * From now on, cosines are taken with `direction` (a unit vector, or null for none) removed
   * from rows and queries; updates the first `count` rows (later rows are updated when set).
   */
  setDirection(direction: Float32Array | null, count: number): void {
    this.direction = direction;
    for (let r = 0; r < Math.min(count, this.capacity); r++) this.updateRow(r);
  }

  // The row's scan coefficients: a = unit / sqrt(1 - du^2), b = du / sqrt(1 - du^2), where du is
  // the unit row's component along the direction.
  private updateRow(slot: number): void {
    const f = this.unit[slot]!, u = this.direction;
    if (!u || f === 0) {
      this.a[slot] = f;
      this.b[slot] = 0;
      return;
    }
    const du = this.dot(slot, u), rest = 1 - du * du;
    const inv = rest > MIN_REST ? 1 / Math.sqrt(rest) : 0;
    this.a[slot] = f * inv;
    this.b[slot] = du * inv;
  }

  /** Cosine of one slot with a unit query, as {@link scan} computes it (without its rounding). */
  cosine(slot: number, query: Float32Array): number {
    const c = this.dot(slot, query);
    const { alpha, beta } = this.queryTerms(query, 1);
    return alpha === 0 ? c : this.corrected(slot, c, alpha, beta);
  }

  // `c` (a plain cosine) with the common direction removed: c * a / unit * alpha - b * beta.
  private corrected(slot: number, c: number, alpha: number, beta: number): number {
    const f = this.unit[slot]!;
    return f === 0 ? 0 : c * (this.a[slot]! / f) * alpha - this.b[slot]! * beta;
  }

  // Replaces the scan's cosines of the rows kept in f32 by their exact values.
  private exactCosines(out: Float32Array, query: Float32Array): void {
    const { alpha, beta } = this.queryTerms(query, 1);
    for (const slot of this.exact.keys()) {
      if (slot >= out.length) continue;
      const c = this.dot(slot, query);
      out[slot] = alpha === 0 ? c : this.corrected(slot, c, alpha, beta);
    }
  }

  // alpha and beta of a query whose components are multiplied by `qScale` in the scan; alpha 0
  // when the common direction cannot be removed from it (plain cosines then).
  private queryTerms(query: Float32Array, qScale: number): { alpha: number; beta: number } {
    const u = this.direction;
    if (!u) return { alpha: qScale, beta: 0 };
    let qu = 0;
    for (let j = 0; j < this.dims; j++) qu += query[j]! * u[j]!;
    const qRest = 1 - qu * qu;
    if (qRest <= MIN_REST) return { alpha: 0, beta: 0 };
    const s = 1 / Math.sqrt(qRest);
    return { alpha: qScale * s, beta: qu * s };
  }

  /**
   * Cosine of every slot in [0, count) with `query` (a unit vector; null gives zeros). The query
   * is taken as int16 scaled by its largest component (relative error under 2e-5).
   * @returns a view valid until the next scan or growth: read it synchronously
   */
  scan(query: Float32Array | null, count: number): Float32Array {
    const out = this.scores.subarray(0, count);
    this.lastScan = null;
    if (!query || count === 0) return out.fill(0);
    let max = 0;
    for (let j = 0; j < this.dims; j++) max = Math.max(max, Math.abs(query[j]!));
    if (!(max > 0) || !Number.isFinite(max)) return out.fill(0);
    const qScale = max / QUERY_MAX;
    const qi = this.query;
    qi.fill(0);
    for (let j = 0; j < this.dims; j++) qi[j] = Math.round(query[j]! / qScale);
    const { alpha, beta } = this.queryTerms(query, qScale);
    if (alpha === 0) {
      // A query along the common direction itself: plain cosines (rare; a JavaScript loop).
      for (let r = 0; r < count; r++) out[r] = this.dot(r, query);
      this.scanPaths.plain++;
      return this.withMaxima(out, count);
    }
    if (this.kernel) {
      const a = this.a.byteOffset, b = this.b.byteOffset;
      const helper = this.helperFor(count);
      if (helper?.splits(this.kernel, count)) this.scanPaths.simdWithHelper++;
      else this.scanPaths.simd++;
      if (helper) {
        helper.scan(this.kernel, 0, this.queryBytes, count, this.stride, a, b, this.scores.byteOffset, alpha, beta);
      } else this.kernel.scan(0, this.queryBytes, count, this.stride, a, b, this.scores.byteOffset, alpha, beta);
    } else {
      this.scanPaths.javascript++;
      const d = this.stride, m = this.data, A = this.a, B = this.b;
      for (let r = 0, o = 0; r < count; r++, o += d) {
        let s = 0;
        for (let j = 0; j < d; j++) s += m[o + j]! * qi[j]!;
        out[r] = s * A[r]! * alpha - B[r]! * beta;
      }
    }
    if (this.exact.size > 0) this.exactCosines(out, query);
    return this.withMaxima(out, count);
  }

  /**
   * The scan's output array for `count` slots without scanning: scratch space for cosines a
   * caller computes for some slots only (see {@link cosine}). Valid until the next scan or growth.
   */
  scratch(count: number): Float32Array {
    this.lastScan = null;
    return this.scores.subarray(0, count);
  }

  /**
   * {@link scan} over some ranges of slots only: `ranges` holds `[from, to)` pairs, the first
   * `count` of them. Cosines outside the ranges are not written. Null when the query is empty or
   * lies along the common direction (then only a full {@link scan} gives its cosines).
   * @returns a view of every slot's cosine, valid until the next scan or growth
   */
  scanRanges(query: Float32Array, ranges: Int32Array, count: number): Float32Array | null {
    this.lastScan = null;
    let max = 0;
    for (let j = 0; j < this.dims; j++) max = Math.max(max, Math.abs(query[j]!));
    if (!(max > 0) || !Number.isFinite(max)) return null;
    const qScale = max / QUERY_MAX;
    const qi = this.query;
    qi.fill(0);
    for (let j = 0; j < this.dims; j++) qi[j] = Math.round(query[j]! / qScale);
    const { alpha, beta } = this.queryTerms(query, qScale);
    if (alpha === 0) return null;
    const out = this.scores, d = this.stride;
    for (let i = 0; i < count; i++) {
      const from = ranges[2 * i]!, to = Math.min(ranges[2 * i + 1]!, this.capacity);
      if (to <= from) continue;
      if (this.kernel) {
        this.kernel.scan(
          0,
          this.queryBytes + from * d,
          to - from,
          d,
          this.a.byteOffset + from * 4,
          this.b.byteOffset + from * 4,
          out.byteOffset + from * 4,
          alpha,
          beta,
        );
      } else {
        const m = this.data, A = this.a, B = this.b;
        for (let r = from, o = from * d; r < to; r++, o += d) {
          let s = 0;
          for (let j = 0; j < d; j++) s += m[o + j]! * qi[j]!;
          out[r] = s * A[r]! * alpha - B[r]! * beta;
        }
      }
    }
    return out;
  }

  // The given helper, or the process's once a scan is large enough to split (small indexes never
  // start the helper thread).
  private helperFor(rows: number): ScanHelper | null {
    if (this.helper !== undefined) return this.helper;
    return rows >= PARALLEL_SCAN_MIN_ROWS ? processScanHelper() : null;
  }

  // Records the block maxima of a scan's output, for best().
  private withMaxima(out: Float32Array, count: number): Float32Array {
    const blocks = Math.floor(count / MAX_BLOCK);
    if (this.kernel) this.kernel.blockMax(this.scores.byteOffset, blocks, this.maxima.byteOffset);
    else {
      for (let b = 0; b < blocks; b++) {
        let m = -Infinity;
        for (let r = b * MAX_BLOCK; r < (b + 1) * MAX_BLOCK; r++) if (out[r]! > m) m = out[r]!;
        this.maxima[b] = m;
      }
    }
    this.lastScan = out;
    this.maximaBlocks = blocks;
    return out;
  }

  /**
   * The `k` best rows of the last scan, best first (ties: lower slot first), exactly as one pass
   * over every cosine would select them, or null when `cos` is not that scan's output. The k-th
   * largest block maximum is at most the k-th best cosine, so only blocks whose maximum reaches it
   * are read: a few thousand cosines instead of every one.
   */
  best(cos: Float32Array, k: number): { id: number; score: number }[] | null {
    if (cos !== this.lastScan) return null;
    const blocks = this.maximaBlocks, maxima = this.maxima, count = cos.length;
    let threshold = -Infinity;
    if (blocks >= k && k > 0) {
      const top = new TopK(k);
      for (let b = 0; b < blocks; b++) top.push(b, maxima[b]!);
      threshold = top.floor;
    }
    const top = new TopK(k);
    let floor = top.floor;
    const take = (from: number, to: number) => {
      for (let r = from; r < to; r++) {
        const c = cos[r]!;
        if (c > floor) {
          top.push(r, c);
          floor = top.floor;
        }
      }
    };
    for (let b = 0; b < blocks; b++) if (maxima[b]! >= threshold) take(b * MAX_BLOCK, (b + 1) * MAX_BLOCK);
    take(blocks * MAX_BLOCK, count);
    return top.drain();
  }

  /** Bytes held by the vectors and their per-row numbers. */
  get bytes(): number {
    return this.capacity * (this.stride + 4 * 4);
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

/** A copy of the scan counters (see {@link VectorIndex.scanPaths}). */
export type ScanPaths = VectorIndex["scanPaths"];

/**
 * One line naming the scan paths a vector index took (see {@link VectorIndex.scanPaths}), since
 * `since` (a copy taken earlier) or since it was made: what a benchmark prints beside its figures.
 */
export function describeScanPaths(index: VectorIndex, since?: ScanPaths): string {
  const p = index.scanPaths, d = (k: keyof ScanPaths) => p[k] - (since?.[k] ?? 0);
  return `scan paths: WebAssembly SIMD ${index.simd ? "available" : "NOT AVAILABLE"}; ${d("simdWithHelper")} scans ` +
    `SIMD split with the helper thread, ${d("simd")} SIMD on one thread, ${d("javascript")} JavaScript loop, ` +
    `${d("plain")} plain cosine loop; ${d("ivf")} vector sides answered by the IVF index without a full scan`;
}
