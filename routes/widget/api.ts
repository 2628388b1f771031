/**
 * The public widget routes, mounted at `/widget/v1`: what the embedded Ask AI widget calls from a
 * publisher's page, without any key. Every request names its widget in the path and must come
 * from one of the widget's allowed origins (`Origin`), which gets exact CORS; then per-address and
 * per-widget rate limits, a body size limit and, for answers, the widget's daily answer cap. The
 * answers and articles come from the same answer and search services as the bearer routes,
 * scoped to the widget's AI model and its tenant's data models. Errors: `{message, code}`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { streamSSE } from "hono/streaming";
import type { Deps } from "../../composition.ts";
import { followUpsFor, standaloneQuery } from "../../core/answer/mod.ts";
import type { AnswerContext, Citation } from "../../core/answer/mod.ts";
import { boundedCache } from "../../core/bounded_cache.ts";
import { sha256Hex } from "../../core/crypto.ts";
import { hasIdFormat } from "../../core/ids.ts";
import { describeError } from "../../core/log.ts";
import { isUrlQuery, type SearchResult } from "../../core/search/mod.ts";
import type { LinkPlacement } from "../../core/links/mod.ts";
import type { Widget } from "../../core/store/mod.ts";
import {
  chipOf,
  dailyCapReached,
  originNotAllowed,
  type PublicWidgetConfig,
  publicWidgetConfig,
  recommendationsDataModel,
  recommendationsDisabled,
  scopedModel,
  splitAnswer,
  startsSourcesBlock,
  widgetAllowsOrigin,
  type WidgetCitation,
  widgetCitations,
  widgetErrors,
  widgetNotFound,
} from "../../core/widget/mod.ts";
import type { AppEnv, WidgetEnv } from "../env.ts";
import { toAppError } from "../errors.ts";
import { familyApp } from "../family.ts";
import { bodyReader, type BodyRejection } from "../middleware/body.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { clientAddress } from "../storefront/client_address.ts";
import { widgetRateLimits } from "./limits.ts";

/** Longest question the widget may ask. */
export const MAX_WIDGET_QUERY_CHARS = 500;
/** Most earlier turns a question may carry. */
export const MAX_HISTORY_TURNS = 6;
const MAX_HISTORY_CHARS = 2000;
// The analytics event token: a session id must be storable on the reader's click.
const SESSION_ID = /^[A-Za-z0-9._:@\/+-]{1,128}$/;
// Widgets are read on every request: kept briefly (a configuration change shows within this long).
const WIDGET_CACHE_MS = 5_000;
const CONFIG_MAX_AGE_S = 60;
const PREFLIGHT_MAX_AGE_S = 600;
const EXPOSED_HEADERS = "Retry-After, ETag, X-Request-Id, RateLimit, RateLimit-Policy";

const errorSchema = z.object({ message: z.string(), code: z.string() }).openapi("WidgetError");
const errorBody = (description: string) => ({ description, content: { "application/json": { schema: errorSchema } } });
const refusals = {
  403: errorBody("`origin_not_allowed`: `Origin` missing or not one of the widget's allowed origins"),
  404: errorBody("`widget_not_found` (the id is never echoed)"),
  429: errorBody("`rate_limited` (per client address or per widget), with `Retry-After`"),
};
const wdParam = z.object({
  wd: z.string().openapi({ param: { name: "wd", in: "path" }, example: "wd_01jd3k6q8s4m0v2x9c7b5n1r3t" }),
});
const httpUrl = z.string().max(2048).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}, { error: "must be an absolute http(s) URL" });

const configSchema = z.object({
  widget_id: z.string(),
  title: z.string(),
  placeholder: z.string(),
  mode: z.enum(["inline", "docked"]),
  position: z.enum(["bottom-right", "bottom-left"]),
  theme: z.enum(["light", "dark", "auto"]),
  colors: z.object({ accent: z.string(), background: z.string().optional(), text: z.string().optional() }),
  prompts: z.array(z.object({ id: z.string(), text: z.string() })),
  sponsored: z.array(z.object({
    campaign_id: z.string(),
    prompt_id: z.string(),
    text: z.string(),
    creative_id: z.string().optional(),
  })).openapi({ description: "Prompts of the active sponsored campaigns attached to the widget" }),
  recommendations: z.object({ enabled: z.boolean() }),
  attribution: z.object({ show_powered_by: z.boolean(), text: z.string(), url: z.string() }),
  deployment_type: z.string(),
}).openapi("WidgetConfig");

