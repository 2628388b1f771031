/**
 * The hand-written light stemmer the service used before Porter2, kept only so
 * `bench/relevance_cv.ts` can measure the two against each other.
 *
 * A light English stemmer: folds plurals, possessives and the common verb and adverb endings so
 * "markets", "market's" and "marketing" meet "market" without the over-stemming of Porter
 * ("university" and "universe" stay apart). Deterministic and idempotent: stem(stem(w)) === stem(w).
 */
const VOWEL = /[aeiouy]/;

function hasVowel(s: string): boolean {
  return VOWEL.test(s);
}

// "hopping" -> "hopp" -> "hop"; "falling" keeps "fall" (ll, ss, zz are real endings).
function undouble(s: string): string {
  const n = s.length;
  if (n >= 3 && s[n - 1] === s[n - 2] && !"lsz".includes(s[n - 1]!) && !VOWEL.test(s[n - 1]!)) {
    return s.slice(0, -1);
  }
  return s;
}

/** Stems one lowercase word. Words of 3 letters or fewer, and anything with digits, are kept as is. */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith("'s") || w.endsWith("’s")) w = w.slice(0, -2);
  else if (w.endsWith("'") || w.endsWith("’")) w = w.slice(0, -1);
  if (w.length <= 3) return w;

  // Plurals.
  if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("ies") && w.length > 4) w = w.slice(0, -3) + "y";
  else if (w.endsWith("ss") || w.endsWith("us") || w.endsWith("is")) { /* class, virus, analysis */ }
  else if (w.endsWith("s") && hasVowel(w.slice(0, -2))) w = w.slice(0, -1);

  // Verb and adverb endings, only when a real stem with a vowel is left.
  if (w.endsWith("ingly") && w.length > 7) w = w.slice(0, -5);
  else if (w.endsWith("edly") && w.length > 6) w = w.slice(0, -4);
  if (w.endsWith("ing") && w.length > 5 && hasVowel(w.slice(0, -3))) {
    w = undouble(w.slice(0, -3));
  } else if (w.endsWith("ied") && w.length > 4) {
    w = w.slice(0, -3) + "y";
  } else if (w.endsWith("eed")) {
    // agreed, freed: keep
  } else if (w.endsWith("ed") && w.length >= 4 && hasVowel(w.slice(0, -2))) {
    w = undouble(w.slice(0, -2));
  }
  if (w.endsWith("ly") && w.length > 5) w = w.slice(0, -2);
  // Trailing silent e: "rate"/"rating"/"rated" all end at "rat".
  if (w.endsWith("e") && w.length >= 4 && !w.endsWith("ee")) w = w.slice(0, -1);
  return w;
}
