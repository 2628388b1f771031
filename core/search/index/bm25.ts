/**
 * An in-memory fielded BM25 (BM25F) index over document slots. Each document has a few fields
 * (an article: title, summary, body); a term's frequency in each field is normalised by that
 * field's length against the field's average length, weighted, and summed into one pseudo
 * frequency that saturates once (Robertson & Zaragoza, "The Probabilistic Relevance Framework:
 * BM25 and Beyond", 2009, section 3.3). With one field of weight 1 this is plain BM25.
 *
 * Postings are growable typed arrays (slot ids and per-field term frequencies per term), so
 * scoring a query touches only the documents that contain its terms. Documents are added and
 * removed incrementally; the caller keeps the slot numbers.
 */
import { TopK } from "./topk.ts";

/** Weight and length normalisation of one field. */
export interface Bm25Field {
  weight: number;
  /** Length normalisation in [0, 1]: 0 ignores the field's length, 1 normalises fully. */
  b: number;
}

/** Settings of a {@link Bm25Index}. */
export interface Bm25Options {
  k1?: number;
  /** Fields in the order documents list their frequencies; one plain field by default. */
  fields?: Bm25Field[];
}

/**
 * A document's terms: term -> frequency, or term -> frequency per field (in field order; missing
 * trailing fields count 0). A plain number counts in the first field.
 */
export type TermCounts = Map<string, number | readonly number[]>;

/**
 * A document's terms in packed form: its distinct terms and, per term, one frequency per field
 * (`tfs[i * fields + f]`). What articles store so that an index is built without re-tokenising.
 */
export interface PackedBag {
  terms: string[];
  tfs: Uint16Array;
}

export class Bm25Index {
  readonly k1: number;
  readonly fields: readonly Bm25Field[];
  private readonly nf: number;
  private termIds = new Map<string, number>();
  /** Term per id (the inverse of `termIds`): what a forward list of term ids reads back. */
  private termNames: string[] = [];
  private postSlots: Int32Array[] = [];
  /** Per term: nf frequencies per posting. */
  private postTf: Uint16Array[] = [];
  private postLen: number[] = [];
  /** Per term: whether its postings are in ascending slot order (true unless a slot was re-added). */
  private postSorted: boolean[] = [];
  /** Per slot: nf field lengths. */
  private docLen = new Float32Array(1024);
  private liveDocs = 0;
  private totalLen: Float64Array;
  private readonly lens: Float64Array;
  // Scratch accumulators reused across queries (single-threaded: one query at a time).
  private acc = new Float32Array(1024);
  /**
   * Per slot and field: weight / (1 - b + b * len / avg), the factor a frequency is multiplied by.
   * Recomputed lazily after the collection changed (lengths and averages move with every add).
   */
  private norm = new Float32Array(0);
  private changes = 0;
  private normAt = -1;
  private seen = new Uint8Array(1024);
  // Scratch slot lists of top() (no allocation per query: at a million documents a query touches
  // hundreds of thousands of slots).
  private touchedBuf = new Int32Array(1024);
  private aliveBuf = new Int32Array(1024);
  /** 1 per slot retired by {@link retire} whose postings {@link compact} has not dropped yet. */
  private retired = new Uint8Array(1024);
  private retiredCount = 0;

