/**
 * An inverted-file (IVF) index over the rows of a {@link VectorIndex}: the rows are clustered
 * around `lists` centroids (spherical k-means on a sample), each row is kept, as a copy, in the
 * run of positions of its nearest centroid, and a query scans only the rows of its `probes`
 * nearest centroids with the same SIMD kernel as the exact scan. At a million rows that is a few
 * per cent of the rows instead of all of them; what it may miss is a near row filed under a
 * centroid the query does not probe (recall is measured against the exact scan in the tests and
 * in docs/relevance.md).
 *
 * Cosines are the source index's (the common direction removed alike): centroids and copies get
 * its direction. The copies cost what the rows cost (stride + 16 bytes per row) plus two int32
 * per row for the mapping.
 *
 * Updates: a row set after the build is filed under its nearest centroid at the end of that
 * centroid's run (a chunk of {@link CHUNK} positions at a time); a cleared row leaves a hole. The
 * owner rebuilds when the index has doubled or holes are many (see {@link IvfIndex.stale}).
 */
import { TopK } from "./topk.ts";
import { VectorIndex } from "./vector_index.ts";

/** Positions appended to a list at a time once it has used its run. */
export const CHUNK = 64;
/** Sample rows per centroid for k-means. */
const SAMPLE_PER_LIST = 24;
const KMEANS_ITERATIONS = 8;
/** Rows assigned or copied between yields to the event loop while building (a few ms of work). */
export const ROWS_PER_SLICE = 1024;

/** How an IVF index is shaped: its centroids and how many of them a query probes. */
export interface IvfShape {
  lists: number;
  probes: number;
}

/**
 * The shape used for `rows` rows: about sqrt(rows) / 2 centroids (a 1M index: 500 lists of about
 * 2,000 rows) and probes that scan about a tenth of the rows. On the bench corpus 5 % already
 * finds the exact top 50 (bench/ann_recall.ts); the margin is for corpora that cluster less.
 */
export function ivfShape(rows: number): IvfShape {
  const lists = Math.max(16, Math.min(1024, Math.round(Math.sqrt(rows) / 2)));
  return { lists, probes: Math.max(8, Math.ceil(lists / 10)) };
}

