/**
 * `POST /app/datamodel/{dm_id}` (mounted at `/app/datamodel`): the recommendations route of the old
 * docs and the Go SDK. Same key, same body and the same orchestration as `POST /app/v2/search`;
 * the answer is the bare `{"results": [...]}` those clients read.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { idPattern } from "../core/ids.ts";
import { searchRequestSchema } from "../core/search/mod.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { perApiKeyLimit, RATE_LIMITED_DOC } from "./middleware/rate_limit.ts";
import { bodyReader } from "./middleware/body.ts";
import { tenantDataModel } from "./middleware/data_model.ts";
import type { DataModelEnv } from "./env.ts";
import { searchResponseSchema } from "./search.ts";
import { resultsJson } from "./search_json.ts";

const DM_ID_RE = idPattern("dm");

const route = createRoute({
  method: "post",
  path: "/{dm_id}",
  tags: ["search"],
  summary: "Recommend articles from a data model (legacy path of the old docs and the Go SDK)",
  description: "The same request and ranking as `POST /app/v2/search?data_model_id=...`; answers " +
    "`{results}` without the `status` / `response` envelope.",
  security: [{ bearerAuth: [] }],
  request: {
    params: z.object({
      dm_id: z.string().regex(DM_ID_RE, { error: "must start with dm_ followed by letters and digits" }).openapi({
        param: { name: "dm_id", in: "path" },
        example: "dm_01jd3k6q8s4m0v2x9c7b5n1r3t",
      }),
    }),
    body: {
      required: true,
      content: { "application/json": { schema: searchRequestSchema.omit({ search_type: true }) } },
    },
  },
  responses: {
    200: {
      description: "Recommended articles",
      content: {
        "application/json": { schema: z.object({ results: searchResponseSchema.shape.response.shape.results }) },
      },
    },
    401: { description: "Missing or malformed API key" },
    403: { description: "Unknown or revoked API key" },
    404: { description: "Unknown data model, or one of another tenant" },
    429: { description: RATE_LIMITED_DOC },
    422: { description: "A field is empty, of the wrong type or out of range; the message names it" },
    503: { description: "A URL query found page analysis busy; `Retry-After` says when to try again" },
  },
});

/** The legacy recommendations sub-app. */
export function createDatamodelLegacyRoutes(
  deps: Pick<Deps, "apiKeys" | "repos" | "search" | "config" | "log" | "searchLimiter">,
) {
  const app = familyApp<DataModelEnv>("message", deps.log);
  app.use(
    "/:dm_id",
    apiKeyAuth(deps.apiKeys),
    perApiKeyLimit(deps.searchLimiter),
    bodyReader({ limit: deps.config.maxBodyBytes }),
    tenantDataModel({ repos: deps.repos, from: { param: "dm_id" } }),
  );
  app.openapi(route, async (c) => {
    // Asked first (Deno makes a request's signal on first use): a page its caller left records no impressions.
    const left = c.req.raw.signal;
    const out = await deps.search.recommend(c.get("dataModel"), c.req.valid("json"), {
      tenantId: c.get("tenantId"),
      requestId: c.env.requestId,
      // One search per request: a resend with the same X-Request-Id is stored once.
      idempotencyKey: c.env.requestId,
      left,
    });
    // Written in pieces, as the other search routes: 1,000 full texts in one JSON.stringify held the loop.
    const results = out.response.results;
    return await resultsJson(c, { results }, ["results"], results) as never;
  });
  return app;
}