  constructor({ k1 = 1.2, fields = [{ weight: 1, b: 0.75 }] }: Bm25Options = {}) {
    if (fields.length === 0) throw new Error("a BM25 index needs at least one field");
    this.k1 = k1;
    this.fields = fields.map((f) => ({ ...f }));
    this.nf = fields.length;
    this.totalLen = new Float64Array(this.nf);
    this.lens = new Float64Array(this.nf);
    this.docLen = new Float32Array(1024 * this.nf);
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

  /** Counts the terms of each field into one bag of per-field frequencies. */
  static fieldBag(fieldTerms: Iterable<string>[]): Map<string, number[]> {
    const out = new Map<string, number[]>();
    fieldTerms.forEach((terms, f) => {
      for (const t of terms) {
        let tf = out.get(t);
        if (!tf) out.set(t, tf = new Array(fieldTerms.length).fill(0));
        tf[f]!++;
      }
    });
    return out;
  }

  /** Counts the terms of each field into a {@link PackedBag} (terms in order of first appearance). */
  static packedBag(fieldTerms: string[][]): PackedBag {
    const nf = fieldTerms.length;
    const at = new Map<string, number>();
    const terms: string[] = [];
    let tfs = new Uint16Array(64 * nf);
    for (let f = 0; f < nf; f++) {
      for (const t of fieldTerms[f]!) {
        let i = at.get(t);
        if (i === undefined) {
          i = terms.length;
          at.set(t, i);
          terms.push(t);
          if ((i + 1) * nf > tfs.length) {
            const grown = new Uint16Array(tfs.length * 2);
            grown.set(tfs);
            tfs = grown;
          }
        }
        if (tfs[i * nf + f]! < 65535) tfs[i * nf + f]!++;
      }
    }
    return { terms, tfs: tfs.slice(0, terms.length * nf) };
  }

  /** Indexes a document at `slot` (which must not hold a live or retired document). */
  add(slot: number, bag: TermCounts | PackedBag): void {
    this.ensure(slot + 1);
    if (this.retired[slot] === 1) throw new Error("a retired slot is reused only after compact()");
    const nf = this.nf, lens = this.lens.fill(0);
    if (bag instanceof Map) {
      for (const [term, counts] of bag) {
        const id = this.append(term, slot), tfs = this.postTf[id]!, at = (this.postLen[id]! - 1) * nf;
        for (let f = 0; f < nf; f++) {
          const tf = typeof counts === "number" ? (f === 0 ? counts : 0) : (counts[f] ?? 0);
          tfs[at + f] = Math.min(65535, tf);
          lens[f] += tf;
        }
      }
    } else {
      const { terms, tfs: given } = bag, bnf = given.length / Math.max(1, terms.length);
      for (let i = 0; i < terms.length; i++) {
        const id = this.append(terms[i]!, slot), tfs = this.postTf[id]!, at = (this.postLen[id]! - 1) * nf;
        for (let f = 0; f < nf; f++) {
          const tf = f < bnf ? given[i * bnf + f]! : 0;
          tfs[at + f] = tf;
          lens[f] += tf;
        }
      }
    }
    for (let f = 0; f < nf; f++) {
      this.docLen[slot * nf + f] = lens[f]!;
      this.totalLen[f] += lens[f]!;
    }
    this.liveDocs++;
    this.changes++;
  }

  // Appends `slot` to the postings of `term` (its frequencies are written by the caller); returns the term id.
  private append(term: string, slot: number): number {
    const nf = this.nf;
    let id = this.termIds.get(term);
    if (id === undefined) {
      id = this.postSlots.length;
      this.termIds.set(term, id);
      this.termNames.push(term);
      this.postSlots.push(new Int32Array(4));
      this.postTf.push(new Uint16Array(4 * nf));
      this.postLen.push(0);
      this.postSorted.push(true);
    }
    const n = this.postLen[id]!;
    // A reused or re-added slot below the last one: top() sorts the postings again before bisecting.
    if (n > 0 && this.postSlots[id]![n - 1]! > slot) this.postSorted[id] = false;
    if (n === this.postSlots[id]!.length) {
      const s = new Int32Array(n * 2);
      s.set(this.postSlots[id]!);
      this.postSlots[id] = s;
      const f = new Uint16Array(n * 2 * nf);
      f.set(this.postTf[id]!);
      this.postTf[id] = f;
    }
    this.postSlots[id]![n] = slot;
    this.postLen[id] = n + 1;
    return id;
  }

  /** Removes the document at `slot`; `bag` must be the bag it was added with. */
  remove(slot: number, bag: TermCounts): void {
    const nf = this.nf;
    for (const term of bag.keys()) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const slots = this.postSlots[id]!, tfs = this.postTf[id]!;
      const n = this.postLen[id]!;
      const at = slots.subarray(0, n).lastIndexOf(slot);
      if (at < 0) continue;
      slots.copyWithin(at, at + 1, n);
      tfs.copyWithin(at * nf, (at + 1) * nf, n * nf);
      this.postLen[id] = n - 1;
    }
    for (let f = 0; f < nf; f++) {
      this.totalLen[f] -= this.docLen[slot * nf + f]!;
      this.docLen[slot * nf + f] = 0;
    }
    this.liveDocs--;
    this.changes++;
  }

  /**
   * Takes the document at `slot` out of scoring and the collection statistics at once, without
   * its bag (another process changed it, retention dropped it): {@link score} never returns it
   * again. Its postings stay (so term document frequencies count it) until {@link compact}
   * drops them; only then may the slot hold a new document.
   */
  retire(slot: number): void {
    const nf = this.nf;
    if (slot >= this.seen.length || this.retired[slot] === 1) return;
    this.retired[slot] = 1;
    this.retiredCount++;
    // A slot marked 2 in `seen` is skipped by score() like one its prefilter rejected; score()
    // resets only the slots it marked itself, so the mark stays until compact().
    this.seen[slot] = 2;
    for (let f = 0; f < nf; f++) {
      this.totalLen[f] -= this.docLen[slot * nf + f]!;
      this.docLen[slot * nf + f] = 0;
    }
    this.liveDocs--;
    this.changes++;
  }