const configRoute = createRoute({
  method: "get",
  path: "/{wd}/config",
  tags: ["widget"],
  summary: "The widget's public configuration",
  description: "What the loader draws: title, placeholder, mode, colours, suggested and sponsored prompts, " +
    "attribution. Holds no secret. Cacheable (`Cache-Control: public, max-age=60`, `ETag`; `If-None-Match` " +
    "answers 304). Rate limited per client address.",
  request: { params: wdParam },
  responses: {
    200: { description: "The configuration", content: { "application/json": { schema: configSchema } } },
    304: { description: "Unchanged since the `ETag` in `If-None-Match`" },
    ...refusals,
  },
});

const eventToken = (max: number) =>
  z.string().max(max, { error: `must be at most ${max} characters` }).regex(SESSION_ID, {
    error: "must be letters, digits and . _ : @ / + -",
  });
// The embed's attributes: the clicks of the links an answer or a recommendation shows carry them,
// like the widget's own events, so they count under the same analytics filters.
const placementFields = {
  placement_id: eventToken(128).optional().openapi({ description: "The embed's `placement-id`" }),
  deployment_type: eventToken(64).optional().openapi({
    description: "The embed's `deployment-type` (default: the widget's)",
  }),
  creative_id: eventToken(128).optional().openapi({ description: "Ad macro `creative-id`" }),
  line_item_id: eventToken(128).optional().openapi({ description: "Ad macro `line-item-id`" }),
  publisher_id: eventToken(128).optional().openapi({ description: "Ad macro `publisher-id`" }),
};
const interactionTypes = ["free_form", "suggested_prompt", "sponsored_prompt", "automated_followup"] as const;
const askSchema = z.object({
  query: z.string().trim().min(1, { error: "must not be empty" }).max(MAX_WIDGET_QUERY_CHARS, {
    error: `must be at most ${MAX_WIDGET_QUERY_CHARS} characters`,
  }),
  session_id: z.string().regex(SESSION_ID, { error: "must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ / + -" }),
  interaction_type: z.enum(interactionTypes).default("free_form"),
  history: z.array(z.object({
    role: z.enum(["user", "assistant"]),
    content: z.string().max(MAX_HISTORY_CHARS, { error: `must be at most ${MAX_HISTORY_CHARS} characters` }),
  })).max(MAX_HISTORY_TURNS, { error: `must hold at most ${MAX_HISTORY_TURNS} turns` }).optional(),
  page_url: httpUrl.optional(),
  ...placementFields,
}).openapi("WidgetAskRequest");

const citationSchema = z.object({
  n: z.number().int().openapi({ description: "The number the answer text cites it by (`[n]`)" }),
  title: z.string(),
  site: z.string(),
  url: z.string().openapi({ description: "Our tracking link (`/r/...`): records the click once, then redirects" }),
});
const askResponse = z.object({
  answer: z.string(),
  citations: z.array(citationSchema),
  related_questions: z.array(z.string()).openapi({ description: "Three follow-up questions, each ending with `?`" }),
  request_id: z.string(),
}).openapi("WidgetAnswer");

const askRoute = createRoute({
  method: "post",
  path: "/{wd}/ask",
  tags: ["widget"],
  summary: "Answer a reader's question through the widget's AI model",
  description: "With `Accept: text/event-stream`: server-sent events `token` (`{text}`, the answer in pieces, as " +
    "soon as there is text), `citations` (`{citations}`), `related` (`{questions}`: three follow-ups), then `done` " +
    "(`{answer, request_id}`), or `error` (`{message, code}`) if it fails mid-way. Otherwise one JSON body. A short " +
    "follow-up is made standalone from `history`. Counts one answer against the widget's daily cap. The widget " +
    "records the `query` event of an answer it received (POST /v1/events); this route records the question only " +
    "when the reader leaves before the whole answer reached them.",
  request: {
    params: wdParam,
    body: { required: true, content: { "application/json": { schema: askSchema } } },
  },
  responses: {
    200: {
      description: "The answer",
      content: {
        "application/json": { schema: askResponse },
        "text/event-stream": { schema: z.string().openapi({ description: "SSE: token..., citations, related, done" }) },
      },
    },
    ...refusals,
    413: errorBody("`body_too_large`"),
    422: errorBody("`invalid_request`: a field is missing or wrong"),
    429: errorBody("`rate_limited` (per address or per widget) or `daily_cap_reached`, with `Retry-After`"),
    502: errorBody("The AI provider failed"),
    503: errorBody("`widget_misconfigured`: the widget's AI model is gone"),
  },
});

