import { splitSentences } from "../../text/mod.ts";
import { terms } from "./tokenizer.ts";

/** Splits text into sentences (see core/text/sentences.ts). */
export function sentences(text: string): string[] {
  return splitSentences(text).filter((s) => s.length >= 2);
}

/**
 * An extractive summary: the sentences that best cover the text's frequent terms and the title,
 * with a bonus for coming early (news puts the point first), kept in their original order.
 * @param maxChars upper bound of the summary length
 */
export function summarize(title: string, body: string, { maxSentences = 3, maxChars = 600 } = {}): string {
  // A sentence repeated in the body (boilerplate, pull quotes) is offered once.
  const seen = new Set<string>();
  const list = sentences(body.slice(0, 20_000)).filter((x) => {
    const key = x.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  }).slice(0, 200);
  if (list.length === 0) return "";
  if (list.length <= maxSentences) return clip(list.join(" "), maxChars);
  const freq = new Map<string, number>();
  const per = list.map((s) => terms(s));
  for (const ts of per) for (const t of new Set(ts)) freq.set(t, (freq.get(t) ?? 0) + 1);
  const titleTerms = new Set(terms(title));
  const scored = list.map((_, i) => {
    const ts = per[i]!;
    if (ts.length < 4) return { i, score: -1 }; // fragments, bylines, captions
    let score = 0;
    for (const t of new Set(ts)) score += Math.log(1 + (freq.get(t) ?? 0)) + (titleTerms.has(t) ? 1.5 : 0);
    score /= Math.sqrt(ts.length);
    score *= 1 + 0.6 / (1 + i); // position prior
    return { i, score };
  });
  const chosen = scored.sort((a, b) => b.score - a.score || a.i - b.i).slice(0, maxSentences).sort((a, b) => a.i - b.i);
  let out = "";
  for (const { i } of chosen) {
    const next = out ? `${out} ${list[i]}` : list[i]!;
    if (next.length > maxChars) break;
    out = next;
  }
  return out || clip(list[chosen[0]!.i]!, maxChars);
}

/** Cuts text at a word boundary to at most `max` characters, with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  // Whitespace is collapsed over a head of the text only, when that head already reaches `max`.
  const head = text.length > 4 * max + 64 ? text.slice(0, 4 * max + 64).replace(/\s+/g, " ").trimStart() : "";
  const t = head.length > max + 1 ? head : text.replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max - 1);
  const at = cut.lastIndexOf(" ");
  return `${(at > max * 0.6 ? cut.slice(0, at) : cut).replace(/[\s,;:.-]+$/, "")}…`;
}
