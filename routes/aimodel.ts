import { createRoute, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { streamSSE } from "hono/streaming";
import { INTERACTION_TYPES, MAX_PROMPT_CHARS } from "../analytics/schema.ts";
import {
  askingWidget,
  conversationFields,
  ConversationStore,
  followUpsFor,
  isHttpUrl,
  turnFields,
} from "../core/answer/mod.ts";
import type { AnswerContext, Citation } from "../core/answer/mod.ts";
import type { Deps } from "../composition.ts";
import { aiModelNotFound, unprocessable } from "../core/errors.ts";
import { idPattern } from "../core/ids.ts";
import { describeError } from "../core/log.ts";
import type { AppEnv, TenantEnv } from "./env.ts";
import { toAppError } from "./errors.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { perApiKeyLimit, RATE_LIMITED_DOC } from "./middleware/rate_limit.ts";
import { webBotIdentity } from "./middleware/web_bot_auth.ts";
import { bodyReader } from "./middleware/body.ts";

/**
 * Longest accepted question. The spec leaves it open; 2,000 characters is a long paragraph, and
 * what the analytics log keeps of a prompt.
 */
export const MAX_QUERY_CHARS = MAX_PROMPT_CHARS;

const AI_MODEL_ID = idPattern("am");
const WIDGET_ID = /^wd_[A-Za-z0-9]{1,64}$/;
const OPAQUE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const INTERACTION_TYPE = new RegExp(`^(?:${INTERACTION_TYPES.join("|")})$`);

const bodySchema = z.object({
  query: z.string().openapi({
    description: "The question. Must not be empty.",
    example: "What did the council decide?",
  }),
  widget_id: z.string().optional().openapi({ description: "Ask AI widget asking (`wd_`); or header `x-widget-id`." }),
  session_id: z.string().optional().openapi({ description: "End-user session; or header `x-session-id`." }),
  interaction_type: z.string().optional().openapi({
    description: `Recorded interaction type, one of ${INTERACTION_TYPES.join(", ")} (default free_form); or ` +
      "header `x-interaction-type`.",
  }),
  placement_id: z.string().optional().openapi({ description: "Placement on the page; or header `x-placement-id`." }),
  referring_url: z.string().optional().openapi({ description: "Page the question came from; else `Referer`." }),
  related_questions: z.boolean().optional().openapi({
    description: "Also answer three follow-up questions (`related_questions`), built from the cited articles' " +
      "titles (text models only)",
  }),
  ...conversationFields,
}).loose().openapi("RealTimeSearchRequest");

/** The articles a text answer cites (beside `message`; absent for structured models). */
export const citationsSchema = z.array(z.object({
  title: z.string(),
  url: z.string().openapi({ description: "The article's own URL" }),
  source_url: z.string().openapi({ description: "Tracking link: records an article click, then redirects to `url`" }),
  site: z.string(),
  pubdate: z.string().openapi({ description: "ISO 8601" }),
})).openapi("Citations", { description: "Articles the answer cites, in the order it cites them" });

const messageSchema = z.object({
  message: z.string().openapi({ description: "The answer; for structured models, the JSON payload as text." }),
  citations: citationsSchema.optional(),
  related_questions: z.array(z.string()).optional().openapi({
    description: "With `related_questions: true` on a text model: three follow-up questions, each ending with `?`",
  }),
  conversation_id: z.string().optional().openapi({
    description: "With `conversation: true` or `conversation_id`: the conversation this turn belongs to (kept 30 min)",
  }),
  explain: z.object({
    query: z.string().openapi({ description: "The standalone query the question was answered as" }),
    history_turns: z.number().int().openapi({ description: "Earlier turns taken into account" }),
  }).optional().openapi({ description: "With `explain: true`" }),
}).openapi("RealTimeSearchResponse");
const errorSchema = z.object({ message: z.string() }).openapi("MessageError");
const errorBody = (description: string) => ({
  description,
  content: { "application/json": { schema: errorSchema } },
});

const route = createRoute({
  method: "post",
  path: "/{ai_model_id}",
  tags: ["real-time search"],
  summary: "Answer a question with an AI model, grounded in its data models",
  description: "Retrieves fresh articles from the model's data models and answers from them. With " +
    '`Accept: text/event-stream` the answer streams as server-sent events: `data: {"delta": "..."}` chunks, ' +
    'then `event: done` with `data: {"message": "<whole answer>", "citations": [...]}` (citations for text models, ' +
    "and `related_questions` when asked; or `event: error` with `{message}`).",
  security: [{ bearerAuth: [] }],
  request: {
    params: z.object({
      ai_model_id: z.string().openapi({ param: { name: "ai_model_id", in: "path" }, example: "am_..." }),
    }),
    body: { required: true, content: { "application/json": { schema: bodySchema } } },
  },
  responses: {
    200: {
      description: "The answer",
      content: {
        "application/json": { schema: messageSchema },
        "text/event-stream": { schema: z.string().openapi({ description: "SSE: delta chunks, then `done`" }) },
      },
    },
    401: errorBody("Missing or malformed API key"),
    403: errorBody("Unknown or revoked API key"),
    404: errorBody("No such AI model for this API key's tenant"),
    422: errorBody("Bad model id format, empty or too long query, or a bad optional field"),
    429: errorBody(RATE_LIMITED_DOC),
    502: errorBody("The AI provider failed, answered malformed output, or output that did not match the schema"),
    503: errorBody("Article search is not available"),
    504: errorBody("The AI provider did not answer in time"),
  },
});

/** 422 before any body work when the path id cannot be an AI model id. */
function checkModelId(): MiddlewareHandler<AppEnv> {
  return async function checkModelId(c, next) {
    const id = c.req.param("ai_model_id") ?? "";
    if (!AI_MODEL_ID.test(id)) {
      throw unprocessable("ai_model_id is not in the correct format: expected am_ followed by letters and digits");
    }
    await next();
  };
}

type Body = z.infer<typeof bodySchema>;

/** Optional field from the body, else the header; validated against `re`. */
function optionalField(c: Context<TenantEnv>, body: Body, field: keyof Body, header: string, re: RegExp) {
  const raw = body[field] ?? c.req.header(header);
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || !re.test(raw)) throw unprocessable(`${field} is not in the correct format`);
  return raw;
}