const recommendSchema = z.object({
  page_url: httpUrl.optional().openapi({ description: "The page the widget is on" }),
  query: z.string().trim().max(MAX_WIDGET_QUERY_CHARS, {
    error: `must be at most ${MAX_WIDGET_QUERY_CHARS} characters`,
  }).optional(),
  limit: z.number().int().min(1).max(10).default(3),
  session_id: z.string().regex(SESSION_ID, { error: "must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ / + -" })
    .optional().openapi({ description: "The reader's session: clicks on the results join it" }),
  ...placementFields,
}).openapi("WidgetRecommendRequest");
const recommendResponse = z.object({
  results: z.array(z.object({
    title: z.string(),
    site: z.string(),
    url: z.string().openapi({ description: "Our tracking link" }),
    image_url: z.string().nullable().openapi({ description: "Our `/img` link; append `&w=&h=` to resize" }),
    published_at: z.string(),
  })),
}).openapi("WidgetRecommendations");

const recommendRoute = createRoute({
  method: "post",
  path: "/{wd}/recommend",
  tags: ["widget"],
  summary: "Related articles for the page the widget is on, or for a question",
  description: "From the widget's recommendations data model. When `page_url` is an article of that data model, " +
    "articles like it (never the page itself, and the page is not fetched); otherwise articles for `query`, else " +
    "for the words of the page's address, newest first. The service never fetches the page.",
  request: {
    params: wdParam,
    body: { required: true, content: { "application/json": { schema: recommendSchema } } },
  },
  responses: {
    200: { description: "Related articles", content: { "application/json": { schema: recommendResponse } } },
    ...refusals,
    404: errorBody("`widget_not_found`, or `recommendations_disabled`"),
    413: errorBody("`body_too_large`"),
    422: errorBody("`invalid_request`"),
  },
});

/** The widget routes word body problems as 422 `invalid_request` (413 stays `body_too_large`). */
const widgetBodyRejection: BodyRejection = (p) =>
  p.kind === "media_type"
    ? widgetErrors.body_media_type()
    : p.kind === "syntax"
    ? widgetErrors.body_malformed({ why: p.why })
    : widgetErrors.body_not_object();

type Deps_ = Pick<Deps, "repos" | "answer" | "search" | "config" | "log" | "clock" | "widgetLimits" | "clientKeys">;

/**
 * The widget of the path, read through a short-lived bounded cache (misses too), so a flood of
 * made-up ids or forged origins costs a map lookup, not a store read.
 */
function widgetLookup(deps: Deps_) {
  const cache = boundedCache<string, { widget: Widget | null }>({
    max: 10_000,
    ttlMs: WIDGET_CACHE_MS,
    now: () => deps.clock.now().getTime(),
  });
  return async (id: string): Promise<Widget | null> => {
    if (!hasIdFormat("wd", id)) return null;
    const hit = cache.get(id);
    if (hit) return hit.widget;
    const widget = await deps.repos.widgets.get(id);
    cache.set(id, { widget });
    return widget;
  };
}

/**
 * The gate of every widget route: the widget exists (404) and the request's `Origin` is one of
 * its allowed origins (403; nothing else runs, nothing is counted). Answers the CORS preflight of
 * an allowed origin, and gives every response to one exactly that origin and `Vary: Origin`.
 */
function widgetGate(lookup: (id: string) => Promise<Widget | null>): MiddlewareHandler<AppEnv> {
  return async function widgetGate(c, next) {
    // Every answer depends on Origin, refusals included: caches must keep them apart.
    c.header("Vary", "Origin");
    const widget = await lookup(c.req.param("wd") ?? "");
    if (!widget) throw widgetNotFound();
    const origin = c.req.header("origin");
    if (!widgetAllowsOrigin(widget, origin)) throw originNotAllowed();
    c.set("widget", widget);
    if (c.req.method === "OPTIONS") {
      c.res = c.body(null, 204, {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
        "Access-Control-Allow-Headers": "content-type",
        "Access-Control-Max-Age": String(PREFLIGHT_MAX_AGE_S),
        "Vary": "Origin",
      });
      return;
    }
    await next();
    c.res.headers.set("Access-Control-Allow-Origin", origin);
    c.res.headers.set("Access-Control-Expose-Headers", EXPOSED_HEADERS);
    if (!c.res.headers.get("vary")?.includes("Origin")) c.res.headers.append("Vary", "Origin");
  };
}

