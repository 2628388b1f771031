import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { articleWithText, MAX_INGEST_ITEMS, MAX_LISTED_CATEGORIES, MAX_TEXT_CHARACTERS } from "../core/search/mod.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { bodyReader } from "./middleware/body.ts";
import { perApiKeyLimit, RATE_LIMITED_DOC } from "./middleware/rate_limit.ts";
import { tenantDataModel } from "./middleware/data_model.ts";
import type { DataModelEnv } from "./env.ts";
import { serveTenantList } from "./resources.ts";
import { idSchema } from "./validation.ts";
import { createSourceRoutes } from "./sources.ts";

const items = z.array(z.unknown(), { error: "body must be an array of articles or {articles: [...]}" })
  .max(MAX_INGEST_ITEMS, { error: `at most ${MAX_INGEST_ITEMS} articles per call` });
// `{articles: [...]}` and a bare array are both accepted; the wrapper is unwrapped before checking.
const bodySchema = z.preprocess(
  (
    v,
  ) => (v && typeof v === "object" && !Array.isArray(v) && "articles" in v ? (v as { articles: unknown }).articles : v),
  items,
).openapi({
  description: `Up to ${MAX_INGEST_ITEMS} articles, each validated on its own: url (required), title (required), ` +
    "author, site, site_domain, pubdate (ISO 8601, RFC 2822 or unix seconds), image, preview_content, summary " +
    "(extractive when omitted), body, categories (or tags: up to 20 section or topic labels)",
});

const reportSchema = z.object({
  received: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  failed: z.number().int(),
  results: z.array(z.object({
    index: z.number().int(),
    status: z.enum(["created", "updated", "error"]),
    id: z.string().optional(),
    url: z.string().optional(),
    error: z.string().optional(),
  })),
}).openapi("IngestReport");

const upsertRoute = createRoute({
  method: "post",
  path: "/{data_model_id}/articles",
  tags: ["articles"],
  summary: "Bulk upsert articles into one of the tenant's data models (idempotent on url)",
  security: [{ bearerAuth: [] }],
  request: {
    params: z.object({ data_model_id: idSchema("dm") }),
    body: { required: true, content: { "application/json": { schema: bodySchema } } },
  },
  responses: {
    200: {
      description: "Per-item outcome; invalid items are reported and skipped",
      content: { "application/json": { schema: reportSchema } },
    },
    401: { description: "Missing or malformed API key" },
    403: { description: "Unknown or revoked API key" },
    404: { description: "Unknown data model, or one of another tenant (the id is not echoed)" },
    422: { description: "Malformed data_model_id, or the body is not a list of at most 1,000 items" },
  },
});

const categoriesRoute = createRoute({
  method: "get",
  path: "/{data_model_id}/categories",
  tags: ["articles"],
  summary: "The most used categories of a data model's articles (values for the search `categories` filter)",
  security: [{ bearerAuth: [] }],
  request: {
    params: z.object({ data_model_id: idSchema("dm") }),
    query: z.object({
      limit: z.coerce.number({ error: "limit must be a number" }).int({ error: "limit must be a whole number" })
        .min(1, { error: "limit must be at least 1" }).max(MAX_LISTED_CATEGORIES, {
          error: `limit must be at most ${MAX_LISTED_CATEGORIES}`,
        }).optional().openapi({ description: `How many (default 20, at most ${MAX_LISTED_CATEGORIES})` }),
    }),
  },
  responses: {
    200: {
      description: "Categories, most used first, with how many live articles carry each",
      content: {
        "application/json": {
          schema: z.object({
            data_model_id: z.string(),
            categories: z.array(z.object({ category: z.string(), count: z.number().int() })),
          }).openapi("DataModelCategories"),
        },
      },
    },
    401: { description: "Missing or malformed API key" },
    403: { description: "Unknown or revoked API key" },
    404: { description: "Unknown data model, or one of another tenant" },
    422: { description: "Malformed data_model_id or limit" },
    429: { description: RATE_LIMITED_DOC },
  },
});

