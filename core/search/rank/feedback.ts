/**
 * Term-based pseudo-relevance feedback (RM3; Abdul-Jaleel et al. 2004, as in Anserini): the
 * query's best BM25F matches are taken as relevant, the terms they use most (each document's term
 * distribution weighted by its retrieval score) become expansion terms, and the expanded query is
 * `originalWeight x original + (1 - originalWeight) x expansion`, both sides normalised to sum 1.
 *
 * The documents' terms come from a {@link ForwardTerms} store kept beside the postings: per slot,
 * its `perDoc` most frequent terms (term ids and field-weighted frequencies) and its length, so
 * expansion reads a few fixed-size rows instead of re-tokenising articles whose bodies live in KV.
 */
import type { Bm25Field, Bm25Index, PackedBag, TermCounts } from "../index/bm25.ts";

/** Settings of term feedback (off when `docs` or `terms` is 0 or `originalWeight` is 1). */
export interface TermFeedback {
  /** How many of the best first-pass matches are taken as relevant. */
  docs: number;
  /** How many expansion terms are kept. */
  terms: number;
  /** Weight of the original query in the interpolation, in [0, 1]. */
  originalWeight: number;
  /**
   * 0: the expanded query runs a second full BM25F pass. N > 0: the expanded query only re-scores
   * the first pass's best N (at least the candidates the ranking needs), which costs candidates x
   * terms bisections instead of the postings of every expansion term.
   */
  rerank: number;
}

/** Term feedback switched off. */
export const NO_TERM_FEEDBACK: TermFeedback = { docs: 0, terms: 0, originalWeight: 1, rerank: 0 };

/** Whether a setting expands queries at all. */
export function termFeedbackOn(f: TermFeedback | undefined): f is TermFeedback {
  return f !== undefined && f.docs > 0 && f.terms > 0 && f.originalWeight < 1;
}

/**
 * Per slot, the document's `perDoc` most frequent terms as ids of a {@link Bm25Index} with their
 * field-weighted frequencies, and its whole field-weighted length. Fixed-size rows: `perDoc x 6`
 * bytes plus 4 per slot.
 */
export class ForwardTerms {
  readonly perDoc: number;
  private ids: Int32Array;
  private tfs: Uint16Array;
  private lens: Float32Array;

  constructor(perDoc: number, capacity = 1024) {
    this.perDoc = perDoc;
    this.ids = new Int32Array(capacity * perDoc).fill(-1);
    this.tfs = new Uint16Array(capacity * perDoc);
    this.lens = new Float32Array(capacity);
  }

  /** Records the terms of the document at `slot` (after `bm25` indexed it, so its terms have ids). */
  set(slot: number, bag: TermCounts | PackedBag, fields: readonly Bm25Field[], bm25: Bm25Index): void {
    this.ensure(slot + 1);
    // The row is a min-heap on frequency while the bag is read: the most frequent terms, which
    // carry almost all of a document's feedback weight, stay (no allocation per article).
    const k = this.perDoc, at = slot * k, ids = this.ids, tfs = this.tfs;
    let size = 0, len = 0;
    // Heap order: lower frequency first, then (a tie) the rarer term first, so that among equally
    // frequent terms the ones more documents share, which feedback sets can agree on, stay.
    const below = (tfA: number, idA: number, tfB: number, idB: number) =>
      tfA < tfB || (tfA === tfB && bm25.dfOf(idA) < bm25.dfOf(idB));
    const offer = (term: string, weighted: number) => {
      if (weighted <= 0) return;
      len += weighted;
      const id = bm25.termId(term), tf = Math.min(65535, Math.round(weighted));
      let i: number;
      if (size < k) {
        for (i = size++; i > 0;) {
          const p = (i - 1) >> 1;
          if (!below(tf, id, tfs[at + p]!, ids[at + p]!)) break;
          ids[at + i] = ids[at + p]!;
          tfs[at + i] = tfs[at + p]!;
          i = p;
        }
      } else if (below(tfs[at]!, ids[at]!, tf, id)) {
        for (i = 0;;) {
          let c = 2 * i + 1;
          if (c >= k) break;
          if (c + 1 < k && below(tfs[at + c + 1]!, ids[at + c + 1]!, tfs[at + c]!, ids[at + c]!)) c++;
          if (!below(tfs[at + c]!, ids[at + c]!, tf, id)) break;
          ids[at + i] = ids[at + c]!;
          tfs[at + i] = tfs[at + c]!;
          i = c;
        }
      } else return;
      ids[at + i] = id;
      tfs[at + i] = tf;
    };
    if (bag instanceof Map) {
      for (const [term, counts] of bag) {
        let tf = 0;
        if (typeof counts === "number") tf = counts * fields[0]!.weight;
        else for (let f = 0; f < fields.length; f++) tf += (counts[f] ?? 0) * fields[f]!.weight;
        offer(term, tf);
      }
    } else {
      const nf = bag.tfs.length / Math.max(1, bag.terms.length), used = Math.min(nf, fields.length);
      for (let i = 0; i < bag.terms.length; i++) {
        let tf = 0;
        for (let f = 0; f < used; f++) tf += bag.tfs[i * nf + f]! * fields[f]!.weight;
        offer(bag.terms[i]!, tf);
      }
    }
    ids.fill(-1, at + size, at + k);
    tfs.fill(0, at + size, at + k);
    this.lens[slot] = len;
  }

