/**
 * Content sources and retention of a data model, under `/v1/data-models`:
 *
 *   POST   /{data_model_id}/sources               register {type, url, interval_s, fetch_pages?}
 *   GET    /{data_model_id}/sources               list, each with its polling status
 *   GET    /{data_model_id}/sources/{source_id}   one source with its status
 *   DELETE /{data_model_id}/sources/{source_id}   stop polling it (its articles stay)
 *   GET    /{data_model_id}/retention             {max_age_days}
 *   PUT    /{data_model_id}/retention             {max_age_days: 1..3650 | null}
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { notFound } from "../core/errors.ts";
import { MAX_RETENTION_DAYS, SOURCE_KINDS, sourceInputSchema, type SourceLimits } from "../core/sources/mod.ts";
import type { MiddlewareHandler } from "hono";
import type { AppEnv, DataModelEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { bodyReader } from "./middleware/body.ts";
import { tenantDataModel } from "./middleware/data_model.ts";
import { perApiKeyLimit } from "./middleware/rate_limit.ts";
import { idSchema } from "./validation.ts";
import { oncePerKey } from "./once_per_key.ts";

const bearer = [{ bearerAuth: [] }];
const dmParam = z.object({ data_model_id: idSchema("dm") });
const sourceParams = dmParam.extend({ source_id: z.string().max(100) });
const errors = {
  401: { description: "Missing or malformed API key" },
  403: { description: "Unknown or revoked API key" },
  404: { description: "Unknown data model (or source), or one of another tenant (the id is not echoed)" },
  422: { description: "Malformed data_model_id: the message names the field and its format" },
};

const sourceSchema = z.object({
  id: z.string(),
  data_model_id: z.string(),
  type: z.enum(SOURCE_KINDS),
  url: z.string(),
  interval_s: z.number().int(),
  fetch_pages: z.boolean(),
  created_at: z.string(),
  last_polled_at: z.string().nullable(),
  last_ok_at: z.string().nullable(),
  last_status: z.string().nullable().openapi({ description: "ok, not_modified or error" }),
  last_error: z.string().nullable(),
  next_poll_at: z.string(),
  items_added: z.number().int(),
  items_updated: z.number().int(),
  consecutive_failures: z.number().int(),
  etag: z.string().nullable(),
  last_modified: z.string().nullable(),
}).openapi("Source");

const retentionSchema = z.object({
  max_age_days: z.number().int().nullable().openapi({ description: "null: articles are kept forever" }),
}).openapi("Retention");

// Built at import rather than per app (each test world builds one).
const sourceList = z.object({ data: z.array(sourceSchema) });
const retentionInput = z.object({
  max_age_days: z.number({ error: "must be a whole number of days or null" }).int({
    error: "must be a whole number of days or null",
  }).min(1, { error: "must be at least 1" }).max(MAX_RETENTION_DAYS, {
    error: `must be at most ${MAX_RETENTION_DAYS}`,
  }).nullable(),
});

/** The registration body as documented, per interval bounds, built once per process: each app (a test world each) asks again. */
const documentedSourceInput = oncePerKey(
  buildSourceInput,
  (limits: SourceLimits) => `${limits.minIntervalS} ${limits.maxIntervalS}`,
);

function buildSourceInput(limits: SourceLimits) {
  return sourceInputSchema(limits).openapi("SourceInput");
}

