/** The answer-engine contract shared by `/app/aimodel/{id}` and `/payproxy/aimodel/{id}`. */
import type { AiModel } from "../store/mod.ts";

/** Who is asking: recorded with the interaction. */
export interface AnswerContext {
  tenantId?: string;
  /** `payproxy:<agent-id>` on payproxy traffic. */
  caller?: string;
  widgetId?: string;
  sessionId?: string;
  requestId?: string;
  /** Ask AI interaction type recorded with the query; `free_form` when absent. */
  interactionType?: string;
  placementId?: string;
  /** e.g. `embed`, `brand_agent` (from the widget when one is named). */
  deploymentType?: string;
  /** The page's ad-tracking macros (spec 4.5), carried into the clicks of a widget's citations. */
  adMacros?: { creative_id?: string; line_item_id?: string; publisher_id?: string };
  /** The page the question was asked from. */
  referringUrl?: string;
  /**
   * Key of the reader's network (core/client_key.ts) on answers public routes serve (the widget's):
   * trending counts all of a network's questions as one sender, whatever session ids they carry.
   */
  clientKey?: string;
  /**
   * Who records the exchange as a `query` event (one per question, by one rule: docs/api/answers.md).
   * `service` (default): the engine, once the answer is whole, or, when the caller left before it was
   * (`left`), with the answer as far as it went. `client`: the client records the answers it
   * received (the Ask AI widget sends its own `query` events, with the chip it showed); the engine
   * records only a question whose caller left before receiving the whole answer, in the same shape.
   * A provider failing while the caller is there is recorded by neither.
   */
  recordedBy?: "service" | "client";
  /**
   * The `event_id` of the `query` event the engine records, when its client records the same question
   * under that id (the widget's: ClientKeys.answerEventId): both copies are then stored once.
   */
  eventId?: string;
  /** What the reader typed, when the engine answers a rewritten query (a follow-up made standalone). */
  prompt?: string;
  /**
   * Aborted by the route when its caller left before the whole answer reached them (a closed page,
   * an aborted fetch; streamed or not, before or after the engine finished it). An answer made for a
   * caller already gone is recorded as far as it went and shows its citations to nobody (no
   * impressions). A request's own signal will do: it aborts only when its client left before the
   * whole response reached it (deno.json's `no-legacy-abort`).
   */
  left?: AbortSignal;
  /**
   * The text of an answer its client shows (the widget: without the sources block, its citations
   * being our links): what the recorded `response` holds, as the client would have sent it.
   */
  shownText?: (message: string) => string;
  /** The configured prompt (chip) the question was, as the client names it on its own `query` event. */
  chip?: { prompt_id: string; prompt_text: string; campaign_id?: string };
}

/** An article a text answer cites. */
export interface Citation {
  title: string;
  /** The article's own URL. */
  url: string;
  /** Our tracking link to it: a click is recorded as an article click, then redirected to `url`. */
  source_url: string;
  site: string;
  /** ISO 8601. */
  pubdate: string;
}

/**
 * The articles one served answer cites, for analytics to record as impressions (the same
 * `result_impression` events as a page of search results).
 */
export interface CitedArticles {
  /** Owner of the AI model (payproxy calls carry no tenant of their own). */
  tenantId: string;
  aiModelId: string;
  /** Caller identity, e.g. `payproxy:<agent-id>` or `mcp`; absent on the tenant's own bearer calls. */
  caller?: string;
  at: Date;
  /** In the order the answer cites them; `position` counts from 1. */
  articles: { dataModelId: string; articleId: string; url: string; position: number }[];
}

/**
 * An answer: `text` for text models, with the articles it cites (in the order it cites them);
 * `payload` (already schema-valid) for structured models.
 */
export type Answer =
  | { kind: "text"; message: string; citations: Citation[] }
  | { kind: "structured"; payload: unknown; message: string };

export interface AnswerService {
  /** Answers `query` with `model`, grounded in its data models. */
  answer(model: AiModel, query: string, context: AnswerContext): Promise<Answer>;
  /**
   * Streams the answer text in chunks (for `Accept: text/event-stream`); the generator returns the
   * citations of a text answer when it is done.
   */
  stream?(model: AiModel, query: string, context: AnswerContext): AsyncGenerator<string, Citation[] | void>;
  /**
   * Three follow-up questions after a text answer citing `cited`: written by the model's provider
   * when it writes them, else extractive from the cited articles (core/answer/related.ts).
   */
  relatedQuestions?(model: AiModel, query: string, cited: { title: string }[]): Promise<string[]>;
}