/** Who is asking: tenant, widget, session and the rest of the interaction record. */
async function answerContext(
  c: Context<TenantEnv>,
  deps: Pick<Deps, "repos">,
  body: Body,
): Promise<AnswerContext> {
  const tenantId = c.get("tenantId");
  const widgetId = optionalField(c, body, "widget_id", "x-widget-id", WIDGET_ID);
  let deploymentType: string | undefined;
  if (widgetId) deploymentType = (await askingWidget(deps.repos.widgets, tenantId, widgetId)).deploymentType;
  let referringUrl: string | undefined;
  if (body.referring_url !== undefined && body.referring_url !== "") {
    if (!isHttpUrl(body.referring_url)) throw unprocessable("referring_url must be an absolute http(s) URL");
    referringUrl = body.referring_url;
  } else {
    const referer = c.req.header("referer");
    if (referer && isHttpUrl(referer)) referringUrl = referer;
  }
  return {
    tenantId,
    requestId: c.env.requestId,
    widgetId,
    sessionId: optionalField(c, body, "session_id", "x-session-id", OPAQUE_ID),
    interactionType: optionalField(c, body, "interaction_type", "x-interaction-type", INTERACTION_TYPE),
    placementId: optionalField(c, body, "placement_id", "x-placement-id", OPAQUE_ID),
    deploymentType,
    referringUrl,
    // A Web Bot Auth agent (routes/middleware/web_bot_auth.ts) is named in agent readership.
    ...(c.get("caller") ? { caller: c.get("caller") } : {}),
  };
}

/**
 * Mounted at `/app/aimodel`: `POST /{ai_model_id}`, real-time search with a bearer API key. `{query}` in,
 * `{message}` out (structured models: the JSON payload as text), or a server-sent event stream
 * when the caller accepts `text/event-stream`.
 */
