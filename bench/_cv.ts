/**
 * Cross-validation over a collection's queries, shared by the ranking benches (bench/prf_cv.ts,
 * bench/cluster_cv.ts): each candidate setting has one score per query; a fold's pick is the best
 * mean on the other folds, scored on the fold it did not see.
 */
import { prng } from "../fixtures/prng.ts";

/** Folds of every cross-validation here. */
export const FOLDS = 5;

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** 5-fold CV; `foldOf(i)` is query i's fold (by position mod 5 unless given). */
export function crossValidate<T>(
  cands: { key: T; scores: number[] }[],
  foldOf: (i: number) => number = (i) => i % FOLDS,
): { cv: number; perFold: number[]; picks: T[] } {
  const n = cands[0]!.scores.length, held: number[] = [], picks: T[] = [], perFold: number[] = [];
  for (let f = 0; f < FOLDS; f++) {
    let best = cands[0]!, bestMean = -Infinity;
    for (const c of cands) {
      const m = mean(c.scores.filter((_, i) => foldOf(i) !== f));
      if (m > bestMean) best = c, bestMean = m;
    }
    picks.push(best.key);
    const fold: number[] = [];
    for (let i = 0; i < n; i++) if (foldOf(i) === f) fold.push(best.scores[i]!), held.push(best.scores[i]!);
    perFold.push(mean(fold));
  }
  return { cv: mean(held), perFold, picks };
}

/**
 * The held-out gain over `off` under many random fold assignments (seeded): one split's estimate
 * moves with which queries share a fold; the spread over splits shows how much.
 */
export function repeatedGain<T>(cands: { key: T; scores: number[] }[], off: number[], repeats = 50) {
  const rand = prng(27), n = off.length, gains: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const order = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const fold = new Int32Array(n);
    order.forEach((q, pos) => fold[q] = pos % FOLDS);
    gains.push(crossValidate(cands, (i) => fold[i]!).cv - mean(off));
  }
  gains.sort((a, b) => a - b);
  return {
    mean: mean(gains),
    low: gains[Math.floor(repeats * 0.1)]!,
    high: gains[Math.floor(repeats * 0.9)]!,
    positive: gains.filter((g) => g > 0).length / repeats,
  };
}
