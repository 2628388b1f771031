/**
 * Sentence splitting shared by ingest summaries, URL-page summaries and extractive answers.
 * Deterministic and locale-independent.
 */

// Words that end with a period without ending a sentence ("Dr. Smith", "U.S. officials").
const ABBREVIATIONS = new Set([
  "mr",
  "mrs",
  "ms",
  "dr",
  "prof",
  "sr",
  "jr",
  "st",
  "gen",
  "gov",
  "sen",
  "rep",
  "col",
  "lt",
  "sgt",
  "capt",
  "inc",
  "ltd",
  "co",
  "corp",
  "vs",
  "etc",
  "no",
  "jan",
  "feb",
  "mar",
  "apr",
  "jun",
  "jul",
  "aug",
  "sep",
  "sept",
  "oct",
  "nov",
  "dec",
  "e.g",
  "i.e",
  "u.s",
  "u.k",
  "a.m",
  "p.m",
  "fig",
  "approx",
  "est",
  "dept",
  "univ",
  "mt",
  "ft",
]);

/**
 * Splits prose into sentences. Paragraph breaks always end a sentence; `.`, `!` and `?` end one
 * when followed by space and a capital, digit or quote, unless the word before is a known
 * abbreviation or a single initial ("J. Smith"). Whitespace inside a sentence is collapsed.
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const para of text.split(/\n\s*\n|\r\n\s*\r\n|\n(?=\s*[-*•]\s)/)) {
    const flat = para.replace(/\s+/g, " ").trim();
    if (!flat) continue;
    let start = 0;
    // Linear on hostile text: a match starts only at the first mark of a run (a start inside a
    // run of 50,000 "!" rescanned the rest of it), and the word before is read backwards.
    const re = /(?<![.!?])[.!?]+["'”’)\]]*(?=\s+["'“‘(\[]?[\p{Lu}\p{N}])/gu;
    for (const m of flat.matchAll(re)) {
      const end = m.index! + m[0].length;
      const lastWord = wordBefore(flat, start, m.index!).toLowerCase();
      if (m[0].startsWith(".") && (ABBREVIATIONS.has(lastWord) || /^\p{L}$/u.test(lastWord))) continue;
      const sentence = flat.slice(start, end).trim();
      if (sentence) out.push(sentence);
      start = end;
    }
    const rest = flat.slice(start).trim();
    if (rest) out.push(rest);
  }
  return out;
}

const WORD_CHAR = /^[\p{L}.]$/u;

/**
 * The run of letters and periods that ends at `at` and starts no earlier than `from`. Read
 * backwards so its cost is the word's length; a `$`-anchored pattern retried every start.
 */
function wordBefore(text: string, from: number, at: number): string {
  let i = at;
  while (i > from) {
    // A letter outside the BMP is a surrogate pair: step over both halves.
    const pair = i - 2 >= from && isLowSurrogate(text.charCodeAt(i - 1)) && isHighSurrogate(text.charCodeAt(i - 2));
    const width = pair ? 2 : 1;
    if (!WORD_CHAR.test(text.slice(i - width, i))) break;
    i -= width;
  }
  return text.slice(i, at);
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