export function createAiModelRoutes(
  deps: Pick<
    Deps,
    "apiKeys" | "repos" | "answer" | "search" | "config" | "log" | "webBotAuth" | "kv" | "clock" | "searchLimiter"
  >,
) {
  const app = familyApp<TenantEnv>("message", deps.log);
  const conversations = new ConversationStore(deps.kv, deps.clock);
  app.use("*", apiKeyAuth(deps.apiKeys));
  app.use("*", perApiKeyLimit(deps.searchLimiter));
  // Web Bot Auth after the key: an unauthenticated request makes us fetch no key directory.
  app.use("*", webBotIdentity(deps.webBotAuth));
  app.use("/:ai_model_id", checkModelId());
  app.use("*", bodyReader({ limit: deps.config.maxBodyBytes }));

  app.openapi(route, async (c) => {
    const { ai_model_id: id } = c.req.valid("param");
    const body = c.req.valid("json");
    // Whether the caller left before the answer reached it (a turn it never got is not kept).
    // Asked now: Deno makes a request's signal when first asked, and one made after its client left
    // may never abort.
    const callerSignal = c.req.raw.signal;
    const query = body.query.trim();
    if (!query) throw unprocessable("query cannot be empty");
    if (query.length > MAX_QUERY_CHARS) {
      throw unprocessable(`query is too long: the limit is ${MAX_QUERY_CHARS} characters`);
    }
    const model = await deps.repos.aiModels.getForTenant(c.get("tenantId"), id);
    if (!model) throw aiModelNotFound();
    const context = await answerContext(c, deps, body);
    const answer = deps.answer;
    // A follow-up is answered as a standalone query built from the turns before it.
    const turn = await conversations.prepare(c.get("tenantId"), model.id, query, body);
    const asked = turn.query;
    // The analytics log keeps what the reader typed.
    if (asked !== query) context.prompt = query;
    const extra = turnFields(turn, body);
    const remember = (message: string) =>
      conversations.remember(c.get("tenantId"), model.id, turn, query, message).catch((err) =>
        deps.log.warn("conversation turn not kept", { error: describeError(err) })
      );
    // Follow-ups of a text answer, when asked (`related_questions: true`): none written (nor paid
    // for) for a caller already gone.
    const related = async (citations: Citation[] | void) =>
      body.related_questions === true && citations
        ? {
          related_questions: await followUpsFor(
            answer,
            (ids, q, o) => deps.search.retrieve(ids, q, o),
            model,
            asked,
            citations,
            callerSignal,
          ),
        }
        : {};

    if (!/\btext\/event-stream\b/i.test(c.req.header("accept") ?? "")) {
      context.left = callerSignal;
      const result = await answer.answer(model, asked, context);
      if (!callerSignal.aborted) await remember(result.message);
      return c.json(
        result.kind === "text"
          ? { message: result.message, citations: result.citations, ...await related(result.citations), ...extra }
          : { message: result.message, ...extra },
        200,
      );
    }

    const left = new AbortController();
    context.left = left.signal;
    const source = answer.stream ? answer.stream(model, asked, context) : (async function* () {
      const result = await answer.answer(model, asked, context);
      yield result.message;
      return result.kind === "text" ? result.citations : undefined;
    })();
    const chunks = source[Symbol.asyncIterator]();
    // A caller who left before the first chunk, the provider then failing, asked all the same: the
    // engine records it (AnswerContext.left).
    callerSignal.addEventListener("abort", () => left.abort(), { once: true });
    // Pull the first chunk before committing to a 200 stream: an early failure (provider down,
    // timeout) still gets its proper status and `{message}` body.
    const first = await chunks.next();
    return streamSSE(c, async (sse) => {
      sse.onAbort(() => {
        left.abort();
        void chunks.return?.();
      });
      let message = "";
      try {
        let r = first;
        for (; !r.done; r = await chunks.next()) {
          // A caller gone before the stream began may get no cancel of it (Deno writes it to the
          // closed connection without an error): the request's signal tells then.
          if (callerSignal.aborted) {
            left.abort();
            await chunks.return?.();
            return;
          }
          message += r.value;
          await sse.writeSSE({ data: JSON.stringify({ delta: r.value }) });
        }
        // A caller gone mid-answer never saw it (nor, for a new conversation, its id): the turn is
        // not remembered, and no follow-ups are written for nobody.
        if (sse.aborted || callerSignal.aborted) return;
        // The generator's return value: the citations of a text answer.
        await remember(message);
        const done = r.value
          ? { message, citations: r.value, ...await related(r.value), ...extra }
          : { message, ...extra };
        await sse.writeSSE({ event: "done", data: JSON.stringify(done) });
      } catch (err) {
        const { appError, unexpected } = toAppError(err, "message");
        deps.log[unexpected ? "error" : "warn"]("answer stream failed", {
          request_id: c.env.requestId,
          code: appError.code,
          error: describeError(unexpected ? err : appError.cause ?? err),
        });
        await sse.writeSSE({ event: "error", data: JSON.stringify({ message: appError.message }) });
      }
    }) as unknown as Response & { _status: 200 };
  });
  return app;
}
