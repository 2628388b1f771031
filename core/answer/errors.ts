/**
 * The answer room's error catalog: what can go wrong between a question and its answer, declared
 * once. A provider's own text (its error body, a parser's message quoting the model's reply) never
 * becomes a message: it goes to `cause`, which is logged only.
 */
import { declareErrors } from "../errors.ts";

/** Why a provider's response could not be used: our own fixed phrases. */
export type MalformedWhy =
  | "the body is not JSON"
  | "choices[0].message.content is missing"
  | "the reply was empty"
  | "the reply held fewer than three questions"
  | "the stream has no body"
  | "a stream event is not JSON"
  | "a stream event has no choices";

export const answerErrors = declareErrors({
  /** The model's provider kind has no provider in this process. */
  provider_unavailable: {
    kind: "upstream_failed",
    message: (p: { provider: string }) => `AI provider ${p.provider} is not available`,
  },
  provider_malformed: {
    kind: "upstream_failed",
    message: (p: { why: MalformedWhy }) => `AI provider returned a malformed response: ${p.why}`,
  },
  provider_timeout: {
    kind: "upstream_timeout",
    message: (p: { timeoutMs: number }) => `AI provider did not answer within ${p.timeoutMs} ms`,
  },
  /** A final (not retryable) refusal; the provider's body is the cause. */
  provider_rejected: {
    kind: "upstream_failed",
    code: "provider_failed",
    message: (p: { status: number }) => `AI provider rejected the request: HTTP ${p.status}`,
  },
  /** A `Retry-After` longer than we wait; raised with `retry-after`. */
  provider_rate_limiting: {
    kind: "upstream_failed",
    code: "provider_failed",
    message: (p: { retryAfterS: number }) => `AI provider is rate limiting: retry after ${p.retryAfterS} s`,
  },
  provider_unreachable: {
    kind: "upstream_failed",
    message: (p: { attempts: number }) => `AI provider could not be reached after ${p.attempts} attempts`,
  },
  /** Every attempt failed with a retryable status (`status` is "error" when none was seen). */
  provider_failed: {
    kind: "upstream_failed",
    message: (p: { status: number | "error"; attempts: number }) =>
      `AI provider failed: HTTP ${p.status} after ${p.attempts} attempts`,
  },
  /** The provider's stream carried an error event; the event is the cause. */
  provider_failed_streaming: {
    kind: "upstream_failed",
    code: "provider_failed",
    message: "AI provider failed while streaming",
  },
  /**
   * `problems` are our descriptions of what is wrong: a path (of names a schema could have) and
   * the problem in our words (core/zod_issue.ts), or our own phrase; never the output's values.
   */
  schema_mismatch: {
    kind: "upstream_failed",
    message: (p: { problems: readonly string[] }) => `model output did not match the schema: ${p.problems.join("; ")}`,
  },
  /** The publisher's output schema cannot be compiled; the compiler's message is the cause. */
  schema_invalid: {
    kind: "upstream_failed",
    message: "the model's output schema is not usable: it uses something this service cannot compile",
  },
  conversation_not_found: {
    kind: "not_found",
    message: "Conversation not found or expired: start a new one",
  },
  /** An unknown widget, or one of another tenant. */
  widget_not_found: { kind: "unprocessable", code: "unprocessable", message: "widget_id not found" },
});
