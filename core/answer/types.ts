/** The answer-engine contract shared by `/app/aimodel/{id}` and `/payproxy/aimodel/{id}`. */
import type { AiModel } from "../store/models.ts";

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
  /** The page the question was asked from. */
  referringUrl?: string;
}

/** An answer: `text` for text models; `payload` (already schema-valid) for structured models. */
export type Answer =
  | { kind: "text"; message: string }
  | { kind: "structured"; payload: unknown; message: string };

export interface AnswerService {
  /** Answers `query` with `model`, grounded in its data models. */
  answer(model: AiModel, query: string, context: AnswerContext): Promise<Answer>;
  /** Streams the answer text in chunks (for `Accept: text/event-stream`). */
  stream?(model: AiModel, query: string, context: AnswerContext): AsyncIterable<string>;
}
