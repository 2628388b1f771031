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
    const re = /[.!?]+["'”’)\]]*(?=\s+["'“‘(\[]?[\p{Lu}\p{N}])/gu;
    for (const m of flat.matchAll(re)) {
      const end = m.index! + m[0].length;
      const before = flat.slice(start, m.index!);
      const lastWord = (before.match(/([\p{L}.]+)$/u)?.[1] ?? "").toLowerCase();
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