/** An article with its text (core/search/text/full_text.ts). */
const articleTextSchema = z.object({
  id: z.string(),
  url: z.string(),
  title: z.string(),
  author: z.string().optional(),
  site: z.string(),
  site_domain: z.string(),
  pubdate: z.string(),
  pubdate_unix: z.number().int(),
  categories: z.array(z.string()).optional(),
  summary: z.string(),
  text: z.string().openapi({ description: "The article body as clean Markdown (headings, lists, links kept)" }),
}).openapi("ArticleText");

const articleRoute = createRoute({
  method: "get",
  path: "/{data_model_id}/article",
  tags: ["articles"],
  summary: "One article of a data model by URL, with its full text as clean Markdown",
  security: [{ bearerAuth: [] }],
  request: {
    params: z.object({ data_model_id: idSchema("dm") }),
    query: z.object({
      url: z.string({ error: "url is required" }).max(2048, { error: "url must be at most 2048 characters" })
        .openapi({ description: "The article URL (as search results give it)" }),
      max_characters: z.coerce.number({ error: "max_characters must be a number" }).int({
        error: "max_characters must be a whole number",
      }).min(1, { error: "max_characters must be at least 1" }).max(MAX_TEXT_CHARACTERS, {
        error: `max_characters must be at most ${MAX_TEXT_CHARACTERS}`,
      }).optional().openapi({ description: `Most characters of the text (default ${MAX_TEXT_CHARACTERS})` }),
    }),
  },
  responses: {
    200: {
      description: "The article",
      content: { "application/json": { schema: articleTextSchema } },
    },
    401: { description: "Missing or malformed API key" },
    403: { description: "Unknown or revoked API key" },
    404: { description: "Unknown data model or one of another tenant, or no article at that URL" },
    422: { description: "Malformed data_model_id, url or max_characters" },
    429: { description: RATE_LIMITED_DOC },
  },
});

/**
 * Mounted at `/v1/data-models`: `GET /` lists the tenant's data models, `POST /{dm}/articles` is the
 * authenticated bulk ingest for the owning tenant; sources and retention come from routes/sources.ts.
 */
export function createDataModelRoutes(
  deps: Pick<
    Deps,
    "apiKeys" | "repos" | "search" | "config" | "log" | "sources" | "searchLimiter" | "sourceCheckLimiter" | "clock"
  >,
) {
  const app = familyApp<DataModelEnv>("message", deps.log);
  app.use("*", apiKeyAuth(deps.apiKeys));
  // The data model after the body reader: a body that cannot be read is answered first, as before.
  const dataModel = tenantDataModel({ repos: deps.repos, from: { param: "data_model_id" } });
  app.use("/:data_model_id/articles", bodyReader({ limit: deps.config.articlesMaxBodyBytes }), dataModel);
  // Agents' reads count in the bucket of the key's searches.
  const readLimit = perApiKeyLimit(deps.searchLimiter);
  app.use("/:data_model_id/categories", readLimit, dataModel);
  app.use("/:data_model_id/article", readLimit, dataModel);
  serveTenantList(app, "/", "data-models", deps.repos.dataModels);
  app.openapi(upsertRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(await deps.search.ingest(c.get("dataModel"), body), 200);
  });
  app.openapi(categoriesRoute, async (c) => {
    const dm = c.get("dataModel");
    const categories = await deps.search.topCategories(dm.id, c.req.valid("query").limit ?? 20);
    return c.json({ data_model_id: dm.id, categories }, 200);
  });
  app.openapi(articleRoute, async (c) => {
    const { url, max_characters: max } = c.req.valid("query");
    // The owning tenant always reads its own full text (the licence binds other callers).
    return c.json(await articleWithText(deps.search, c.get("dataModel"), url, { clock: deps.clock, max }), 200);
  });
  app.route("/", createSourceRoutes(deps));
  return app;
}
