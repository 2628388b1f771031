import { DEFAULT_VECTOR_WEIGHT } from "./retrieval_mode.ts";

/** A candidate from one data model's index, with its raw (unnormalised) signals. */
export interface RawCandidate {
  bm25: number;
  cosine: number;
}

/**
 * Scores candidates drawn from several indexes on one common scale. Each index's own hybrid
 * score is min-max normalised within that index, so the best match of a small or unrelated data
 * model would score ~1 whatever its relevance; merging those scores lets it outrank better
 * matches elsewhere. Here the normalisation runs over the union instead: cosines share one
 * embedding space, and BM25 is scaled by the best BM25 among all candidates.
 * @returns the candidates with `score` in [0, 1], best first; zero scores dropped.
 */
export function fuseAcrossIndexes<T extends RawCandidate>(
  candidates: T[],
  alpha = DEFAULT_VECTOR_WEIGHT,
): (T & { score: number })[] {
  if (candidates.length === 0) return [];
  let cosMax = -Infinity, cosMin = Infinity, lexMax = 0;
  for (const c of candidates) {
    cosMax = Math.max(cosMax, c.cosine);
    cosMin = Math.min(cosMin, c.cosine);
    lexMax = Math.max(lexMax, c.bm25);
  }
  const hasVector = cosMax > 0;
  const cosFloor = Math.max(0, Math.min(cosMin, cosMax - 1e-6));
  const wVec = !hasVector ? 0 : lexMax === 0 ? 1 : alpha;
  const wLex = 1 - wVec;
  const out: (T & { score: number })[] = [];
  for (const c of candidates) {
    const vn = hasVector && cosMax > cosFloor
      ? Math.min(1, Math.max(0, (c.cosine - cosFloor) / (cosMax - cosFloor)))
      : 0;
    const ln = lexMax > 0 ? c.bm25 / lexMax : 0;
    const score = wVec * vn + wLex * ln;
    if (score > 0) out.push({ ...c, score });
  }
  return out.sort((a, b) => b.score - a.score);
}