  /**
   * The stored terms of a slot: term ids (-1 past the last) and field-weighted frequencies, views
   * valid until the store next grows.
   */
  row(slot: number): { ids: Int32Array; tfs: Uint16Array } {
    const at = slot * this.perDoc;
    return { ids: this.ids.subarray(at, at + this.perDoc), tfs: this.tfs.subarray(at, at + this.perDoc) };
  }

  /**
   * Cosines between the stored terms of `slots`, row-major (`slots.length` squared): each row
   * weighted `(1 + ln tf) x idf` and normalised, the term-space similarity of two documents (what
   * Diaz's score regularization smooths over). A slot without stored terms has cosine 0 with all.
   */
  cosines(slots: readonly number[], idfOf: (id: number) => number): Float32Array {
    const m = slots.length, k = this.perDoc;
    // Each row's terms sorted by id with normalised weights: every pair is then one merge.
    const ids = new Int32Array(m * k), weights = new Float64Array(m * k), lens = new Int32Array(m);
    const order: number[] = [];
    for (let i = 0; i < m; i++) {
      const at = slots[i]! * k;
      order.length = 0;
      for (let j = at; j < at + k && this.ids[j]! >= 0; j++) order.push(j);
      order.sort((a, b) => this.ids[a]! - this.ids[b]!);
      let norm = 0;
      order.forEach((j, r) => {
        const w = (1 + Math.log(Math.max(1, this.tfs[j]!))) * idfOf(this.ids[j]!);
        ids[i * k + r] = this.ids[j]!;
        weights[i * k + r] = w;
        norm += w * w;
      });
      lens[i] = order.length;
      norm = Math.sqrt(norm);
      if (norm > 0) { for (let r = 0; r < order.length; r++) weights[i * k + r]! /= norm; }
    }
    const out = new Float32Array(m * m);
    for (let a = 0; a < m; a++) {
      if (lens[a] === 0) continue;
      out[a * m + a] = 1;
      for (let b = a + 1; b < m; b++) {
        let x = a * k, y = b * k, dot = 0;
        const xEnd = x + lens[a]!, yEnd = y + lens[b]!;
        while (x < xEnd && y < yEnd) {
          const d = ids[x]! - ids[y]!;
          if (d === 0) dot += weights[x++]! * weights[y++]!;
          else if (d < 0) x++;
          else y++;
        }
        out[a * m + b] = out[b * m + a] = dot;
      }
    }
    return out;
  }

  /** Forgets the terms of a slot (its document was removed). */
  clear(slot: number): void {
    if (slot >= this.lens.length) return;
    this.ids.fill(-1, slot * this.perDoc, (slot + 1) * this.perDoc);
    this.lens[slot] = 0;
  }

  /**
   * The expanded query: RM3 over the documents `slots` (best first) with their first-pass
   * `scores`. Returns `query` itself when nothing can be added.
   */
  expand(
    query: Map<string, number>,
    slots: ArrayLike<number>,
    scores: ArrayLike<number>,
    bm25: Bm25Index,
    { docs, terms, originalWeight }: TermFeedback,
  ): Map<string, number> {
    const n = Math.min(docs, slots.length);
    if (n === 0) return query;
    // P(t | F) ~ sum over feedback documents of P(t | d) x the document's retrieval score.
    const weight = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const s = slots[i]!, score = scores[i]!, len = this.lens[s]!;
      if (!(score > 0) || !(len > 0)) continue;
      for (let j = s * this.perDoc, end = j + this.perDoc; j < end; j++) {
        const id = this.ids[j]!;
        if (id < 0) break;
        // A term of one document only says nothing about the topic the feedback set shares.
        if (bm25.dfOf(id) < 2) continue;
        weight.set(id, (weight.get(id) ?? 0) + (this.tfs[j]! / len) * score);
      }
    }
    const best = [...weight].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, terms);
    const expTotal = best.reduce((sum, [, w]) => sum + w, 0);
    if (expTotal <= 0) return query;
    let qTotal = 0;
    for (const w of query.values()) qTotal += w;
    const out = new Map<string, number>();
    if (qTotal > 0) { for (const [t, w] of query) out.set(t, (originalWeight * w) / qTotal); }
    for (const [id, w] of best) {
      const t = bm25.termName(id);
      out.set(t, (out.get(t) ?? 0) + ((1 - originalWeight) * w) / expTotal);
    }
    return out;
  }

  private ensure(n: number): void {
    if (n <= this.lens.length) return;
    let cap = this.lens.length;
    while (cap < n) cap *= 2;
    const ids = new Int32Array(cap * this.perDoc).fill(-1);
    ids.set(this.ids);
    this.ids = ids;
    const tfs = new Uint16Array(cap * this.perDoc);
    tfs.set(this.tfs);
    this.tfs = tfs;
    const lens = new Float32Array(cap);
    lens.set(this.lens);
    this.lens = lens;
  }
}
