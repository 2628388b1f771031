/**
 * The `openai` provider: any OpenAI-compatible `/chat/completions` server (OpenAI, Ollama, vLLM).
 * Grounded prompt with numbered passages; a per-attempt deadline; retries with exponential
 * backoff and jitter on 429, 5xx and network failures (honouring `Retry-After`); failures mapped
 * to 502 (failed, rejected, malformed) and 504 (deadline passed). The API key comes from config,
 * goes only into the `Authorization` header, and is scrubbed from anything that could be logged.
 */
import { createParser } from "eventsource-parser";
import type { Clock } from "../clock.ts";
import type { OpenAiConfig } from "../config.ts";
import { AppError } from "../errors.ts";
import { answerErrors, type MalformedWhy } from "./errors.ts";
import type { Logger } from "../log.ts";
import type { AiModel } from "../store/mod.ts";
import { NOTHING_FOUND } from "./extractive.ts";
import { type ChatMessage, citedSourcesBlock, groundedMessages } from "./prompt.ts";
import type { AnswerProvider, GroundedRequest } from "./provider.ts";
import { parseJsonReply, type SchemaProblem, type SchemaValidator } from "./schema.ts";

/** Dependencies and tuning of {@link OpenAiProvider}. */
export interface OpenAiProviderOptions {
  config: OpenAiConfig;
  fetch: typeof fetch;
  log: Logger;
  /** For `Retry-After` dates. */
  clock: Clock;
  /** Waits between attempts; injectable so tests do not sleep. */
  sleep?: (ms: number) => Promise<void>;
  /** 0..1, for the backoff jitter. */
  random?: () => number;
  /** Passages to retrieve per answer. */
  passages?: number;
  /** First backoff step; doubles each retry. */
  backoffBaseMs?: number;
  /** Longest backoff step. */
  backoffMaxMs?: number;
  /** A `Retry-After` longer than this is not waited out: the answer fails at once. */
  maxRetryAfterMs?: number;
}

type OpenAiSettings = Extract<AiModel["provider"], { kind: "openai" }>;

const TIMED_OUT = Symbol("timed out");
const ERROR_SNIPPET = 300;

/** What one attempt came to: a usable value, or a failure that may be retried. */
type Attempt<T> =
  | { ok: true; value: T }
  | { ok: false; status?: number; retryAfterMs?: number; cause: unknown };

const malformed = (why: MalformedWhy) => answerErrors.provider_malformed({ why });

/** The OpenAI-compatible chat provider. */
export class OpenAiProvider implements AnswerProvider {
  readonly passages: number;
  readonly #o: Required<Omit<OpenAiProviderOptions, "passages">>;

