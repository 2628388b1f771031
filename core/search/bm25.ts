/**
 * An in-memory BM25 index over document slots. Postings are growable typed arrays (slot ids and
 * term frequencies per term), so scoring a query touches only the documents that contain its
 * terms. Documents are added and removed incrementally; the caller keeps the slot numbers.
 */
export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  private termIds = new Map<string, number>();
  private postSlots: Int32Array[] = [];
  private postTf: Uint16Array[] = [];
  private postLen: number[] = [];
  private docLen = new Float32Array(1024);
  private liveDocs = 0;
  private totalLen = 0;
  // Scratch accumulators reused across queries (single-threaded: one query at a time).
  private acc = new Float32Array(1024);
  private seen = new Uint8Array(1024);

  constructor({ k1 = 1.2, b = 0.75 }: { k1?: number; b?: number } = {}) {
    this.k1 = k1;
    this.b = b;
  }

  /** Number of live documents. */
  get size(): number {
    return this.liveDocs;
  }

  /** Number of distinct terms ever indexed. */
  get vocabularySize(): number {
    return this.termIds.size;
  }

  /** Counts terms into a bag (term -> frequency). */
  static bag(terms: Iterable<string>, into = new Map<string, number>(), weight = 1): Map<string, number> {
    for (const t of terms) into.set(t, (into.get(t) ?? 0) + weight);
    return into;
  }

  /** Indexes a document at `slot` (which must not hold a live document). */
  add(slot: number, bag: Map<string, number>): void {
    this.ensure(slot + 1);
    let len = 0;
    for (const [term, tf] of bag) {
      let id = this.termIds.get(term);
      if (id === undefined) {
        id = this.postSlots.length;
        this.termIds.set(term, id);
        this.postSlots.push(new Int32Array(4));
        this.postTf.push(new Uint16Array(4));
        this.postLen.push(0);
      }
      const n = this.postLen[id]!;
      if (n === this.postSlots[id]!.length) {
        const s = new Int32Array(n * 2);
        s.set(this.postSlots[id]!);
        this.postSlots[id] = s;
        const f = new Uint16Array(n * 2);
        f.set(this.postTf[id]!);
        this.postTf[id] = f;
      }
      this.postSlots[id]![n] = slot;
      this.postTf[id]![n] = Math.min(65535, tf);
      this.postLen[id] = n + 1;
      len += tf;
    }
    this.docLen[slot] = len;
    this.totalLen += len;
    this.liveDocs++;
  }

  /** Removes the document at `slot`; `bag` must be the bag it was added with. */
  remove(slot: number, bag: Map<string, number>): void {
    for (const term of bag.keys()) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const slots = this.postSlots[id]!, tfs = this.postTf[id]!;
      const n = this.postLen[id]!;
      const at = slots.subarray(0, n).lastIndexOf(slot);
      if (at < 0) continue;
      slots.copyWithin(at, at + 1, n);
      tfs.copyWithin(at, at + 1, n);
      this.postLen[id] = n - 1;
    }
    this.totalLen -= this.docLen[slot]!;
    this.docLen[slot] = 0;
    this.liveDocs--;
  }

  /** Document frequency of a term (0 when unknown). */
  df(term: string): number {
    const id = this.termIds.get(term);
    return id === undefined ? 0 : this.postLen[id]!;
  }

  /** Inverse document frequency (BM25+ style, never negative). */
  idf(term: string): number {
    const df = this.df(term);
    return Math.log(1 + (this.liveDocs - df + 0.5) / (df + 0.5));
  }

  /**
   * Scores every document containing at least one query term.
   * @param query term -> weight (query term frequency or a trend weight)
   * @param allow optional prefilter; documents it rejects are skipped
   * @returns parallel arrays of slots and scores (unsorted)
   */
  score(query: Map<string, number>, allow?: (slot: number) => boolean): { slots: Int32Array; scores: Float32Array } {
    const avgdl = this.liveDocs > 0 ? this.totalLen / this.liveDocs : 1;
    const k1 = this.k1, b = this.b;
    const touched: number[] = [];
    const acc = this.acc, seen = this.seen, docLen = this.docLen;
    for (const [term, weight] of query) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const n = this.postLen[id]!;
      if (n === 0) continue;
      const idf = Math.log(1 + (this.liveDocs - n + 0.5) / (n + 0.5)) * weight;
      const slots = this.postSlots[id]!, tfs = this.postTf[id]!;
      for (let i = 0; i < n; i++) {
        const s = slots[i]!;
        if (seen[s] === 2) continue; // rejected by the prefilter earlier in this query
        if (seen[s] === 0) {
          if (allow && !allow(s)) {
            seen[s] = 2;
            touched.push(s);
            continue;
          }
          seen[s] = 1;
          touched.push(s);
        }
        const tf = tfs[i]!;
        acc[s] += idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * docLen[s]!) / avgdl));
      }
    }
    let kept = 0;
    for (const s of touched) if (seen[s] === 1) kept++;
    const outSlots = new Int32Array(kept), outScores = new Float32Array(kept);
    let j = 0;
    for (const s of touched) {
      if (seen[s] === 1) {
        outSlots[j] = s;
        outScores[j++] = acc[s]!;
      }
      acc[s] = 0;
      seen[s] = 0;
    }
    return { slots: outSlots, scores: outScores };
  }

  private ensure(n: number): void {
    if (n <= this.docLen.length) return;
    let cap = this.docLen.length;
    while (cap < n) cap *= 2;
    const grow = <T extends Float32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const x = make(cap);
      x.set(a);
      return x;
    };
    this.docLen = grow(this.docLen, (c) => new Float32Array(c));
    this.acc = grow(this.acc, (c) => new Float32Array(c));
    this.seen = grow(this.seen, (c) => new Uint8Array(c));
  }
}