/** Takes one answer of the widget's daily allowance, or refuses with 429 `daily_cap_reached`. */
async function takeDailyAnswer(deps: Deps_, widget: Widget): Promise<void> {
  const cap = widget.dailyAnswerCap ?? deps.widgetLimits.defaultDailyCap;
  const r = await deps.widgetLimits.dailyCap.take(widget.id, cap);
  if (!r.allowed) throw dailyCapReached(r.retryAfterS);
}

/** The placement fields of a request, with the widget's deployment type by default. */
function placementOf(
  input: {
    placement_id?: string;
    deployment_type?: string;
    creative_id?: string;
    line_item_id?: string;
    publisher_id?: string;
  },
  widget: Widget,
): LinkPlacement {
  return {
    placement_id: input.placement_id,
    deployment_type: input.deployment_type ?? widget.deploymentType,
    creative_id: input.creative_id,
    line_item_id: input.line_item_id,
    publisher_id: input.publisher_id,
  };
}

/** Words of a page address's path, as a query: `/2026/11/storm-floods-roads` -> `storm floods roads`. */
function addressWords(pageUrl: string): string {
  let path = new URL(pageUrl).pathname;
  try {
    path = decodeURIComponent(path);
  } catch { /* a malformed escape: its letters still split into words */ }
  path = path.replace(/\.[a-z0-9]{2,5}$/i, "");
  return path.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1 && !/^\d+$/.test(w)).slice(0, 12).join(" ");
}

/**
 * Mounted at `/widget/v1` (with `mount`, after the widget's asset routes): `GET /{wd}/config`,
 * `POST /{wd}/ask`, `POST /{wd}/recommend`, and their CORS preflights.
 */
