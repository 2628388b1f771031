/**
 * The answer engine: for an AI model, retrieve fresh passages from its grounding data models,
 * generate through the model's provider, check structured output against the model's schema,
 * and record the exchange as an Ask AI interaction.
 */
// What the analytics log keeps of a response: longer text would lose the event.
import { type EventInput, type EventSink, MAX_RESPONSE_CHARS } from "../events.ts";
import type { Clock } from "../clock.ts";
import { answerErrors } from "./errors.ts";
import { describeError, type Logger } from "../log.ts";
import type { AiModel } from "../store/mod.ts";
import type { LinkBuilder } from "../links/mod.ts";
import type { RetrievedArticle } from "../search/mod.ts";
import type { Answer, AnswerContext, AnswerService, Citation, CitedArticles } from "./types.ts";
import type { AnswerProvider, GroundedRequest, ProviderRegistry, Retrieve } from "./provider.ts";
import { compileSchema, InvalidSchemaError, type SchemaValidator } from "./schema.ts";
import { followUpQuestions } from "./related.ts";

/** What the engine is built from. */
export interface AnswerServiceOptions {
  /** Retrieval over data models (the search engine's `retrieve`). */
  retrieve: Retrieve;
  providers: ProviderRegistry;
  clock: Clock;
  log: Logger;
  /** Where interactions are recorded; a function so the sink may be wired after the engine. */
  events?: () => EventSink | undefined;
  /** Builds the tracking links of citations; without it `source_url` is the article's own URL. */
  links?: LinkBuilder;
  /**
   * Told of the articles each served text answer cites (analytics records them as impressions).
   * Must not block: it runs on the response path, after the answer is complete.
   */
  onCited?: (cited: CitedArticles) => void;
}

/**
 * The passages an answer text cites, in order of first mention: both providers end a text answer
 * with a sources block giving each cited article's URL.
 */
export function citedPassages(text: string, passages: RetrievedArticle[]): RetrievedArticle[] {
  const found: { at: number; article: RetrievedArticle }[] = [];
  const seen = new Set<string>();
  for (const article of passages) {
    if (seen.has(article.url)) continue;
    // The URL as a whole token: not a prefix of a longer URL.
    let from = 0, at = -1;
    while ((from = text.indexOf(article.url, from)) >= 0) {
      const next = text[from + article.url.length];
      if (next === undefined || /[\s)\]>"',]/.test(next)) {
        at = from;
        break;
      }
      from += article.url.length;
    }
    if (at < 0) continue;
    seen.add(article.url);
    found.push({ at, article });
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.article);
}

/** The interaction type recorded when the caller names none. */
export const DEFAULT_INTERACTION_TYPE = "free_form";

