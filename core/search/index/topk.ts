/**
 * A bounded min-heap that keeps the `k` largest scores seen: O(n log k) selection without sorting
 * everything. Ties keep the earlier-pushed item (lower slot), so results are deterministic.
 */
export class TopK {
  readonly k: number;
  private scores: Float64Array;
  private ids: Int32Array;
  size = 0;

  constructor(k: number) {
    this.k = Math.max(0, k);
    this.scores = new Float64Array(this.k);
    this.ids = new Int32Array(this.k);
  }

  /** The smallest score kept, or -Infinity while the heap is not full. */
  get floor(): number {
    return this.size < this.k ? -Infinity : this.scores[0]!;
  }

  /** Offers one item; cheap rejection when it does not beat the floor. */
  push(id: number, score: number): void {
    if (this.k === 0) return;
    if (this.size < this.k) {
      let i = this.size++;
      this.scores[i] = score;
      this.ids[i] = id;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.less(i, p)) break;
        this.swap(i, p);
        i = p;
      }
      return;
    }
    if (score <= this.scores[0]!) return;
    this.scores[0] = score;
    this.ids[0] = id;
    this.siftDown(0);
  }

  /** Items best first (score descending, then id ascending). Leaves the heap empty. */
  drain(): { id: number; score: number }[] {
    const out: { id: number; score: number }[] = new Array(this.size);
    while (this.size > 0) {
      const last = --this.size;
      out[last] = { id: this.ids[0]!, score: this.scores[0]! };
      this.scores[0] = this.scores[last]!;
      this.ids[0] = this.ids[last]!;
      this.siftDown(0);
    }
    return out;
  }

  // Heap order: smaller score first; on equal scores the larger id is "smaller" so it leaves first.
  private less(a: number, b: number): boolean {
    const sa = this.scores[a]!, sb = this.scores[b]!;
    return sa < sb || (sa === sb && this.ids[a]! > this.ids[b]!);
  }

  private swap(a: number, b: number): void {
    const s = this.scores[a]!;
    this.scores[a] = this.scores[b]!;
    this.scores[b] = s;
    const i = this.ids[a]!;
    this.ids[a] = this.ids[b]!;
    this.ids[b] = i;
  }

  private siftDown(i: number): void {
    const n = this.size;
    while (true) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
