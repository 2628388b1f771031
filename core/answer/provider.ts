/** The provider interface the answer engine generates through, and the registry of providers. */
import type { AiModel, ProviderSettings } from "../store/mod.ts";
import type { RetrievedArticle } from "../search/mod.ts";
import type { SchemaValidator } from "./schema.ts";

/** One generation: the question, the passages retrieved for it (best first) and the time of asking. */
export interface GroundedRequest {
  model: AiModel;
  query: string;
  passages: RetrievedArticle[];
  now: Date;
}

/** Retrieval as the answer engine needs it: `SearchService.retrieve`. */
export type Retrieve = (dataModelIds: string[], query: string, options?: { k?: number }) => Promise<RetrievedArticle[]>;

/**
 * A way of turning retrieved passages into an answer. Failures are AppErrors: 502 when the
 * provider failed or answered badly, 504 when it did not answer in time.
 */
export interface AnswerProvider {
  /** How many passages to retrieve for one answer. */
  readonly passages: number;
  /** A plain-text answer. */
  text(request: GroundedRequest): Promise<string>;
  /** The same answer in chunks, as it is produced. */
  streamText(request: GroundedRequest): AsyncIterable<string>;
  /**
   * A JSON payload meant to match `schema`; providers may use `validator` to repair their output.
   * The engine validates the result again before returning it.
   */
  structured(request: GroundedRequest, schema: Record<string, unknown>, validator: SchemaValidator): Promise<unknown>;
  /**
   * Three follow-up questions a reader may ask after `query`, about the articles titled `titles`
   * (providers that write them; the engine falls back to extractive ones otherwise).
   */
  relatedQuestions?(model: AiModel, query: string, titles: string[]): Promise<string[]>;
}

/** Providers by the `provider.kind` of an AI model. */
export type ProviderRegistry = Partial<Record<ProviderSettings["kind"], AnswerProvider>>;
