/**
 * What the `search_articles` and `get_article` calls of one `POST /mcp` may return. A tool result is read by a model
 * (clients cut what they show at some tens of thousands of tokens), and the MCP SDK sends a POST's
 * answer as one JSON-RPC message, or one array for a batch, made by one `JSON.stringify`: 1,000 full
 * texts, each twice (`structuredContent` and the text rendering), were 42 MB and held the event loop
 * about 300 ms, and a batch of such calls multiplied it. The budget is applied to each call's
 * arguments before the search runs (and before an agent's call is priced), so every result still has
 * its text, cut shorter, and an agent pays for no text it does not receive.
 */
import { highlightOptionsOf, MAX_TEXT_CHARACTERS, pageLength, textOptionOf } from "../../core/search/mod.ts";
import { AppError } from "../../core/errors.ts";
import type { GetArticleArgs, SearchArgs } from "./access.ts";

/** Most characters of article text (full texts and highlights together) one `POST /mcp` returns. */
export const MCP_TEXT_BUDGET = 100_000;
/** Most search results one `POST /mcp` returns (a single call may ask the REST maximum). */
export const MCP_RESULTS_BUDGET = 1000;

/** Arguments of a search, with a note for the result when the budget cut what they asked. */
interface BudgetedSearch {
  args: SearchArgs;
  notice?: string;
}

const n = (x: number) => x.toLocaleString("en-US");

/**
 * The budget of one `POST /mcp`, drawn by its `search_articles` and `get_article` calls in the order
 * they start (a batch shares it; a single call has it whole).
 */
export class SearchBudget {
  #text = MCP_TEXT_BUDGET;
  #results = MCP_RESULTS_BUDGET;
  /** The batch's searches running on their share. */
  readonly #running = new Set<Promise<unknown>>();
  #idle: PromiseWithResolvers<void> | null = null;