export function createWidgetApiRoutes(deps: Deps_) {
  const app = familyApp<WidgetEnv>("widget", deps.log);
  const lookup = widgetLookup(deps);
  const attributionUrl = `${deps.config.baseUrl.replace(/\/+$/, "")}/docs`;
  // A reader's body, when an operator allows one above the small size, counts against its address.
  const body = bodyReader({
    limit: deps.config.widget.maxBodyBytes,
    object: true,
    reject: widgetBodyRejection,
    holder: (c) => limitAddress(c, deps.config.trustProxy),
  });

  app.use("/:wd/*", widgetGate(lookup));
  // Preflights were answered by the gate: only real requests are counted.
  app.use("/:wd/config", ...widgetRateLimits(deps, { perWidget: false }));
  for (const path of ["/:wd/ask", "/:wd/recommend"]) {
    app.use(path, ...widgetRateLimits(deps, { perWidget: true }), body);
  }

  // Building a configuration reads the tenant's prompts and campaigns: kept as briefly as widgets.
  const configs = boundedCache<string, { config: PublicWidgetConfig; text: string; etag: string }>({
    max: 10_000,
    ttlMs: WIDGET_CACHE_MS,
    now: () => deps.clock.now().getTime(),
  });
  const configOf = async (widget: Widget) => {
    let built = configs.get(widget.id);
    if (!built) {
      const config = await publicWidgetConfig(deps.repos, widget, attributionUrl);
      const text = JSON.stringify(config);
      built = { config, text, etag: `"${(await sha256Hex(text)).slice(0, 32)}"` };
      configs.set(widget.id, built);
    }
    return built;
  };
  app.openapi(configRoute, async (c) => {
    const { text, etag } = await configOf(c.get("widget"));
    const headers = { "ETag": etag, "Cache-Control": `public, max-age=${CONFIG_MAX_AGE_S}` };
    const ifNoneMatch = c.req.header("if-none-match") ?? "";
    if (ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)) {
      return c.body(null, 304, headers) as never;
    }
    return c.body(text, 200, { ...headers, "Content-Type": "application/json; charset=UTF-8" }) as never;
  });

  app.openapi(askRoute, async (c) => {
    // Whether the reader left before the answer reached them. Asked first: Deno makes a request's
    // signal when first asked, and one made after its client left may never abort.
    const reader = c.req.raw.signal;
    const widget = c.get("widget");
    const input = c.req.valid("json");
    const model = await scopedModel(deps.repos, widget);
    await takeDailyAnswer(deps, widget);
    const query = standaloneQuery(input.query, input.history ?? [], MAX_WIDGET_QUERY_CHARS * 2);
    const sender = await deps.clientKeys.of(clientAddress(c, deps.config.trustProxy));
    const chip = input.interaction_type === "suggested_prompt" || input.interaction_type === "sponsored_prompt"
      ? chipOf((await configOf(widget)).config, input.interaction_type, input.query)
      : undefined;
    const context: AnswerContext = {
      tenantId: widget.tenantId,
      requestId: c.env.requestId,
      // The id the widget's own `query` event of this answer gets too: recorded by both, stored once.
      eventId: await deps.clientKeys.answerEventId(widget.id, input.session_id, c.env.requestId),
      widgetId: widget.id,
      sessionId: input.session_id,
      interactionType: input.interaction_type,
      deploymentType: input.deployment_type ?? widget.deploymentType,
      ...(input.placement_id ? { placementId: input.placement_id } : {}),
      adMacros: { creative_id: input.creative_id, line_item_id: input.line_item_id, publisher_id: input.publisher_id },
      ...(input.page_url ? { referringUrl: input.page_url } : {}),
      // The widget sends the `query` event of an answer it received, with the chip it showed.
      recordedBy: "client",
      prompt: input.query,
      ...(sender ? { clientKey: sender } : {}),
      shownText: (message) => splitAnswer(message).text,
      ...(chip ? { chip } : {}),
    };
    const requestId = c.env.requestId;
    // Follow-ups come from the cited articles first, then the others the question retrieves.
    // The answer engine's choice when it has one (model-written with the OpenAI-compatible provider).
    // None written (nor paid for) for a reader already gone.
    const related = (citations: WidgetCitation[]) =>
      followUpsFor(deps.answer, (ids, q, o) => deps.search.retrieve(ids, q, o), model, query, citations, reader);

    if (!/\btext\/event-stream\b/i.test(c.req.header("accept") ?? "")) {
      // A reader who leaves before the whole answer reached them (a closed page, an aborted fetch,
      // while the answer is made or its body written): the service records the question, as the
      // widget would have (AnswerContext.recordedBy).
      context.left = reader;
      const result = await deps.answer.answer(model, query, context);
      const { text, sources } = splitAnswer(result.message);
      const citations = result.kind === "text" ? widgetCitations(result.citations, sources) : [];
      const body = {
        answer: result.kind === "text" ? text : result.message,
        citations,
        related_questions: await related(citations),
        request_id: requestId,
      };
      return c.json(body, 200);
    }
    // Aborted when the reader is seen leaving before the whole stream reached them (streamAnswer).
    const left = new AbortController();
    context.left = left.signal;
    return await streamAnswer(c, deps, {
      reader,
      source: deps.answer.stream ? deps.answer.stream(model, query, context) : (async function* () {
        const result = await deps.answer.answer(model, query, context);
        yield result.message;
        return result.kind === "text" ? result.citations : undefined;
      })(),
      related,
      left,
    }) as never;
  });

  app.openapi(recommendRoute, async (c) => {
    // Whether the reader left before the articles came back (then shown to nobody). Asked first:
    // Deno makes a request's signal when first asked, and one made after its client left may never abort.
    const reader = c.req.raw.signal;
    const widget = c.get("widget");
    const input = c.req.valid("json");
    const model = await scopedModel(deps.repos, widget);
    const dmId = recommendationsDataModel(widget, model.groundingDataModelIds);
    const dm = dmId ? await deps.repos.dataModels.getForTenant(widget.tenantId, dmId) : null;
    if (!dm) throw recommendationsDisabled();
    if (input.query && isUrlQuery(input.query)) {
      // A public route never makes the service fetch a page: a URL is not a question.
      throw widgetErrors.query_is_url();
    }
    const page = input.page_url ? await deps.search.articleByUrl(dm.id, input.page_url) : null;
    const text = page
      ? `${page.title}. ${page.summary ?? ""}`.slice(0, 2000)
      : input.query || (input.page_url ? addressWords(input.page_url) : "") || dm.name;
    // Not the page itself (known by URL, or by its headline when the page is not in the data model),
    // and one article per headline (a story syndicated to several sites is one recommendation).
    const headline = (t: string | undefined) => (t ?? "").trim().toLowerCase().replace(/\s+/g, " ");
    const own = headline(page?.title ?? input.query);
    const shown = (found: SearchResult[]) => {
      const seen = new Set<string>();
      return found.filter((r) => {
        const h = headline(r.title);
        if ((page && r.url === page.url) || (h && h === own) || seen.has(h)) return false;
        seen.add(h);
        return true;
      }).slice(0, input.limit);
    };
    const sender = await deps.clientKeys.of(clientAddress(c, deps.config.trustProxy));
    const response = await deps.search.recommend(dm, {
      query: text,
      // Room for the page itself and syndicated copies, which `shown` leaves out.
      similarity_top_k: input.limit + 4,
      num_results: input.limit + 4,
      search_algorithm: page || input.query ? "semantic" : "most_recent",
    }, {
      tenantId: widget.tenantId,
      requestId: c.env.requestId,
      widgetId: widget.id,
      ...(input.session_id ? { sessionId: input.session_id } : {}),
      placement: placementOf(input, widget),
      ...(sender ? { clientKey: sender } : {}),
      // Only what the reader is shown counts as an impression: nothing, for a reader already gone.
      left: reader,
      select: shown,
    });
    // Idempotent on what the engine kept; a Search that ignores `select` answers the whole page.
    const results = shown(response.response.results)
      .map((r) => ({
        title: r.title ?? "",
        site: r.site ?? r.site_domain ?? "",
        url: r.source_url ?? "",
        image_url: r.image_url ?? null,
        published_at: r.pubdate ?? "",
      }));
    return c.json({ results }, 200);
  });
  return app;
}

