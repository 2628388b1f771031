/**
 * Follow-up questions in a conversation: "what about the trains?" means nothing to retrieval on
 * its own. A short follow-up, or one that points back ("it", "they", "there"), is made
 * standalone by carrying over the content words of the reader's previous question that it does
 * not already hold: "What about the trains (storm flooding roads)?".
 */
import { isStopword, words } from "./text.ts";

/** One earlier turn of the conversation. */
export interface ConversationTurn {
  role: "user" | "assistant";
  content: string;
}

/** A follow-up of at most this many content words borrows context. */
const SHORT_FOLLOWUP_TERMS = 3;
/** Most words carried over from the previous question. */
const CARRIED_WORDS = 6;
const POINTING_BACK = new Set([
  "it",
  "its",
  "they",
  "them",
  "their",
  "this",
  "that",
  "these",
  "those",
  "he",
  "she",
  "him",
  "her",
  "his",
  "there",
  "then",
]);

/**
 * The query to retrieve and answer with: `query` itself, or, for a follow-up that needs it, the
 * query with the previous user question's content words added in parentheses.
 *
 * @param query the reader's new question (already trimmed and bounded)
 * @param history earlier turns, oldest first
 * @param maxChars longest result; the carried words are dropped rather than exceed it
 */
export function standaloneQuery(query: string, history: ConversationTurn[] = [], maxChars = 500): string {
  const previous = history.findLast((t) => t.role === "user" && t.content.trim() !== "");
  if (!previous) return query;
  const own = words(query);
  const content = own.filter((w) => !isStopword(w) && (w.length > 1 || /\d/.test(w)));
  const pointsBack = own.some((w) => POINTING_BACK.has(w));
  if (!pointsBack && content.length > SHORT_FOLLOWUP_TERMS) return query;
  const have = new Set(content);
  const carried = [...new Set(words(previous.content).filter((w) => !isStopword(w) && w.length > 1 && !have.has(w)))]
    .slice(0, CARRIED_WORDS);
  if (carried.length === 0) return query;
  const end = /[?.!]+\s*$/.exec(query)?.[0].trim() ?? "";
  const rewritten = `${query.slice(0, query.length - (/[?.!]+\s*$/.exec(query)?.[0].length ?? 0))} (${
    carried.join(" ")
  })${end}`;
  return rewritten.length <= maxChars ? rewritten : query;
}