  /**
   * Runs one search on its share of the budget ({@link take}), given back when it fails. A batch's
   * calls run together: one that would be cut first waits for those running, as one that fails
   * leaves its share to the others.
   * @param highlightCap as {@link take}
   * @throws {AppError} as {@link take}, and whatever `search` throws
   */
  run<T>(
    args: SearchArgs,
    readsWhole: boolean,
    search: (args: SearchArgs) => Promise<T>,
    highlightCap: number | null = null,
  ): Promise<{ out: T; notice?: string }> {
    return this.#drawn(() => this.#fitsWhole(args, highlightCap), () => {
      const taken = this.take(args, readsWhole, highlightCap);
      return { taken, giveBack: () => this.#giveBack(taken, highlightCap) };
    }, search);
  }

  /**
   * Reads one article (`get_article`) on the same budget: its text is cut to what the request's
   * earlier calls left, given back when the read fails.
   * @throws {AppError} 422 when the request's earlier calls left no text, and whatever `read` throws
   */
  article<T>(args: GetArticleArgs, read: (args: GetArticleArgs) => Promise<T>): Promise<{ out: T; notice?: string }> {
    const asked = args.max_characters ?? MAX_TEXT_CHARACTERS;
    return this.#drawn(() => asked <= this.#text, () => {
      if (this.#text < 1) throw spent();
      const granted = Math.min(asked, this.#text);
      this.#text -= granted;
      const taken: { args: GetArticleArgs; notice?: string } = granted < asked
        ? {
          args: { ...args, max_characters: granted },
          notice: `Cut to fit: text at most ${n(granted)} characters (a request to /mcp carries at most ` +
            `${n(MCP_TEXT_BUDGET)} characters of article text, shared by its calls); call again in a request ` +
            "of its own for more.",
        }
        : { args };
      return { taken, giveBack: () => void (this.#text += granted) };
    }, read);
  }

  /**
   * Runs `call` on what `take` draws, given back when the call fails. A batch's calls run together:
   * one that would be cut (`fits` false) first waits for those running, as one that fails leaves
   * its share to the others.
   */
  async #drawn<A, T>(
    fits: () => boolean,
    take: () => { taken: { args: A; notice?: string }; giveBack: () => void },
    call: (args: A) => Promise<T>,
  ): Promise<{ out: T; notice?: string }> {
    while (this.#running.size > 0 && !fits()) await this.#whenIdle();
    const { taken, giveBack } = take();
    const running = call(taken.args);
    this.#running.add(running);
    try {
      return { out: await running, ...(taken.notice ? { notice: taken.notice } : {}) };
    } catch (err) {
      giveBack();
      throw err;
    } finally {
      this.#running.delete(running);
      if (this.#running.size === 0 && this.#idle) {
        this.#idle.resolve();
        this.#idle = null;
      }
    }
  }

  /** Settles once no call runs: one promise for every waiter, not one per waiter over every call. */
  #whenIdle(): Promise<void> {
    return (this.#idle ??= Promise.withResolvers<void>()).promise;
  }

  /** Whether what is left serves `args` as asked. */
  #fitsWhole(args: SearchArgs, highlightCap: number | null): boolean {
    const results = resultsOf(args);
    return results <= this.#results &&
      results * ((textOptionOf(args) ?? 0) + highlightsOf(args, highlightCap)) <= this.#text;
  }

  /**
   * Search arguments within what is left: each of the page's results gets an equal share of the
   * text, highlights first (they are the passages that answer the query), the text the rest.
   * @param readsWhole whether the caller has `get_article`, to read one article whole
   * @param highlightCap the most highlight characters per result the caller's licence lets it
   *   receive (null: as asked): what it cannot receive is not drawn
   * @throws {AppError} 422 when a batch's earlier calls left too few results or no text for this one
   */
  take(args: SearchArgs, readsWhole: boolean, highlightCap: number | null = null): BudgetedSearch {
    const results = resultsOf(args);
    if (results > this.#results) {
      throw new AppError(
        "unprocessable",
        "invalid_request",
        `num_results: this request has ${n(this.#results)} search results left (a request or batch to /mcp ` +
          `returns at most ${n(MCP_RESULTS_BUDGET)}); ask fewer, or call again in a request of its own`,
      );
    }
    const textAsked = textOptionOf(args) ?? 0;
    const highlightsAsked = highlightsOf(args, highlightCap);
    const share = Math.floor(this.#text / results);
    if (textAsked + highlightsAsked > 0 && share < (textAsked && highlightsAsked ? 2 : 1)) throw spent();
    this.#results -= results;
    if (textAsked + highlightsAsked <= share) {
      this.#text -= results * (textAsked + highlightsAsked);
      return { args };
    }
    // Both asked: highlights keep at most half the share, so the text is never squeezed out.
    const highlights = textAsked ? Math.min(highlightsAsked, Math.floor(share / 2)) : Math.min(highlightsAsked, share);
    const text = Math.min(textAsked, share - highlights);
    this.#text -= results * (highlights + text);
    const cut: string[] = [];
    const budgeted: SearchArgs = { ...args };
    if (args.highlights && highlights < highlightsAsked) {
      budgeted.highlights = { ...args.highlights, max_characters: highlights };
      cut.push(`highlights at most ${n(highlights)} characters per result`);
    }
    if (args.contents?.text && text < textAsked) {
      budgeted.contents = { ...args.contents, max_characters: text };
      cut.push(`texts at most ${n(text)} characters each`);
    }
    const more = readsWhole ? "; read one article whole with get_article" : "";
    return {
      args: budgeted,
      notice: `Cut to fit: ${cut.join(", ")} (a search_articles result carries at most ` +
        `${n(MCP_TEXT_BUDGET)} characters of article text, shared by its results). ` +
        `For more text per article, ask fewer results per call (num_results) and page on with page${more}.`,
    };
  }

  /**
   * Gives back what {@link take} drew for a search that then failed (its caller got none of it), by
   * the same measure: the arguments it passed on, under the same cap.
   */
  #giveBack(taken: BudgetedSearch, highlightCap: number | null): void {
    const results = resultsOf(taken.args);
    this.#results += results;
    this.#text += results * ((textOptionOf(taken.args) ?? 0) + highlightsOf(taken.args, highlightCap));
  }
}

/** The results a search draws: as many as its page can hold (one past the ranking, which holds none). */
const resultsOf = (args: SearchArgs) => Math.max(1, pageLength(args));
/** The highlight characters per result a search asks, as far as the caller may receive them. */
const highlightsOf = (args: SearchArgs, cap: number | null) =>
  Math.min(highlightOptionsOf(args)?.maxCharacters ?? 0, cap ?? Infinity);

/** No article text left for a call of this request. */
const spent = () =>
  new AppError(
    "unprocessable",
    "invalid_request",
    `contents: this request's ${n(MCP_TEXT_BUDGET)} characters of article text are spent by its earlier ` +
      "calls; call again in a request of its own",
  );