/**
 * Streams an answer as the widget's server-sent events. The first piece is awaited before the
 * 200 is committed, so an early failure (provider down, no model) still gets its status and
 * `{message, code}` body; later failures end the stream with an `error` event.
 */
async function streamAnswer(
  c: Context<WidgetEnv>,
  deps: Deps_,
  { reader, source, related, left }: {
    /** The request's signal, asked for before the answer was made. */
    reader: AbortSignal;
    source: AsyncGenerator<string, Citation[] | void>;
    related: (citations: WidgetCitation[]) => Promise<string[]>;
    /**
     * Aborted when the reader is seen leaving before the whole stream reached them (the answer's
     * AnswerContext.left): the stream cancelled, or the request's signal, also once `done` was written.
     */
    left: AbortController;
  },
): Promise<Response> {
  const chunks = source[Symbol.asyncIterator]();
  // A leaving seen after `done` was written counts too (the request's signal may tell only once the
  // stream is closed): whether `done` reached the widget the service cannot tell, so it records the
  // question, under the id the widget's own `query` event of it gets (AnswerContext.eventId): one event.
  // Listened for before the first piece: a reader who left before any text, the provider then
  // failing, asked a question all the same.
  const leave = () => left.abort();
  reader.addEventListener("abort", leave, { once: true });
  const first = await chunks.next();
  const requestId = c.env.requestId;
  return streamSSE(c, async (sse) => {
    // Before the answer generator is ended, so that it records what it had.
    sse.onAbort(() => {
      leave();
      void chunks.return?.(undefined);
    });
    // A reader who left while the first piece was awaited may get no cancel of this stream (Deno
    // writes it to the closed connection without an error): the request's signal tells then.
    const gone = () => sse.aborted || reader.aborted;
    let shown = "";
    let sources = "";
    try {
      let r = first;
      for (; !r.done; r = await chunks.next()) {
        if (reader.aborted) {
          leave();
          await chunks.return?.(undefined);
          return;
        }
        // The sources block (and anything after it) is the citations' business, not the text's.
        if (sources || startsSourcesBlock(r.value)) {
          sources += r.value;
          continue;
        }
        if (!r.value) continue;
        shown += r.value;
        await sse.writeSSE({ event: "token", data: JSON.stringify({ text: r.value }) });
      }
      // A reader gone mid-answer gets no follow-ups written for nobody.
      if (gone()) return leave();
      const citations = widgetCitations(r.value ?? [], sources);
      await sse.writeSSE({ event: "citations", data: JSON.stringify({ citations }) });
      await sse.writeSSE({ event: "related", data: JSON.stringify({ questions: await related(citations) }) });
      await sse.writeSSE({ event: "done", data: JSON.stringify({ answer: shown, request_id: requestId }) });
      // A write to a stream the reader left does not fail: `aborted` tells.
      if (gone()) leave();
    } catch (err) {
      const { appError, unexpected } = toAppError(err, "widget");
      deps.log[unexpected ? "error" : "warn"]("widget answer stream failed", {
        request_id: requestId,
        code: appError.code,
        error: describeError(unexpected ? err : appError.cause ?? err),
      });
      await sse.writeSSE({
        event: "error",
        data: JSON.stringify({ message: appError.message, code: appError.code }),
      });
    }
  });
}
