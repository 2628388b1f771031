/** The grounded chat prompt of the `openai` provider: numbered passages, citation rules, the question. */
import type { RetrievedArticle } from "../search/mod.ts";
import { formatDate, sourcesBlock } from "./extractive.ts";
import type { GroundedRequest } from "./provider.ts";

/** A chat message as OpenAI-compatible servers take it. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

// Enough of each article to ground an answer while keeping 6 passages well inside small contexts.
const PASSAGE_CHARS = 1_800;

function passageText(a: RetrievedArticle, n: number): string {
  const body = (a.body ?? "").replace(/\s+/g, " ").trim();
  const excerpt = body.length > PASSAGE_CHARS ? `${body.slice(0, PASSAGE_CHARS).replace(/\s\S*$/, "")} ...` : body;
  return [
    `[${n}] ${a.title}`,
    `Site: ${a.site || a.siteDomain} | Published: ${formatDate(a.pubdateUnix)} | URL: ${a.url}`,
    a.summary ? `Summary: ${a.summary}` : "",
    excerpt ? `Text: ${excerpt}` : "",
  ].filter(Boolean).join("\n");
}

/**
 * The messages for one grounded answer. With `schema`, the model is told to reply with one JSON
 * value matching it (the request also carries `response_format`, which not every server honours).
 */
export function groundedMessages(request: GroundedRequest, schema?: Record<string, unknown>): ChatMessage[] {
  const { model, query, passages, now } = request;
  const rules = [
    `You are ${model.name}, an assistant that answers questions from news articles.`,
    `Today is ${formatDate(now.getTime() / 1000)}.`,
    "Answer using only the numbered articles in the user's message; never add facts they do not contain.",
    "Cite every statement with the number of its article in square brackets, like [1] or [2][3].",
    "Prefer the most recent article when articles disagree, and say when they do.",
    "If the articles do not answer the question, say plainly that you could not find it in the available articles.",
    schema
      ? `Reply with one JSON value only, no prose and no code fence, matching this JSON schema:\n${
        JSON.stringify(schema)
      }`
      : "Keep the answer short: at most five sentences, plain text, no headings.",
  ];
  const articles = passages.length > 0
    ? passages.map((a, i) => passageText(a, i + 1)).join("\n\n")
    : "(no articles were found for this question)";
  return [
    { role: "system", content: rules.join("\n") },
    { role: "user", content: `Articles:\n\n${articles}\n\nQuestion: ${query}` },
  ];
}

/** The citation numbers `[n]` a reply uses, in order of first use, limited to the passages given. */
export function citedNumbers(text: string, passageCount: number): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/\[(\d{1,3})\]/g)) {
    const n = Number(m[1]);
    if (n >= 1 && n <= passageCount && !out.includes(n)) out.push(n);
  }
  return out;
}

/** The `Sources:` block for the passages a reply cites; empty when it cites none. */
export function citedSourcesBlock(text: string, passages: RetrievedArticle[]): string {
  const cited = citedNumbers(text, passages.length);
  if (cited.length === 0) return "";
  return `\n\n${sourcesBlock(cited.map((n) => ({ n, article: passages[n - 1]! })))}`;
}
