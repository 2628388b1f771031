import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../composition.ts";
import { AppError } from "../core/errors.ts";
import { idFormatMessage, idPattern } from "../core/ids.ts";
import { SEARCH_ALGORITHMS, SEARCH_VERSION_DOC, SEARCH_VERSIONS, searchRequestSchema } from "../core/search/mod.ts";
import type { AppEnv, DataModelEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { perApiKeyLimit, RATE_LIMITED_DOC } from "./middleware/rate_limit.ts";
import { webBotIdentity } from "./middleware/web_bot_auth.ts";
import { bodyReader } from "./middleware/body.ts";
import { tenantDataModel } from "./middleware/data_model.ts";
import { describeIssue, validationHookFor } from "./validation.ts";
import { searchJson } from "./search_json.ts";

const resultSchema = z.object({
  author: z.string().optional(),
  image_url: z.string().optional().openapi({ description: "Image URL; append `&w=<width>&h=<height>` to resize" }),
  preview_content: z.string().optional(),
  pubdate: z.string().optional(),
  pubdate_unix: z.number().int().optional(),
  score: z.number().optional(),
  site: z.string().optional(),
  site_domain: z.string().optional(),
  source_url: z.string().optional().openapi({ description: "Tracking URL" }),
  summary: z.string().optional(),
  title: z.string().optional(),
  url: z.string().optional(),
  explain: z.object({
    matched_terms: z.array(z.string()).openapi({ description: "Query terms (stemmed) the article contains" }),
    lexical_score: z.number().openapi({ description: "Raw BM25 score for the query terms" }),
    semantic_score: z.number().openapi({ description: "Cosine similarity with the query (0 without vectors)" }),
    age_days: z.number().openapi({ description: "Age at query time, in days" }),
    trending_keyword: z.string().nullable().openapi({ description: "`trending`: the keyword it matched best" }),
    ref_quota: z.boolean().openapi({ description: "Placed by the `num_articles_ref` quota" }),
  }).optional().openapi({ description: "Present when the request set `explain: true`" }),
  highlights: z.array(z.object({
    text: z.string().openapi({
      description: "Whole sentences of the body (cut at a word, with an ellipsis, when one is longer than the budget)",
    }),
    score: z.number().openapi({ description: "In [0, 1]: how well the passage matches the query's terms and vector" }),
  })).optional().openapi({ description: "Present when the request set `highlights`; in document order" }),
  text: z.string().optional().openapi({
    description: "Present when the request set `contents: {text: true}`: the article body as clean Markdown",
  }),
}).openapi("SearchResult");

/** SearchResponse (spec 2.2). */
export const searchResponseSchema = z.object({
  status: z.string(),
  response: z.object({ query: z.string(), results: z.array(resultSchema), message: z.string() }),
}).openapi("SearchResponse");

const requestBody = searchRequestSchema.omit({ search_type: true }).extend({
  search_algorithm: z.enum(SEARCH_ALGORITHMS).optional().openapi({
    description: "semantic (default), most_recent, most_recent_semantic or trending; see the README",
  }),
}).openapi("SearchRequest");

const messageBody = { "application/json": { schema: z.object({ message: z.string() }) } };

const searchRoute = createRoute({
  method: "post",
  path: "/",
  tags: ["search"],
  summary: "Recommend articles from a data model",
  security: [{ bearerAuth: [] }],
  request: {
    query: z.object({
      data_model_id: z.string({ error: "data_model_id is required" }).regex(idPattern("dm"), {
        error: idFormatMessage("data_model_id", "dm"),
      }).openapi({
        example: "dm_01jd3k6q8s4m0v2x9c7b5n1r3t",
      }),
      search_version: z.enum(Object.keys(SEARCH_VERSIONS) as [string, ...string[]], {
        error: `search_version must be one of ${Object.keys(SEARCH_VERSIONS).join(", ")}`,
      }).optional().openapi({ description: SEARCH_VERSION_DOC }),
    }),
    body: { required: true, content: { "application/json": { schema: requestBody } } },
  },
  responses: {
    200: { description: "Recommended articles", content: { "application/json": { schema: searchResponseSchema } } },
    400: {
      description: "data_model_id missing or malformed, or search_version unknown (text/plain), or malformed JSON",
    },
    401: { description: "Missing or malformed API key" },
    403: { description: "Unknown or revoked API key" },
    404: { description: "Unknown data model, or one of another tenant", content: messageBody },
    429: { description: RATE_LIMITED_DOC, content: messageBody },
    422: {
      description: "A field is empty, of the wrong type or out of range; the message names it",
      content: messageBody,
    },
    503: {
      description: "A URL query found page analysis busy (its queue is full); `Retry-After` says when to try again",
      content: messageBody,
    },
  },
});

// Query problems on this route are 400 text/plain (the spec's shape for a missing data_model_id).
function searchHook(
  result: { success: true } | { success: false; error: z.ZodError; target: string },
  c: Context<AppEnv>,
): void {
  if (!result.success && result.target === "query") {
    throw new AppError(
      "bad_request",
      "invalid_query",
      describeIssue(result.error.issues[0]!).replace(/^(data_model_id|search_version): /, ""),
      {
        plain: true,
      },
    );
  }
  messageHook(result, c);
}
const messageHook = validationHookFor("message");

/** Mounted at `/app/v2/search`: `POST`, bearer-key article recommendations (spec 4.1). */
export function createSearchRoutes(
  deps: Pick<Deps, "apiKeys" | "repos" | "search" | "config" | "log" | "webBotAuth" | "searchLimiter">,
) {
  const app = familyApp<DataModelEnv>("message", deps.log);
  // Web Bot Auth after the key: an unauthenticated request makes us fetch no key directory.
  app.use(
    "/",
    apiKeyAuth(deps.apiKeys),
    perApiKeyLimit(deps.searchLimiter),
    webBotIdentity(deps.webBotAuth),
    bodyReader({ limit: deps.config.maxBodyBytes }),
    tenantDataModel({ repos: deps.repos, from: { query: "data_model_id" } }),
  );
  app.openapi(searchRoute, async (c) => {
    // Whether the caller left before the results reached them (then shown to nobody). Asked first:
    // Deno makes a request's signal when first asked, and one made after its client left may never abort.
    const left = c.req.raw.signal;
    const { search_version: searchVersion } = c.req.valid("query");
    const body = c.req.valid("json");
    const out = await deps.search.recommend(c.get("dataModel"), body, {
      tenantId: c.get("tenantId"),
      requestId: c.env.requestId,
      // One search per request: a balancer's retry (same X-Request-Id) is stored once.
      idempotencyKey: c.env.requestId,
      // A Web Bot Auth agent (routes/middleware/web_bot_auth.ts) is named in agent readership.
      caller: c.get("caller"),
      searchVersion,
      left,
    });
    return await searchJson(c, out) as never;
  }, searchHook as never);
  return app;
}