  /** Documents retired and not yet compacted. */
  get retiredDocs(): number {
    return this.retiredCount;
  }

  /**
   * Drops the postings of every retired document (one pass over all postings) and frees their
   * slots for {@link add}.
   * @returns the slots freed
   */
  compact(): number[] {
    const freed: number[] = [];
    if (this.retiredCount === 0) return freed;
    const nf = this.nf, dead = this.retired;
    for (let id = 0; id < this.postSlots.length; id++) {
      const slots = this.postSlots[id]!, tfs = this.postTf[id]!;
      const n = this.postLen[id]!;
      let w = 0;
      for (let r = 0; r < n; r++) {
        const s = slots[r]!;
        if (dead[s] === 1) continue;
        if (w !== r) {
          slots[w] = s;
          tfs.copyWithin(w * nf, r * nf, (r + 1) * nf);
        }
        w++;
      }
      this.postLen[id] = w;
    }
    for (let s = 0; s < dead.length; s++) {
      if (dead[s] !== 1) continue;
      dead[s] = 0;
      this.seen[s] = 0;
      freed.push(s);
    }
    this.retiredCount = 0;
    this.changes++;
    return freed;
  }

  /**
   * The slots whose postings hold a term (a view, valid until the index next changes; may include
   * retired slots until compaction). Empty when the term is unknown.
   */
  postings(term: string): Int32Array {
    const id = this.termIds.get(term);
    return id === undefined ? new Int32Array(0) : this.postSlots[id]!.subarray(0, this.postLen[id]!);
  }

  /** The id of a term (-1 when never indexed); ids are stable for the index's lifetime. */
  termId(term: string): number {
    return this.termIds.get(term) ?? -1;
  }

  /** The term of an id from {@link termId}. */
  termName(id: number): string {
    return this.termNames[id]!;
  }

  /** Document frequency of a term id (its postings, retired documents included until compaction). */
  dfOf(id: number): number {
    return this.postLen[id] ?? 0;
  }

  /**
   * Exact BM25F scores of the given documents only (each term's postings bisected per document):
   * a re-ranking of a candidate list costs candidates x terms x log(postings), not a pass over
   * the postings of every term. Retired slots score 0.
   */
  scoreSlots(query: Map<string, number>, slots: ArrayLike<number>): Float32Array {
    const out = new Float32Array(slots.length);
    const norm = this.lengthNorms();
    for (const [term, weight] of query) {
      const id = this.termIds.get(term);
      const n = id === undefined ? 0 : this.postLen[id]!;
      if (n === 0 || weight === 0) continue;
      if (!this.postSorted[id!]) this.sortPostings(id!);
      const idf = Math.log(1 + (this.liveDocs - n + 0.5) / (n + 0.5)) * weight;
      const posted = this.postSlots[id!]!;
      for (let r = 0; r < slots.length; r++) {
        const s = slots[r]!;
        if (this.retired[s] === 1) continue;
        const p = lowerBound(posted, n, s);
        if (p < n && posted[p] === s) out[r]! += this.termScore(id!, p, s, idf, norm);
      }
    }
    return out;
  }

  /** Document frequency of a term (0 when unknown). */
  df(term: string): number {
    const id = this.termIds.get(term);
    return id === undefined ? 0 : this.postLen[id]!;
  }

  /** Inverse document frequency (BM25+ style, never negative). */
  idf(term: string): number {
    return this.idfOf(this.termId(term));
  }

  /** {@link idf} of a term id from {@link termId} (-1, an unknown term: df 0). */
  idfOf(id: number): number {
    const df = this.dfOf(id);
    return Math.log(1 + (this.liveDocs - df + 0.5) / (df + 0.5));
  }

