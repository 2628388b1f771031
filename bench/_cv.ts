/**
 * Cross-validation over a collection's queries, shared by the ranking benches (bench/prf_cv.ts,
 * bench/cluster_cv.ts): each candidate setting has one score per query; a fold's pick is the best
 * mean on the other folds, scored on the fold it did not see.
 */
import { prng } from "../fixtures/prng.ts";

/** Folds of every cross-validation here. */
export const FOLDS = 5;

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** An nDCG figure as the benches print it, and a gain with its sign. */
export const fmt = (x: number) => x.toFixed(4);
export const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(4)}`;

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

/**
 * How sure a mean gain is, from the per-query scores of two rankings over the same queries
 * (`after[i]` and `before[i]` are query i's): the mean gain; its 95 % interval by a paired bootstrap
 * (queries drawn with replacement, `resamples` times, seeded); the share of resampled means at or
 * above `target`; and the two-sided p-value of a paired sign-flip randomization test (each query's
 * gain kept or negated at random, `resamples` times), the chance of a gain this far from zero if the
 * two rankings were exchangeable.
 *
 * @example
 * const s = pairedGain(shipped.perQuery.map((q) => q.hybrid), before.perQuery.map((q) => q.hybrid), { target: 0.02 });
 * // s.mean 0.0178, s.low .. s.high its 95 % interval, s.atLeastTarget, s.p
 */
export function pairedGain(
  after: readonly number[],
  before: readonly number[],
  { target = 0, resamples = 10_000, seed = 30 }: { target?: number; resamples?: number; seed?: number } = {},
) {
  if (after.length !== before.length) throw new Error("pairedGain: the rankings scored different queries");
  const n = after.length, gains = after.map((a, i) => a - before[i]!);
  const observed = mean(gains);
  const rand = prng(seed), means = new Float64Array(resamples);
  let extreme = 0;
  for (let r = 0; r < resamples; r++) {
    let drawn = 0, flipped = 0;
    for (let i = 0; i < n; i++) {
      drawn += gains[Math.floor(rand() * n)]!;
      flipped += rand() < 0.5 ? -gains[i]! : gains[i]!;
    }
    means[r] = drawn / n;
    // A tolerance, so that a flip equal to the observed mean counts as extreme despite rounding.
    if (Math.abs(flipped / n) >= Math.abs(observed) - 1e-12) extreme++;
  }
  means.sort();
  return {
    n,
    mean: observed,
    low: means[Math.floor(resamples * 0.025)]!,
    high: means[Math.ceil(resamples * 0.975) - 1]!,
    atLeastTarget: means.filter((m) => m >= target - 1e-12).length / resamples,
    // The observed assignment is one of the possible ones: (extreme + 1) / (resamples + 1).
    p: (extreme + 1) / (resamples + 1),
  };
}
