import porter2 from "wink-porter2-stemmer";

/**
 * English stemming for index and query terms: the Porter2 ("English") stemmer of the Snowball
 * project, from `wink-porter2-stemmer`. Measured against the earlier hand-written light stemmer
 * with `bench/relevance_cv.ts` (docs/relevance.md): better on CISI and the tiny fixture.
 * Words holding digits are kept as they are ("covid19", "2026").
 */
export function stem(word: string): string {
  if (/\d/.test(word)) return word;
  return porter2(word.replaceAll("’", "'"));
}
