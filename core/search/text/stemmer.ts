import porter2 from "wink-porter2-stemmer";

const MEMO_LIMIT = 200_000;
const memo = new Map<string, string>();

/**
 * English stemming for index and query terms: the Porter2 ("English") stemmer of the Snowball
 * project, from `wink-porter2-stemmer`. Measured against the earlier hand-written light stemmer
 * with `bench/relevance_cv.ts` (docs/relevance.md). Words holding digits are kept as they are
 * ("covid19", "2026").
 */
export function stem(word: string): string {
  const known = memo.get(word);
  if (known !== undefined) return known;
  const stemmed: string = /\d/.test(word) ? word : porter2(word.replaceAll("’", "'"));
  // Porter2 runs a dozen regular expressions per word (~10 µs); text repeats a small vocabulary,
  // so stems are remembered. Bounded: a flood of distinct tokens only costs a fresh start.
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(word, stemmed);
  return stemmed;
}
