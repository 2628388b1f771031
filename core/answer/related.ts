/**
 * Extractive follow-up questions: three questions a reader may ask next, built from the titles
 * of the articles an answer cites (then the other articles it was grounded in). Nothing is
 * generated beyond a fixed question frame around an article's own title, so a question never
 * states something the articles do not; deterministic, no provider call.
 */
import type { AiModel } from "../store/mod.ts";
import { isStopword, terms, words } from "./text.ts";

/** How many follow-up questions an answer carries. */
export const RELATED_QUESTION_COUNT = 3;
// A chip is one line: longer titles are cut at a word boundary.
const MAX_TOPIC_CHARS = 90;

/** Question frames, one per position, so the three questions differ in form as well as topic. */
const TITLE_FRAMES = [
  (t: string) => `What else is known about "${t}"?`,
  (t: string) => `What is the background to "${t}"?`,
  (t: string) => `What happened next after "${t}"?`,
];
const TOPIC_FRAMES = [
  (t: string) => `What is the latest on ${t}?`,
  (t: string) => `Why does ${t} matter?`,
  (t: string) => `What happens next with ${t}?`,
];
const FALLBACK = ["What are today's top stories?", "What is trending right now?", "What happened this week?"];

/** An article as far as follow-up questions need it. */
export interface TitledArticle {
  title: string;
}

/** A title as a question topic: one line, no closing punctuation or quotes, at most 90 characters. */
function topicOf(title: string): string {
  let t = title.replace(/\s+/g, " ").replace(/["“”]/g, "").trim().replace(/[\s.!?:;,]+$/, "");
  if (t.length > MAX_TOPIC_CHARS) {
    const cut = t.slice(0, MAX_TOPIC_CHARS);
    t = cut.slice(0, Math.max(cut.lastIndexOf(" "), 40)).replace(/[\s.!?:;,]+$/, "");
  }
  return t;
}

/**
 * Three distinct follow-up questions, each ending with `?`: one per distinct cited article title
 * (then the other grounding articles), skipping titles the question already covers; topped up
 * from the question's own content words, then from general questions.
 *
 * @param query the question just answered
 * @param cited the cited articles, in citation order
 * @param others further articles the answer was grounded in, best first
 * @example
 * relatedQuestions("storm", [{ title: "Flooding closes roads" }])
 * // ['What else is known about "Flooding closes roads"?', ...]
 */
export function relatedQuestions(
  query: string,
  cited: TitledArticle[],
  others: TitledArticle[] = [],
  count = RELATED_QUESTION_COUNT,
): string[] {
  const asked = new Set(terms(query).map((t) => t.term));
  const topics: string[] = [];
  const seen = new Set<string>();
  for (const article of [...cited, ...others]) {
    const topic = topicOf(article.title ?? "");
    const key = topic.toLowerCase();
    const own = terms(topic).map((t) => t.term);
    // Nothing new to ask about: the title's words are all in the question already.
    if (!topic || seen.has(key) || own.length === 0 || own.every((t) => asked.has(t))) continue;
    seen.add(key);
    topics.push(topic);
    if (topics.length === count) break;
  }
  const out = topics.map((t, i) => TITLE_FRAMES[i % TITLE_FRAMES.length]!(t));
  // The question's own content words, as a topic: "council budget vote".
  const subject = words(query).filter((w) => !isStopword(w) && w.length > 1).slice(0, 5).join(" ");
  for (let i = out.length; i < count && subject; i++) out.push(TOPIC_FRAMES[i % TOPIC_FRAMES.length]!(subject));
  for (const q of FALLBACK) if (out.length < count && !out.includes(q)) out.push(q);
  return out.slice(0, count);
}

/** Number of further articles retrieved for follow-up questions beyond the cited ones. */
export const RELATED_POOL = 6;

/**
 * {@link relatedQuestions} for an answer: from its cited articles, then the other articles the
 * question retrieves from `dataModelIds` (the answer's own grounding). A failed retrieval only
 * narrows the choice: the questions never fail an answer that is already given.
 */
export async function followUpQuestions(
  retrieve: (dataModelIds: string[], query: string, options?: { k?: number }) => Promise<TitledArticle[]>,
  dataModelIds: string[],
  query: string,
  cited: TitledArticle[],
): Promise<string[]> {
  const others = dataModelIds.length === 0
    ? []
    : await retrieve(dataModelIds, query, { k: RELATED_POOL }).catch(() => [] as TitledArticle[]);
  return relatedQuestions(query, cited, others);
}

/**
 * The follow-up questions of an answer for the routes that offer them: the answer service's own
 * (model-written with the OpenAI-compatible provider) when it has them, else {@link followUpQuestions};
 * none written (nor paid for) for a caller already gone.
 */
export async function followUpsFor(
  answer: { relatedQuestions?(model: AiModel, query: string, cited: { title: string }[]): Promise<string[]> },
  retrieve: (dataModelIds: string[], query: string, options?: { k?: number }) => Promise<TitledArticle[]>,
  model: AiModel,
  query: string,
  cited: TitledArticle[],
  left?: AbortSignal | null,
): Promise<string[]> {
  if (left?.aborted) return [];
  return answer.relatedQuestions
    ? await answer.relatedQuestions(model, query, cited)
    : await followUpQuestions(retrieve, model.groundingDataModelIds, query, cited);
}