  /**
   * Scores every document containing at least one query term.
   * @param query term -> weight (query term frequency or a trend weight)
   * @param allow optional prefilter; documents it rejects are skipped
   * @returns parallel arrays of slots and scores (unsorted)
   */
  score(query: Map<string, number>, allow?: (slot: number) => boolean): { slots: Int32Array; scores: Float32Array } {
    const nf = this.nf, k1 = this.k1;
    const norm = this.lengthNorms();
    const touched: number[] = [];
    const acc = this.acc, seen = this.seen;
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
        let tf = 0;
        for (let f = 0, o = i * nf, d = s * nf; f < nf; f++) {
          const x = tfs[o + f]!;
          if (x !== 0) tf += x * norm[d + f]!;
        }
        acc[s] += idf * (tf * (k1 + 1)) / (tf + k1);
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

  /**
   * The best `k` documents for a query, best first (ties: lower slot first): exactly the first
   * `k` of {@link score} sorted, without scoring every posting of common terms. Terms are taken
   * from the highest score bound (idf x (k1 + 1) x weight, which no document reaches) down; once the
   * k-th best score so far exceeds the bounds of the terms left, no document outside the
   * candidates can reach the top k, so those terms (typically the common, long ones) are only
   * looked up for the candidates that can still make it (MaxScore; Turtle & Flood, 1995).
   * @param query term -> weight
   */
  top(
    query: Map<string, number>,
    k: number,
    allow?: (slot: number) => boolean,
  ): { slots: Int32Array; scores: Float32Array } {
    const list: { id: number; idf: number; high: number; low: number }[] = [];
    for (const [term, weight] of query) {
      const id = this.termIds.get(term);
      const n = id === undefined ? 0 : this.postLen[id]!;
      if (n === 0) continue;
      // The saturated frequency is in [0, k1 + 1): a term adds between `low` and `high` (a
      // negative weight, or a negative idf while retired documents still count in df, subtracts).
      const idf = Math.log(1 + (this.liveDocs - n + 0.5) / (n + 0.5)) * weight;
      list.push({ id: id!, idf, high: Math.max(0, idf) * (this.k1 + 1), low: Math.min(0, idf) * (this.k1 + 1) });
    }
    if (k <= 0 || list.length === 0) return { slots: new Int32Array(0), scores: new Float32Array(0) };
    for (const { id } of list) if (!this.postSorted[id]) this.sortPostings(id);
    list.sort((a, b) => b.high - a.high || this.postLen[a.id]! - this.postLen[b.id]!);
    // From term i on: the most (high) and least (low) the terms left can add, and their postings.
    const m = list.length;
    const high = new Float64Array(m + 1), low = new Float64Array(m + 1), postings = new Float64Array(m + 1);
    for (let i = m - 1; i >= 0; i--) {
      high[i] = high[i + 1]! + list[i]!.high;
      low[i] = low[i + 1]! + list[i]!.low;
      postings[i] = postings[i + 1]! + this.postLen[list[i]!.id]!;
    }
    const norm = this.lengthNorms();
    const acc = this.acc, seen = this.seen, nf = this.nf, k1 = this.k1, k1p = k1 + 1;
    const touched = this.touchedBuf;
    let nt = 0, i = 0, maxAcc = 0, floor = -Infinity;
    for (; i < m; i++) {
      // `floor`: what the k-th best final score is at least. Worth a selection pass only when the
      // terms left are long and cannot lift a newcomer past the best score so far.
      if (i > 0 && postings[i]! > nt && high[i]! < maxAcc + low[i]!) {
        floor = this.kthBest(touched, nt, k) + low[i]!;
        if (high[i]! < floor) break;
      }
      // The hot loop (every posting of the terms taken in full), with the field loop inlined.
      const { id, idf } = list[i]!;
      const n = this.postLen[id]!, slots = this.postSlots[id]!, tfs = this.postTf[id]!;
      for (let p = 0; p < n; p++) {
        const s = slots[p]!, state = seen[s];
        if (state !== 1) {
          if (state === 2) continue;
          touched[nt++] = s;
          if (allow && !allow(s)) {
            seen[s] = 2;
            continue;
          }
          seen[s] = 1;
        }
        let tf = 0;
        for (let f = 0, o = p * nf, d = s * nf; f < nf; f++) {
          const x = tfs[o + f]!;
          if (x !== 0) tf += x * norm[d + f]!;
        }
        const x = acc[s]! + idf * (tf * k1p) / (tf + k1);
        acc[s] = x;
        if (x > maxAcc) maxAcc = x;
      }
    }
    // The terms left are looked up for the candidates that can still reach the k-th best score.
    let alive = touched, na = nt;
    for (let first = true; i < m; i++, first = false) {
      if (!first) floor = this.kthBest(alive, na, k) + low[i]!;
      const next = this.aliveBuf;
      let w = 0;
      for (let r = 0; r < na; r++) {
        const s = alive[r]!;
        if (seen[s] === 1 && acc[s]! + high[i]! >= floor) next[w++] = s;
      }
      alive = next;
      na = w;
      const { id, idf } = list[i]!;
      const n = this.postLen[id]!, slots = this.postSlots[id]!;
      if (na * 20 < n) {
        for (let r = 0; r < na; r++) {
          const s = alive[r]!, p = lowerBound(slots, n, s);
          if (p < n && slots[p] === s) acc[s] += this.termScore(id, p, s, idf, norm);
        }
      } else {
        for (let r = 0; r < na; r++) seen[alive[r]!] = 3;
        for (let p = 0; p < n; p++) {
          const s = slots[p]!;
          if (seen[s] === 3) acc[s] += this.termScore(id, p, s, idf, norm);
        }
        for (let r = 0; r < na; r++) seen[alive[r]!] = 1;
      }
    }
    const best = new TopK(k);
    for (let r = 0; r < na; r++) {
      const s = alive[r]!;
      if (seen[s] === 1) best.push(s, acc[s]!);
    }
    for (let r = 0; r < nt; r++) {
      const s = touched[r]!;
      acc[s] = 0;
      seen[s] = 0;
    }
    const out = best.drain();
    return { slots: Int32Array.from(out, (e) => e.id), scores: Float32Array.from(out, (e) => e.score) };
  }

  // Puts a term's postings back in slot order (a re-added slot went to the end), so lookups can
  // bisect them; once per such change, at the next query that needs it.
  private sortPostings(id: number): void {
    const n = this.postLen[id]!, nf = this.nf;
    const slots = this.postSlots[id]!, tfs = this.postTf[id]!;
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => slots[a]! - slots[b]!);
    const s2 = new Int32Array(slots.length), t2 = new Uint16Array(tfs.length);
    order.forEach((from, to) => {
      s2[to] = slots[from]!;
      for (let f = 0; f < nf; f++) t2[to * nf + f] = tfs[from * nf + f]!;
    });
    this.postSlots[id] = s2;
    this.postTf[id] = t2;
    this.postSorted[id] = true;
  }