/** Yields to the event loop (a build never holds it for long). */
const yieldNow = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export class IvfIndex {
  readonly lists: number;
  probes: number;
  /** Rows in the source index when the build started. */
  readonly builtRows: number;
  private readonly source: VectorIndex;
  private readonly centroids: VectorIndex;
  private readonly store: VectorIndex;
  /** Per position: the source slot it holds, -1 for none. */
  private posSlot: Int32Array;
  /** Per source slot: its position, -1 for none. */
  private slotPos: Int32Array;
  /** Per list: its runs as [from, to) pairs; the last run may have room up to `limit`. */
  private readonly runs: number[][];
  private readonly limit: Int32Array;
  private next = 0;
  /** Rows filed and holes left by cleared rows. */
  rows = 0;
  holes = 0;
  private rangeScratch = new Int32Array(64);

  private constructor(source: VectorIndex, shape: IvfShape, builtRows: number) {
    this.source = source;
    this.lists = shape.lists;
    this.probes = Math.min(shape.probes, shape.lists);
    this.builtRows = builtRows;
    this.centroids = new VectorIndex(source.dims, shape.lists, { helper: null });
    this.store = new VectorIndex(source.dims, Math.max(1, builtRows), { helper: null });
    this.posSlot = new Int32Array(Math.max(1, builtRows)).fill(-1);
    this.slotPos = new Int32Array(Math.max(1, builtRows)).fill(-1);
    this.runs = Array.from({ length: shape.lists }, () => []);
    this.limit = new Int32Array(shape.lists);
  }

  /**
   * Clusters and files the first `count` rows of `source` (empty rows are left out), yielding to
   * the event loop between slices. `direction` is the source's common direction (null: none).
   * Rows the source changes meanwhile must be passed to {@link update} afterwards.
   */
  static async build(
    source: VectorIndex,
    count: number,
    direction: Float32Array | null,
    shape: IvfShape = ivfShape(count),
  ): Promise<IvfIndex> {
    const ivf = new IvfIndex(source, shape, count);
    ivf.centroids.setDirection(direction, 0);
    ivf.store.setDirection(direction, 0);
    await ivf.train(count, direction);
    // Nearest centroid of every row, then runs laid out list by list.
    const assigned = new Int32Array(count).fill(-1);
    const sizes = new Int32Array(ivf.lists);
    for (let r = 0; r < count; r++) {
      if (r % ROWS_PER_SLICE === ROWS_PER_SLICE - 1) await yieldNow();
      const list = ivf.nearest(source.row(r));
      if (list < 0) continue;
      assigned[r] = list;
      sizes[list]!++;
    }
    const at = new Int32Array(ivf.lists);
    let p = 0;
    for (let l = 0; l < ivf.lists; l++) {
      at[l] = p;
      ivf.runs[l]!.push(p, p + sizes[l]!);
      ivf.limit[l] = p + sizes[l]!;
      p += sizes[l]!;
    }
    ivf.next = p;
    for (let r = 0; r < count; r++) {
      if (r % ROWS_PER_SLICE === ROWS_PER_SLICE - 1) await yieldNow();
      const l = assigned[r]!;
      if (l >= 0) ivf.place(r, at[l]!++);
    }
    return ivf;
  }

  // Spherical k-means on a strided sample of the non-empty rows, in the source's cosine.
  private async train(count: number, direction: Float32Array | null): Promise<void> {
    const want = Math.min(count, this.lists * SAMPLE_PER_LIST);
    const step = Math.max(1, Math.floor(count / want));
    const sample = new VectorIndex(this.source.dims, want, { helper: null });
    sample.setDirection(direction, 0);
    let n = 0;
    for (let r = 0; r < count && n < want; r += step) {
      sample.copyRow(n, this.source, r);
      if (sample.row(n).some((x) => x !== 0)) n++;
    }
    if (n === 0) return;
    const rows = Array.from({ length: n }, (_, i) => sample.row(i));
    for (let l = 0; l < this.lists; l++) this.centroids.set(l, rows[Math.floor((l * n) / this.lists)]!);
    const dims = this.source.dims, assign = new Int32Array(n);
    for (let it = 0; it < KMEANS_ITERATIONS; it++) {
      await yieldNow();
      for (let i = 0; i < n; i++) {
        if (i % ROWS_PER_SLICE === ROWS_PER_SLICE - 1) await yieldNow();
        assign[i] = this.nearest(rows[i]!);
      }
      const sums = Array.from({ length: this.lists }, () => new Float64Array(dims));
      const sizes = new Int32Array(this.lists);
      for (let i = 0; i < n; i++) {
        const l = assign[i]!, row = rows[i]!, sum = sums[l]!;
        if (l < 0) continue;
        sizes[l]!++;
        for (let j = 0; j < dims; j++) sum[j]! += row[j]!;
      }
      for (let l = 0; l < this.lists; l++) {
        // An empty cluster restarts from a sample row (deterministic: spread by its number).
        if (sizes[l] === 0) this.centroids.set(l, rows[(l * 7919 + it) % n]!);
        else this.centroids.set(l, Float32Array.from(sums[l]!));
      }
    }
  }

  // The list whose centroid is nearest to `v` (-1 for an empty vector).
  private nearest(v: Float32Array): number {
    if (!v.some((x) => x !== 0)) return -1;
    const cos = this.centroids.scan(v, this.lists);
    let best = -1, bestScore = -Infinity;
    for (let l = 0; l < this.lists; l++) {
      if (cos[l]! > bestScore) bestScore = cos[l]!, best = l;
    }
    return best;
  }

  private place(slot: number, pos: number): void {
    if (slot >= this.slotPos.length) this.slotPos = grown(this.slotPos, slot);
    if (pos >= this.posSlot.length) this.posSlot = grown(this.posSlot, pos);
    this.store.copyRow(pos, this.source, slot);
    this.posSlot[pos] = slot;
    this.slotPos[slot] = pos;
    this.rows++;
  }

  /** Files source row `slot` again after it changed (set or cleared). */
  update(slot: number): void {
    const old = slot < this.slotPos.length ? this.slotPos[slot]! : -1;
    if (old >= 0) {
      this.store.clear(old);
      this.posSlot[old] = -1;
      this.slotPos[slot] = -1;
      this.rows--;
      this.holes++;
    }
    const list = this.nearest(this.source.row(slot));
    if (list < 0) return;
    const runs = this.runs[list]!;
    let end = runs[runs.length - 1]!;
    if (end >= this.limit[list]!) {
      runs.push(this.next, this.next);
      this.limit[list] = this.next + CHUNK;
      this.next += CHUNK;
      end = runs[runs.length - 1]!;
    }
    runs[runs.length - 1] = end + 1;
    this.place(slot, end);
  }

  /** Sets the common direction of the centroids and copies (the source's new one). */
  setDirection(direction: Float32Array | null): void {
    this.centroids.setDirection(direction, this.lists);
    this.store.setDirection(direction, this.next);
  }

  /** Whether a rebuild is due: the source has doubled since the build, or a quarter of the positions are holes. */
  stale(sourceRows: number): boolean {
    return sourceRows >= 2 * this.builtRows || this.holes > (this.rows + this.holes) / 4;
  }

  /**
   * The `k` source slots with the best cosines among the rows of the query's nearest lists,
   * best first, with the cosines as the copies give them; null when the query has no
   * direction the index can scan by (then only the exact scan answers it).
   */
  search(query: Float32Array, k: number, allow?: (slot: number) => boolean): { id: number; score: number }[] | null {
    const cos = this.centroids.scan(query, this.lists);
    const nearest = new TopK(this.probes);
    for (let l = 0; l < this.lists; l++) nearest.push(l, cos[l]!);
    let count = 0;
    for (const { id } of nearest.drain()) {
      const runs = this.runs[id]!;
      if (this.rangeScratch.length < 2 * count + runs.length) {
        this.rangeScratch = grown(this.rangeScratch, 4 * count + runs.length);
      }
      this.rangeScratch.set(runs, 2 * count);
      count += runs.length / 2;
    }
    const scores = this.store.scanRanges(query, this.rangeScratch, count);
    if (!scores) return null;
    const top = new TopK(k), ranges = this.rangeScratch, posSlot = this.posSlot;
    let floor = top.floor;
    for (let i = 0; i < count; i++) {
      for (let p = ranges[2 * i]!, to = ranges[2 * i + 1]!; p < to; p++) {
        const c = scores[p]!, slot = posSlot[p]!;
        if (c > floor && slot >= 0 && (!allow || allow(slot))) {
          top.push(slot, c);
          floor = top.floor;
        }
      }
    }
    return top.drain();
  }

  /** Bytes held: the copies, the centroids and the mappings. */
  get bytes(): number {
    return this.store.bytes + this.centroids.bytes + 4 * (this.posSlot.length + this.slotPos.length);
  }
}

function grown(a: Int32Array, index: number): Int32Array<ArrayBuffer> {
  let n = Math.max(1, a.length);
  while (n <= index) n *= 2;
  const out = new Int32Array(n).fill(-1);
  out.set(a);
  return out;
}
