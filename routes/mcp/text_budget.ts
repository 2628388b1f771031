/**
 * The article text one `search_articles` result may carry. A tool result is read by a model (clients
 * cut what they show at some tens of thousands of tokens), and the MCP SDK sends it as one JSON-RPC
 * message made by one `JSON.stringify`: 1,000 full texts, each twice (`structuredContent` and the text
 * rendering), were 42 MB and held the event loop about 300 ms. The budget is applied to the request,
 * before the search runs (and before an agent's call is priced), so every result still has its text,
 * cut shorter, and an agent pays for no text it does not receive.
 */
import {
  DEFAULT_HIGHLIGHT_CHARACTERS,
  DEFAULT_NUM_RESULTS,
  DEFAULT_TOP_K,
  MAX_TEXT_CHARACTERS,
} from "../../core/search/mod.ts";
import type { SearchArgs } from "./access.ts";

/** Most characters of article text (full texts and highlights together) in one `search_articles` result. */
export const MCP_TEXT_BUDGET = 100_000;

/** Arguments of a search, with a note for the result when the budget cut what they asked. */
export interface BudgetedSearch {
  args: SearchArgs;
  notice?: string;
}

/**
 * Search arguments whose full texts and highlights fit {@link MCP_TEXT_BUDGET} together: each of the
 * page's results gets an equal share, highlights first (they are the passages that answer the query),
 * the text the rest.
 * @param readsWhole whether the caller has `get_article`, to read one article whole
 */
export function withinTextBudget(args: SearchArgs, readsWhole: boolean): BudgetedSearch {
  const textAsked = args.contents?.text ? args.contents.max_characters ?? MAX_TEXT_CHARACTERS : 0;
  const highlightsAsked = args.highlights ? args.highlights.max_characters ?? DEFAULT_HIGHLIGHT_CHARACTERS : 0;
  const share = Math.floor(MCP_TEXT_BUDGET / pageSize(args));
  if (textAsked + highlightsAsked <= share) return { args };
  // Both asked: highlights keep at most half the share, so the text is never squeezed out.
  const highlights = textAsked ? Math.min(highlightsAsked, Math.floor(share / 2)) : Math.min(highlightsAsked, share);
  const text = Math.min(textAsked, share - highlights);
  const cut: string[] = [];
  const budgeted: SearchArgs = { ...args };
  if (args.highlights && highlights < highlightsAsked) {
    budgeted.highlights = { ...args.highlights, max_characters: highlights };
    cut.push(`highlights at most ${highlights.toLocaleString("en-US")} characters per result`);
  }
  if (args.contents?.text && text < textAsked) {
    budgeted.contents = { ...args.contents, max_characters: text };
    cut.push(`texts at most ${text.toLocaleString("en-US")} characters each`);
  }
  const more = readsWhole ? "; read one article whole with get_article" : "";
  return {
    args: budgeted,
    notice: `Cut to fit: ${cut.join(", ")} (a search_articles result carries at most ` +
      `${MCP_TEXT_BUDGET.toLocaleString("en-US")} characters of article text, shared by its results). ` +
      `For more text per article, ask fewer results per call (num_results) and page on with page${more}.`,
  };
}

/** How many results the page of a search can hold. */
function pageSize(args: SearchArgs): number {
  const perPage = args.num_results ?? DEFAULT_NUM_RESULTS;
  const topK = args.similarity_top_k ?? DEFAULT_TOP_K;
  const left = topK - ((args.page ?? 1) - 1) * perPage;
  return Math.max(1, Math.min(perPage, left));
}