  // The k-th best accumulated score among the live candidates (-Infinity with fewer than k).
  private kthBest(slots: Int32Array, count: number, k: number): number {
    if (count < k) return -Infinity;
    const best = new TopK(k), acc = this.acc, seen = this.seen;
    let floor = -Infinity;
    for (let r = 0; r < count; r++) {
      const s = slots[r]!;
      if (seen[s] === 1 && acc[s]! > floor) {
        best.push(s, acc[s]!);
        floor = best.floor;
      }
    }
    return floor;
  }

  // One term's BM25F contribution to the document at posting p of term `id`.
  private termScore(id: number, p: number, s: number, idf: number, norm: Float32Array): number {
    const nf = this.nf, tfs = this.postTf[id]!;
    let tf = 0;
    for (let f = 0, o = p * nf, d = s * nf; f < nf; f++) {
      const x = tfs[o + f]!;
      if (x !== 0) tf += x * norm[d + f]!;
    }
    return idf * (tf * (this.k1 + 1)) / (tf + this.k1);
  }

  // One multiply per posting and field at query time instead of a division (long postings).
  private lengthNorms(): Float32Array {
    if (this.normAt === this.changes && this.norm.length === this.docLen.length) return this.norm;
    const nf = this.nf, docLen = this.docLen;
    if (this.norm.length !== docLen.length) this.norm = new Float32Array(docLen.length);
    const norm = this.norm;
    for (let f = 0; f < nf; f++) {
      const { weight, b } = this.fields[f]!;
      const avg = this.liveDocs > 0 && this.totalLen[f]! > 0 ? this.totalLen[f]! / this.liveDocs : 1;
      const c0 = 1 - b, c1 = b / avg;
      for (let i = f; i < docLen.length; i += nf) norm[i] = weight / (c0 + c1 * docLen[i]!);
    }
    this.normAt = this.changes;
    return norm;
  }

  private ensure(n: number): void {
    if (n <= this.acc.length) return;
    let cap = this.acc.length;
    while (cap < n) cap *= 2;
    const grow = <T extends Float32Array | Uint8Array>(a: T, size: number, make: (n: number) => T): T => {
      const x = make(size);
      x.set(a);
      return x;
    };
    this.docLen = grow(this.docLen, cap * this.nf, (c) => new Float32Array(c));
    this.acc = grow(this.acc, cap, (c) => new Float32Array(c));
    this.seen = grow(this.seen, cap, (c) => new Uint8Array(c));
    this.touchedBuf = new Int32Array(cap);
    this.aliveBuf = new Int32Array(cap);
    this.retired = grow(this.retired, cap, (c) => new Uint8Array(c));
  }
}

/** The first position in `slots[0, n)` (ascending) holding a value >= `s`. */
function lowerBound(slots: Int32Array, n: number, s: number): number {
  let lo = 0, hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (slots[mid]! < s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
