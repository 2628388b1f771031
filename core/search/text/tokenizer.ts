import { stem } from "./stemmer.ts";
import { STOPWORDS } from "../../text/mod.ts";

// Letters or digits, allowing inner apostrophes (don't, o'neill) and inner dots/hyphens in
// numbers (3.5, covid-19 is split on the hyphen on purpose).
const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
const MARKS = /\p{M}+/gu;
const MAX_TOKEN = 40;
// Text that NFKD leaves as it is and that holds no combining marks: ASCII, the C1 controls, and
// the dashes and curly quotes of ordinary English prose. Most articles are, and skip normalising.
// deno-lint-ignore no-control-regex -- the range starts at U+0000 on purpose: every ASCII character counts
const PLAIN = /^[\x00-\x9f\u2013\u2014\u2018\u2019\u201c\u201d]*$/;

/** Lowercases, compatibility-normalises and strips diacritics ("Café" -> "cafe"). */
export function foldText(text: string): string {
  return PLAIN.test(text) ? text.toLowerCase() : text.normalize("NFKD").replace(MARKS, "").toLowerCase();
}

/**
 * Unicode-aware words of a text, lowercased, diacritics kept (word vectors know "café"),
 * stopwords dropped. Used to build sentence embeddings.
 */
export function words(text: string): string[] {
  const out: string[] = [];
  // match() hands over plain strings: no match object per word.
  for (let w of text.toLowerCase().normalize("NFC").match(WORD) ?? []) {
    if (w.includes("’")) w = w.replaceAll("’", "'");
    if (w.length > MAX_TOKEN || STOPWORDS.has(w)) continue;
    out.push(w);
  }
  return out;
}

/**
 * Index terms of a text for BM25: folded, tokenised, stopwords dropped, stemmed (Porter2).
 * @example terms("The markets rallied") // ["market", "ralli"]
 */
export function terms(text: string, stemmer: (word: string) => string = stem): string[] {
  const out: string[] = [];
  termsWithWords(text, (t) => out.push(t), stemmer);
  return out;
}

/** Like {@link terms}, also handing over the folded word each term came from (for display). */
export function termsWithWords(
  text: string,
  each: (term: string, word: string) => void,
  stemmer: (word: string) => string = stem,
): void {
  for (let w of foldText(text).match(WORD) ?? []) {
    if (w.includes("’")) w = w.replaceAll("’", "'");
    if (w.length > MAX_TOKEN || STOPWORDS.has(w)) continue;
    const s = stemmer(w);
    if (s.length > 1 || /\d/.test(s)) each(s, w);
  }
}