/** Builds the {@link AnswerService}. */
export function createAnswerService(options: AnswerServiceOptions): AnswerService {
  const { retrieve, providers, clock, log } = options;

  /** Tells `onCited` which articles an answer cites; a failure there never reaches the caller. */
  const tellCited = (cited: RetrievedArticle[], model: AiModel, context: AnswerContext, at: Date) => {
    if (!options.onCited || cited.length === 0) return;
    try {
      options.onCited({
        tenantId: context.tenantId ?? model.tenantId,
        aiModelId: model.id,
        ...(context.caller ? { caller: context.caller } : {}),
        at,
        articles: cited.map((a, i) => ({ dataModelId: a.dataModelId, articleId: a.id, url: a.url, position: i + 1 })),
      });
    } catch (err) {
      log.error("answer citations not recorded", { request_id: context.requestId, error: describeError(err) });
    }
  };

  const citationsOf = (
    text: string,
    request: GroundedRequest,
    context: AnswerContext,
  ): Citation[] => {
    const cited = citedPassages(text, request.passages);
    // An answer its caller already left shows its citations to nobody (as one cut mid-stream).
    if (!context.left?.aborted) tellCited(cited, request.model, context, request.now);
    return cited.map((a, i) => ({
      title: a.title,
      url: a.url,
      source_url: options.links
        ? options.links.trackingUrl(a, {
          dataModelId: a.dataModelId,
          tenantId: context.tenantId,
          caller: context.caller,
          requestId: context.requestId,
          query: request.query,
          position: i + 1,
          aiModelId: request.model.id,
          widgetId: context.widgetId,
          sessionId: context.sessionId,
          ...(context.widgetId
            ? {
              placement: {
                placement_id: context.placementId,
                deployment_type: context.deploymentType,
                ...context.adMacros,
              },
            }
            : {}),
        })
        : a.url,
      site: a.site || a.siteDomain,
      pubdate: a.pubdate,
    }));
  };

  const providerFor = (model: AiModel): AnswerProvider => {
    const provider = providers[model.provider.kind];
    if (!provider) {
      throw answerErrors.provider_unavailable({ provider: model.provider.kind });
    }
    return provider;
  };

  const validatorFor = (schema: Record<string, unknown>): SchemaValidator => {
    try {
      return compileSchema(schema);
    } catch (err) {
      if (err instanceof InvalidSchemaError) throw answerErrors.schema_invalid({ cause: err });
      throw err;
    }
  };

  const ground = async (
    model: AiModel,
    query: string,
    provider: AnswerProvider,
    now: Date,
  ): Promise<GroundedRequest> => {
    const passages = model.groundingDataModelIds.length === 0
      ? []
      : await retrieve(model.groundingDataModelIds, query, { k: provider.passages });
    return { model, query, passages, now };
  };

  const record = async (model: AiModel, query: string, text: string, context: AnswerContext, at: Date) => {
    const sink = options.events?.();
    if (!sink) return;
    const message = context.shownText ? context.shownText(text) : text;
    const event: EventInput = {
      ...(context.eventId ? { event_id: context.eventId } : {}),
      event_type: "query",
      ts: at.toISOString(),
      tenant_id: context.tenantId ?? model.tenantId,
      ai_agent: model.id,
      interaction_type: context.interactionType ?? DEFAULT_INTERACTION_TYPE,
      prompt: context.prompt ?? query,
      response: message.length > MAX_RESPONSE_CHARS ? message.slice(0, MAX_RESPONSE_CHARS) : message,
      ...(context.widgetId ? { widget_id: context.widgetId } : {}),
      ...(context.sessionId ? { session_id: context.sessionId } : {}),
      ...(context.placementId ? { placement_id: context.placementId } : {}),
      ...(context.deploymentType ? { deployment_type: context.deploymentType } : {}),
      ...(context.referringUrl ? { referring_url: context.referringUrl } : {}),
      ...(context.caller ? { agent_identity: context.caller } : {}),
      ...(context.clientKey ? { client_key: context.clientKey } : {}),
      ...context.chip,
    };
    try {
      await sink.record([event]);
    } catch (err) {
      // The caller already has a good answer; losing it over analytics would be worse. The
      // failure is loud in the log.
      log.error("ask ai interaction not recorded", {
        request_id: context.requestId,
        ai_agent: model.id,
        error: describeError(err),
      });
    }
  };

  /**
   * The one rule by which a question becomes a `query` event (AnswerContext.recordedBy), told when
   * the engine is done with an answer: `whole`, or cut short (its caller left, or the provider
   * failed). Recorded at most once, stamped with the time the question was asked. A question its
   * caller left is recorded whatever the answer had reached, nothing included (left before the first
   * word, the provider then failing): it was asked, and nobody else can record it.
   */
  const recorder = (model: AiModel, query: string, context: AnswerContext, at: Date) => {
    let recorded = false;
    const now = async (message: string) => {
      if (recorded) return;
      recorded = true;
      await record(model, query, message, context, at);
    };
    return async (message: string, whole: boolean): Promise<void> => {
      const left = context.left;
      if (context.recordedBy !== "client") {
        if (whole || left?.aborted) await now(message);
      } else if (left?.aborted) {
        await now(message);
      } else if (left && whole) {
        // The client records it once it has it all; if its caller leaves before, the service does.
        left.addEventListener("abort", () => void now(message), { once: true });
      }
    };
  };

  const answer = async (model: AiModel, query: string, context: AnswerContext): Promise<Answer> => {
    const provider = providerFor(model);
    const validator = model.output.kind === "structured" ? validatorFor(model.output.schema) : undefined;
    // Settled from the question on: one left during grounding, which then fails, is recorded too.
    const asked = clock.now();
    const settle = recorder(model, query, context, asked);
    let result: Answer;
    try {
      const request = await ground(model, query, provider, asked);
      if (model.output.kind === "structured") {
        const payload = await provider.structured(request, model.output.schema, validator!);
        // Whatever the provider did, nothing leaves unchecked.
        const problems = validator!.validate(payload);
        if (problems.length > 0) {
          throw answerErrors.schema_mismatch({ problems: problems.map((p) => p.text) });
        }
        result = { kind: "structured", payload, message: JSON.stringify(payload) };
      } else {
        const message = await provider.text(request);
        result = { kind: "text", message, citations: citationsOf(message, request, context) };
      }
    } catch (err) {
      // Grounding or the provider failed: a question its caller left is still one (as a stream cut short).
      await settle("", false);
      throw err;
    }
    await settle(result.message, true);
    return result;
  };

  async function* stream(model: AiModel, query: string, context: AnswerContext): AsyncGenerator<string, Citation[]> {
    if (model.output.kind === "structured") {
      // A JSON payload is only useful whole and checked: it comes as one chunk.
      yield (await answer(model, query, context)).message;
      return [];
    }
    const provider = providerFor(model);
    const asked = clock.now();
    const settle = recorder(model, query, context, asked);
    let request: GroundedRequest;
    let message = "";
    let whole = false;
    try {
      request = await ground(model, query, provider, asked);
      for await (const chunk of provider.streamText(request)) {
        message += chunk;
        yield chunk;
      }
      whole = true;
    } finally {
      // Also when the caller left mid-way (the route ends this generator at a yield), or the
      // provider failed after it left: then with the answer as far as it went.
      await settle(message, whole);
    }
    return citationsOf(message, request, context);
  }

  /** Model-written follow-ups when the provider writes them; extractive ones otherwise or when it fails. */
  const relatedQuestions = async (model: AiModel, query: string, cited: { title: string }[]): Promise<string[]> => {
    const provider = options.providers[model.provider.kind];
    if (provider?.relatedQuestions && cited.length > 0) {
      try {
        return await provider.relatedQuestions(model, query, cited.map((c) => c.title));
      } catch (err) {
        log.warn("related questions not written; extractive ones instead", { error: describeError(err) });
      }
    }
    return await followUpQuestions(options.retrieve, model.groundingDataModelIds, query, cited);
  };

  return { answer, stream, relatedQuestions };
}