  constructor(options: OpenAiProviderOptions) {
    this.passages = options.passages ?? 6;
    this.#o = {
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      random: Math.random,
      backoffBaseMs: 500,
      backoffMaxMs: 8_000,
      maxRetryAfterMs: 20_000,
      ...options,
    };
  }

  async text(request: GroundedRequest): Promise<string> {
    // Without passages there is nothing to ground an answer in: say so without asking the model.
    if (request.passages.length === 0) return NOTHING_FOUND;
    const settings = this.#settings(request.model);
    const content = await this.complete(settings, groundedMessages(request));
    return content.trim() + citedSourcesBlock(content, request.passages);
  }

  /**
   * Three follow-up questions written by the model, one per line; lines that are not a short
   * question are dropped.
   * @throws {AppError} 502 when fewer than three usable questions come back
   */
  async relatedQuestions(model: AiModel, query: string, titles: string[]): Promise<string[]> {
    const settings = this.#settings(model);
    const content = await this.complete(settings, relatedQuestionMessages(query, titles));
    const questions = parseQuestions(content);
    if (questions.length < 3) throw malformed("the reply held fewer than three questions");
    return questions.slice(0, 3);
  }

  async *streamText(request: GroundedRequest): AsyncIterable<string> {
    if (request.passages.length === 0) {
      yield NOTHING_FOUND;
      return;
    }
    const settings = this.#settings(request.model);
    let text = "";
    for await (const delta of this.completeStream(settings, groundedMessages(request))) {
      text += delta;
      yield delta;
    }
    if (!text.trim()) throw malformed("the reply was empty");
    const tail = citedSourcesBlock(text, request.passages);
    if (tail) yield tail;
  }

  async structured(
    request: GroundedRequest,
    schema: Record<string, unknown>,
    validator: SchemaValidator,
  ): Promise<unknown> {
    const settings = this.#settings(request.model);
    const messages = groundedMessages(request, schema);
    const format = { type: "json_schema", json_schema: { name: "answer", schema, strict: false } };
    const check = (content: string): { value?: unknown; problems: SchemaProblem[] } => {
      const parsed = parseJsonReply(content);
      if (!parsed.ok) return { problems: [{ text: parsed.problem, detail: parsed.problem }] };
      return { value: parsed.value, problems: validator.validate(parsed.value) };
    };
    const first = await this.complete(settings, messages, format);
    const firstCheck = check(first);
    if (firstCheck.problems.length === 0) return firstCheck.value;
    // One repair round: show the model its reply and what was wrong with it.
    this.#o.log.info("ai provider output failed the schema; asking for a repair", {
      model: settings.model,
      problems: firstCheck.problems.slice(0, 3).map((p) => p.detail),
    });
    const repaired = await this.complete(settings, [
      ...messages,
      { role: "assistant", content: first },
      {
        role: "user",
        content: `Your reply did not match the JSON schema: ${firstCheck.problems.map((p) => p.detail).join("; ")}. ` +
          "Reply again with only the corrected JSON value.",
      },
    ], format);
    const second = check(repaired);
    if (second.problems.length === 0) return second.value;
    throw answerErrors.schema_mismatch({ problems: second.problems.map((p) => p.text) });
  }

  /**
   * One chat completion: the assistant message's content.
   * @throws {AppError} 502 (failed, rejected, malformed) or 504 (deadline passed).
   */
  async complete(settings: OpenAiSettings, messages: ChatMessage[], responseFormat?: unknown): Promise<string> {
    const body = this.#body(settings, messages, false, responseFormat);
    const text = await this.#withRetries(settings, async (attemptNo): Promise<Attempt<string>> => {
      const { res, text } = await this.#withDeadline(async (signal) => {
        const res = await this.#fetch(settings, body, signal);
        return { res, text: await res.text() };
      });
      return res.ok ? { ok: true, value: text } : this.#failure(res, attemptNo, text);
    });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw malformed("the body is not JSON");
    }
    const content = (json as { choices?: { message?: { content?: unknown } }[] })?.choices?.[0]?.message?.content;
    if (typeof content !== "string") throw malformed("choices[0].message.content is missing");
    if (!content.trim()) throw malformed("the reply was empty");
    return content;
  }

  /**
   * A streamed chat completion (`stream: true`): the content deltas as they arrive. Retries happen
   * only before the first byte; after that a failure ends the stream with the error.
   */
  async *completeStream(settings: OpenAiSettings, messages: ChatMessage[]): AsyncIterable<string> {
    const body = this.#body(settings, messages, true);
    const res = await this.#withRetries(settings, async (attemptNo): Promise<Attempt<Response>> => {
      // The deadline covers the response head (and an error body); the stream itself is read
      // under an idle deadline between events.
      const { res, text } = await this.#withDeadline(async (signal) => {
        const res = await this.#fetch(settings, body, signal);
        return { res, text: res.ok ? "" : await res.text() };
      });
      return res.ok ? { ok: true, value: res } : this.#failure(res, attemptNo, text);
    });
    yield* this.#readSse(res);
  }

  #settings(model: AiModel): OpenAiSettings {
    if (model.provider.kind !== "openai") throw new Error(`model ${model.id} is not an openai model`);
    return model.provider;
  }

  #body(settings: OpenAiSettings, messages: ChatMessage[], stream: boolean, responseFormat?: unknown): string {
    return JSON.stringify({
      model: settings.model,
      messages,
      temperature: settings.temperature ?? 0.2,
      ...(settings.maxTokens ? { max_tokens: settings.maxTokens } : {}),
      ...(responseFormat ? { response_format: responseFormat } : {}),
      ...(stream ? { stream: true } : {}),
    });
  }

  #fetch(settings: OpenAiSettings, body: string, signal: AbortSignal): Promise<Response> {
    const base = (settings.baseUrl ?? this.#o.config.baseUrl).replace(/\/+$/, "");
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    // The key is a credential of the configured server: a model served elsewhere never sees it.
    if (this.#o.config.apiKey && sameOrigin(base, this.#o.config.baseUrl)) {
      headers.authorization = `Bearer ${this.#o.config.apiKey}`;
    }
    const f = this.#o.fetch;
    return f(`${base}/chat/completions`, { method: "POST", headers, body, signal });
  }

  /** Runs `fn` under the per-attempt deadline; a passed deadline becomes the 504. */
  async #withDeadline<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(TIMED_OUT), this.#o.config.timeoutMs);
    try {
      return await fn(ac.signal);
    } catch (err) {
      if (ac.signal.aborted && ac.signal.reason === TIMED_OUT) throw this.#timeout();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  #timeout(): AppError {
    return answerErrors.provider_timeout({ timeoutMs: this.#o.config.timeoutMs });
  }

  /** A failed response as a retryable attempt (429, 5xx); any other status is final. */
  #failure(res: Response, attemptNo: number, text: string): Attempt<never> {
    const snippet = this.#scrub(text.slice(0, ERROR_SNIPPET));
    if (res.status === 429 || res.status >= 500) {
      return {
        ok: false,
        status: res.status,
        retryAfterMs: this.#retryAfter(res.headers.get("retry-after")),
        cause: new Error(`HTTP ${res.status} on attempt ${attemptNo}: ${snippet}`),
      };
    }
    throw answerErrors.provider_rejected({ status: res.status }, {
      cause: new Error(`HTTP ${res.status}: ${snippet}`),
    });
  }

  async #withRetries<T>(settings: OpenAiSettings, attempt: (attemptNo: number) => Promise<Attempt<T>>): Promise<T> {
    const attempts = this.#o.config.maxRetries + 1;
    let last: Attempt<T> | undefined;
    for (let i = 1; i <= attempts; i++) {
      try {
        last = await attempt(i);
      } catch (err) {
        if (err instanceof AppError) throw err;
        // fetch itself failed (refused, reset, DNS): worth another try.
        last = { ok: false, cause: err };
      }
      if (last.ok) return last.value;
      this.#o.log.warn("ai provider attempt failed", {
        model: settings.model,
        attempt: i,
        status: last.status,
        why: this.#scrub(String((last.cause as Error)?.message ?? last.cause)),
      });
      if (i === attempts) break;
      if (last.retryAfterMs !== undefined && last.retryAfterMs > this.#o.maxRetryAfterMs) {
        const s = Math.ceil(last.retryAfterMs / 1000);
        throw answerErrors.provider_rate_limiting({ retryAfterS: s }, {
          headers: { "retry-after": String(s) },
          cause: last.cause,
        });
      }
      await this.#o.sleep(last.retryAfterMs ?? this.#backoff(i));
    }
    if (last && !last.ok && last.status === undefined) {
      throw answerErrors.provider_unreachable({ attempts }, { cause: last.cause });
    }
    throw answerErrors.provider_failed(
      { status: last && !last.ok ? last.status ?? "error" : "error", attempts },
      { cause: last && !last.ok ? last.cause : undefined },
    );
  }

  /** Exponential backoff with equal jitter: half the step fixed, half random. */
  #backoff(retry: number): number {
    const step = Math.min(this.#o.backoffMaxMs, this.#o.backoffBaseMs * 2 ** (retry - 1));
    return Math.round(step / 2 + this.#o.random() * step / 2);
  }

  /** `Retry-After` as milliseconds: delta-seconds or an HTTP date. */
  #retryAfter(value: string | null): number | undefined {
    if (!value) return undefined;
    if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
    const at = Date.parse(value);
    return Number.isNaN(at) ? undefined : Math.max(0, at - this.#o.clock.now().getTime());
  }

  #scrub(text: string): string {
    const key = this.#o.config.apiKey;
    return key ? text.replaceAll(key, "[redacted]") : text;
  }

  /** Parses an OpenAI-style SSE body into content deltas, with an idle deadline between events. */
  async *#readSse(res: Response): AsyncIterable<string> {
    if (!res.body) throw malformed("the stream has no body");
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const pending: string[] = [];
    const parser = createParser({ onEvent: (event) => pending.push(event.data) });
    let finished = false;
    try {
      while (!finished) {
        const next = await this.#readWithin(reader);
        // Servers that end the stream without `[DONE]` or a last blank line still sent a whole
        // answer: the blank line fed at the end dispatches that last event.
        parser.feed(next.done ? "\n\n" : next.value);
        if (next.done) finished = true;
        for (const data of pending.splice(0)) {
          if (!data) continue;
          if (data === "[DONE]") {
            finished = true;
            break;
          }
          const delta = this.#delta(data);
          if (delta) yield delta;
        }
      }
    } finally {
      if (!finished) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }

  #delta(data: string): string {
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw malformed("a stream event is not JSON");
    }
    const c = chunk as { error?: unknown; choices?: { delta?: { content?: unknown } }[] };
    if (c?.error) {
      throw answerErrors.provider_failed_streaming({
        cause: new Error(this.#scrub(JSON.stringify(c.error).slice(0, ERROR_SNIPPET))),
      });
    }
    if (!Array.isArray(c?.choices)) throw malformed("a stream event has no choices");
    const content = c.choices[0]?.delta?.content;
    return typeof content === "string" ? content : "";
  }

  async #readWithin(reader: ReadableStreamDefaultReader<string>): Promise<ReadableStreamReadResult<string>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.#timeout()), this.#o.config.timeoutMs);
    });
    try {
      return await Promise.race([reader.read(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The chat that asks for three follow-up questions about the cited articles. */
export function relatedQuestionMessages(query: string, titles: string[]): ChatMessage[] {
  return [
    {
      role: "system",
      content: "Write exactly three short follow-up questions a news reader may ask next, about the articles " +
        "listed. One question per line, each ending with a question mark, nothing else.",
    },
    {
      role: "user",
      content: `Question asked: ${query.slice(0, 500)}\nArticles:\n${
        titles.slice(0, 6).map((t) => `- ${t.slice(0, 200)}`).join("\n")
      }`,
    },
  ];
}

/** Distinct short questions from a reply, list markers and quotes stripped. */
export function parseQuestions(reply: string): string[] {
  const out: string[] = [];
  for (const line of reply.split("\n")) {
    const q = line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, "").replace(/^["“]|["”]$/g, "").trim();
    if (q.length < 8 || q.length > 200 || !q.endsWith("?")) continue;
    if (!out.some((o) => o.toLowerCase() === q.toLowerCase())) out.push(q);
  }
  return out;
}

/** Whether two absolute URLs share scheme, host and port (false when either does not parse). */
function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}
