/**
 * Score regularization by the cluster hypothesis (Diaz, "Regularizing ad hoc retrieval scores",
 * CIKM 2005): documents that are alike tend to be relevant to the same requests, so a candidate's
 * score is smoothed toward the scores of its nearest neighbours among the candidates. A document
 * the ranking placed high whose neighbours all scored low was likely placed there by an
 * accident of wording; one among well-scored neighbours is pulled up. One step of Diaz's
 * smoothing, with neighbours by the cosine of the index's document vectors (docs/relevance.md).
 */

/** Settings of score regularization (off when `top` < 2, `neighbours` is 0 or `weight` is 0). */
export interface ScoreRegularization {
  /** How many of the best fused candidates are re-scored (and are each other's neighbours). */
  top: number;
  /** How many nearest neighbours a candidate's score is smoothed toward. */
  neighbours: number;
  /** Weight of the neighbours' mean score, in [0, 1]: `(1 - weight) x own + weight x mean`. */
  weight: number;
  /**
   * Share of the term-space cosine in the neighbours' similarity, in [0, 1]:
   * `(1 - termShare) x vector cosine + termShare x term cosine` (0 or absent: vectors alone; needs
   * an index that keeps each article's terms, see `DataModelIndex`).
   */
  termShare?: number;
}

/** Whether a setting changes any ranking. */
export function regularizationOn(r: ScoreRegularization | undefined): r is ScoreRegularization {
  return r !== undefined && r.top >= 2 && r.neighbours > 0 && r.weight > 0;
}

/**
 * The candidates (best first) with the first `top` re-scored as `(1 - weight) x own score +
 * weight x the mean score of its `neighbours` most similar among those first `top`, and put back
 * in order of the new scores (ties keep their earlier order); the candidates after them follow
 * unchanged. A candidate without a vector (`hasVector(i)` false) keeps its score and is no one's
 * neighbour: its similarities say nothing.
 * @param similarity `m x m` similarities of the first `m = min(top, candidates.length)`
 *   candidates, row-major (see `DataModelIndex.similarities`)
 */
export function regularizeScores<T extends { score: number }>(
  candidates: readonly T[],
  similarity: Float32Array,
  { top, neighbours, weight }: ScoreRegularization,
  hasVector: (i: number) => boolean = () => true,
): T[] {
  const m = Math.min(top, candidates.length);
  if (m < 2 || neighbours <= 0 || weight <= 0) return [...candidates];
  const usable: number[] = [];
  for (let i = 0; i < m; i++) if (hasVector(i)) usable.push(i);
  const scores = candidates.slice(0, m).map((c) => c.score);
  // Fewer than two candidates with a vector: no one has a neighbour (k 0), every score stays.
  const k = Math.max(0, Math.min(neighbours, usable.length - 1));
  // Per candidate, its k most similar others by insertion into a short sorted list (k is small:
  // no sort of every row); ties go to the better placed candidate, met first.
  const nearSim = new Float64Array(k), nearAt = new Int32Array(k);
  for (const i of k > 0 ? usable : []) {
    let n = 0;
    for (const j of usable) {
      if (j === i) continue;
      const s = similarity[i * m + j]!;
      if (n === k && s <= nearSim[k - 1]!) continue;
      let p = n < k ? n++ : k - 1;
      while (p > 0 && nearSim[p - 1]! < s) {
        nearSim[p] = nearSim[p - 1]!;
        nearAt[p] = nearAt[p - 1]!;
        p--;
      }
      nearSim[p] = s;
      nearAt[p] = j;
    }
    let sum = 0;
    for (let r = 0; r < k; r++) sum += candidates[nearAt[r]!]!.score;
    scores[i] = (1 - weight) * candidates[i]!.score + weight * (sum / k);
  }
  const order = Array.from({ length: m }, (_, i) => i).sort((a, b) => scores[b]! - scores[a]! || a - b);
  return [...order.map((i) => ({ ...candidates[i]!, score: scores[i]! })), ...candidates.slice(m)];
}