/** The sources and retention routes, routed inside the `/v1/data-models` family (routes/data_models.ts). */
export function createSourceRoutes(
  deps: Pick<Deps, "apiKeys" | "repos" | "sources" | "log" | "config" | "sourceCheckLimiter">,
) {
  const app = familyApp<DataModelEnv>("message", deps.log);
  app.use("*", apiKeyAuth(deps.apiKeys));
  // Each registration fetches its URL (the probe), and one that fails stores nothing, so the per-model
  // cap never stops a stream of them: they are counted per API key, refused or not.
  const checkLimit = perApiKeyLimit(deps.sourceCheckLimiter);
  const registrationLimit: MiddlewareHandler<AppEnv> = async function registrationLimit(c, next) {
    if (c.req.method === "POST") return await checkLimit(c, next);
    await next();
  };
  app.use("/:data_model_id/sources", registrationLimit);
  // Only these paths: the articles route in the same family reads its (much larger) body itself.
  // The data model after the body reader: a body that cannot be read is answered first, as before.
  const dataModel = tenantDataModel({ repos: deps.repos, from: { param: "data_model_id" } });
  app.use("/:data_model_id/sources", bodyReader({ limit: 64 * 1024 }), dataModel);
  app.use("/:data_model_id/sources/*", dataModel);
  app.use("/:data_model_id/retention", bodyReader({ limit: 64 * 1024 }), dataModel);
  const limits = deps.sources.limits;
  const inputSchema = documentedSourceInput(limits);

  app.openapi(
    createRoute({
      method: "post",
      path: "/{data_model_id}/sources",
      tags: ["sources"],
      summary: "Register a feed or sitemap; it is checked, then polled every interval_s",
      security: bearer,
      request: {
        params: dmParam,
        body: { required: true, content: { "application/json": { schema: inputSchema } } },
      },
      responses: {
        201: {
          description: "Registered; first poll due now",
          content: { "application/json": { schema: sourceSchema } },
        },
        ...errors,
        409: { description: `At the cap of ${limits.maxPerDataModel} sources, or the URL is already a source` },
        429: {
          description: "`rate limit exceeded`: too many registrations for this API key this minute " +
            "(`SOURCE_CHECKS_PER_MIN`, each one fetches its URL); `Retry-After` says when to try again",
        },
        422: {
          description: "Malformed data_model_id, unknown type, interval out of range, blocked, unreachable or " +
            "unreadable URL",
        },
        503: { description: "The document could not be checked now (its parser's queue is full); see `Retry-After`" },
      },
    }),
    async (c) => {
      return c.json(await deps.sources.add(c.get("dataModel"), c.req.valid("json")), 201);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/{data_model_id}/sources",
      tags: ["sources"],
      summary: "List the data model's sources with their polling status",
      security: bearer,
      request: { params: dmParam },
      responses: {
        200: {
          description: "Sources",
          content: { "application/json": { schema: sourceList } },
        },
        ...errors,
      },
    }),
    async (c) => {
      const dm = c.get("dataModel");
      return c.json({ data: await deps.sources.list(dm) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/{data_model_id}/sources/{source_id}",
      tags: ["sources"],
      summary: "One source with its polling status",
      security: bearer,
      request: { params: sourceParams },
      responses: {
        200: { description: "The source", content: { "application/json": { schema: sourceSchema } } },
        ...errors,
      },
    }),
    async (c) => {
      const { source_id } = c.req.valid("param");
      const found = (await deps.sources.list(c.get("dataModel"))).find((s) => s.id === source_id);
      if (!found) throw notFound("Source not found", "source_not_found");
      return c.json(found, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/{data_model_id}/sources/{source_id}",
      tags: ["sources"],
      summary: "Stop polling a source (articles it brought stay)",
      security: bearer,
      request: { params: sourceParams },
      responses: { 204: { description: "Removed" }, ...errors },
    }),
    async (c) => {
      const { source_id } = c.req.valid("param");
      await deps.sources.remove(c.get("dataModel"), source_id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/{data_model_id}/retention",
      tags: ["sources"],
      summary: "The data model's article retention",
      security: bearer,
      request: { params: dmParam },
      responses: {
        200: { description: "Retention", content: { "application/json": { schema: retentionSchema } } },
        ...errors,
      },
    }),
    (c) => {
      const dm = c.get("dataModel");
      return c.json({ max_age_days: dm.maxAgeDays ?? null }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/{data_model_id}/retention",
      tags: ["sources"],
      summary: "Set how many days articles stay searchable (null keeps them forever)",
      security: bearer,
      request: {
        params: dmParam,
        body: {
          required: true,
          content: {
            "application/json": {
              schema: retentionInput,
            },
          },
        },
      },
      responses: {
        200: { description: "Retention set", content: { "application/json": { schema: retentionSchema } } },
        ...errors,
        422: { description: "Malformed data_model_id, or max_age_days out of range" },
      },
    }),
    async (c) => {
      const dm = c.get("dataModel");
      const updated = await deps.sources.setRetention(dm, c.req.valid("json").max_age_days);
      return c.json({ max_age_days: updated.maxAgeDays ?? null }, 200);
    },
  );
  return app;
}
