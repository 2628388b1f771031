/**
 * Text helpers of the extractive provider: sentence splitting and the word normalisation used to
 * match a query against sentences. Deterministic and locale-independent.
 */

import { isQuestionStopword } from "../text/mod.ts";

export { splitSentences } from "../text/mod.ts";

/** Whether `word` (lowercase) is a function word ignored when matching. */
export function isStopword(word: string): boolean {
  return isQuestionStopword(word);
}

/**
 * A light suffix stemmer: enough that "elections" meets "election" and "rising" meets "rise",
 * without a dictionary. Both sides of a match go through it, so over-stemming is harmless.
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let w = word;
  if (w.endsWith("'s")) w = w.slice(0, -2);
  if (w.endsWith("ies") && w.length > 4) w = w.slice(0, -3) + "y";
  else if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("s") && !w.endsWith("ss") && !w.endsWith("us") && !w.endsWith("is")) w = w.slice(0, -1);
  if (w.endsWith("ing") && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith("ed") && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith("ly") && w.length > 5) w = w.slice(0, -2);
  // "rising" -> "ris", "rise" -> "rise": drop a final e so both land on "ris".
  if (w.endsWith("e") && w.length > 3) w = w.slice(0, -1);
  // "planned" -> "plann": undouble a final consonant.
  if (w.length > 3 && w.at(-1) === w.at(-2) && !/[aeiouls]/.test(w.at(-1)!)) w = w.slice(0, -1);
  return w;
}

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;

/** Lowercase words of `text` with diacritics folded, in order (stopwords kept). */
export function words(text: string): string[] {
  const folded = text.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase().replaceAll("’", "'");
  return folded.match(WORD) ?? [];
}

/** The matching terms of `text`: stemmed content words, in order, with their word positions. */
export function terms(text: string): { term: string; pos: number }[] {
  const out: { term: string; pos: number }[] = [];
  const ws = words(text);
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i]!;
    if (isStopword(w) || (w.length < 2 && !/\d/.test(w))) continue;
    out.push({ term: stem(w), pos: i });
  }
  return out;
}

// Abbreviations whose full stop does not end a sentence.
