import { createRoute, z } from "@hono/zod-openapi";
import { rollupDepsOf } from "./rollup_deps.ts";
import type { Context } from "hono";
import {
  type AnalyticsQuery,
  ASK_AI_FILTERS,
  ASK_AI_PARAMS,
  askAiLogs,
  askAiRollup,
  LOGS_FILTERS,
  SESSION_FILTERS,
  sessionIntelligence,
  SPONSORED_FILTERS,
  sponsoredRollup,
  ZONE_PARAMS,
} from "../../analytics/rollups.ts";
import { analyticsAnswerer, jsonAnswer } from "./answer.ts";
import {
  askAiQuery,
  createAnalyticsInsightRoutes,
  exportFormatParam,
  exportHeaders,
  type InsightDeps,
} from "./insights.ts";
import { ExportSlots, onStreamEnd } from "../../analytics/export_slots.ts";
import { hasOwnedChunks, markOwnedChunks } from "../../core/owned_chunks.ts";
import { checkLogsExport, logsCsvStream, logsParquet, PARQUET_TYPE, requestedFormat } from "../../analytics/export.ts";
import type { Deps } from "../../composition.ts";
import type { TenantEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { apiKeyAuth } from "../middleware/api_key.ts";
import { rateLimit } from "../middleware/rate_limit.ts";
import { analyticsErrors, ANSWER_HEADERS } from "./responses.ts";

const str = (description: string) => z.string().optional().openapi({ description });
const dates = {
  start_date: str("YYYY-MM-DD in `timezone`, inclusive. Default: end_date minus 6 days."),
  end_date: str(
    "YYYY-MM-DD in `timezone`, inclusive, on or after start_date, at most 365 days later. Default: today there.",
  ),
  timezone: str(
    "IANA time zone (e.g. `America/New_York`) the dates are read in and days and hours are bucketed in; " +
      "echoed in `meta.timezone`. Default `UTC`; an unknown zone is 400.",
  ),
};
const scope = {
  widget_id: str("`wd_...` of the key's tenant; scopes to that widget's AI agent. 400 `widget_id not found`."),
  placement_id: str("Exact placement id."),
  deployment_type: str("e.g. `brand_agent`, `sponsored_conversation`, `embed`."),
};
const macros = {
  creative_id: str("Creative id (frozen to the ad-render value inside sponsored conversations)."),
  line_item_id: str("Line item id."),
  publisher_id: str("Publisher id (present on one ad partner's events only)."),
};
const headers = z.object({
  "cache-control": z.string().optional().openapi({ description: "`no-cache` skips the cache read and refreshes it." }),
});
const DATES = "a malformed date, end_date before start_date, a window over 365 days, an unknown timezone";
const common = analyticsErrors(`400 for ${DATES}, or a widget_id not of the key's tenant`);
const ok = (description: string) => ({
  description,
  headers: ANSWER_HEADERS,
  content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
});
const bearer = [{ bearerAuth: [] }];

const routes = {
  askAi: createRoute({
    method: "get",
    path: "/ask-ai",
    tags: ["analytics"],
    summary: "Ask AI engagement rollup",
    security: bearer,
    request: { query: z.object({ ...dates, ...scope, ...macros, compare: askAiQuery.compare }), headers },
    responses: {
      200: ok("Summary, comparison (with `compare`), daily breakdown (one row per day, zero-filled), meta"),
      ...common,
    },
  }),
  logs: createRoute({
    method: "get",
    path: "/ask-ai/logs",
    tags: ["analytics"],
    summary: "Ask AI log rows, newest first",
    security: bearer,
    request: {
      query: z.object({
        ...dates,
        ...scope,
        interaction_type: str("One value; default: free_form, automated_followup and search."),
        page: str("1-based page, >= 1."),
        limit: str("Rows per page: default 50, values over 500 become 500."),
        format: exportFormatParam,
      }),
      headers,
    },
    responses: {
      200: {
        ...ok("data, total_pages, count, meta"),
        description: "JSON: data, total_pages, count, meta. CSV / Parquet (`format`, or `Accept: text/csv`): " +
          "every row of the window, newest first, streamed (page and limit do not apply; X-Cache BYPASS).",
        content: {
          "application/json": { schema: z.record(z.string(), z.unknown()) },
          "text/csv": { schema: z.string() },
          [PARQUET_TYPE]: { schema: z.string().openapi({ format: "binary" }) },
        },
      },
      ...analyticsErrors(
        `400 for ${DATES}, a widget_id not of the key's tenant, a page or limit that is not a whole number >= 1, ` +
          "or an unknown format",
      ),
    },
  }),
  sponsored: createRoute({
    method: "get",
    path: "/sponsored-conversations",
    tags: ["analytics"],
    summary: "Sponsored-conversation rollup over the tenant's campaigns",
    security: bearer,
    request: {
      query: z.object({
        ...dates,
        campaign_id: str("`cp_...`"),
        agent_id: str("`am_...` of the key's tenant; 400 `agent_id not found`."),
        placement_id: str("Exact placement id."),
        prompt_id: str("`pm_...`"),
        ...macros,
        compare: askAiQuery.compare,
      }),
      headers,
    },
    responses: {
      200: ok(
        "Summary, comparison (with `compare`: the earlier window's summary and daily rows, the change per " +
          "metric), daily, campaign, prompt and click-type breakdowns, meta",
      ),
      ...analyticsErrors(`400 for ${DATES}, an agent_id not of the key's tenant, or an unknown compare`),
    },
  }),
  session: createRoute({
    method: "get",
    path: "/session-intelligence",
    tags: ["analytics"],
    summary: "Session intelligence (six dashboard reports in one)",
    security: bearer,
    request: { query: z.object({ ...dates, ...scope, ...macros, compare: askAiQuery.compare }), headers },
    responses: {
      200: ok(
        "session_intelligence (with `compare`, its `comparison`: the earlier window's summary and " +
          "engagement_time and the change per metric), meta",
      ),
      ...common,
    },
  }),
};

/**
 * Mounted at `/v1/analytics`: the four `GET` rollups (bearer key, rate limit per key, KV answer
 * cache; the cache and the limiter are built with the other services).
 */
export function createAnalyticsRoutes(
  deps: Pick<Deps, "analyticsCache" | "analyticsLimiter" | "apiKeys"> & InsightDeps,
) {
  const app = familyApp<TenantEnv>("message", deps.log);
  const cache = deps.analyticsCache;
  const rollupDeps = rollupDepsOf(deps);
  // Tenant data and user text (prompts, answers, readers' pages) in JSON, CSV and Parquet: never
  // sniffed as a page, and kept by no cache, the browser's of a dashboard included (the answer
  // cache is ours, server-side; `X-Cache` says how it answered).
  app.use("*", async function noSniffNoStore(c, next) {
    await next();
    c.res.headers.set("x-content-type-options", "nosniff");
    c.res.headers.set("cache-control", "no-store");
  });
  app.use("*", apiKeyAuth(deps.apiKeys));
  app.use("*", rateLimit({ limiter: deps.analyticsLimiter, key: (c) => c.get("apiKey")?.id }));

  const answerer = analyticsAnswerer(cache, rollupDeps);
  const exportSlots = new ExportSlots(deps.clock);
  const answer = async (
    c: Context<TenantEnv>,
    endpoint: string,
    echo: readonly string[],
    compute: (tenantId: string, q: AnalyticsQuery) => Promise<Record<string, unknown>>,
    keyParams: readonly string[] = ZONE_PARAMS,
  ) => jsonAnswer(c, await answerer(c, { endpoint, echo, keyParams, compute }));

  app.route("/", createAnalyticsInsightRoutes(deps, answerer));

  // deno-lint-ignore no-explicit-any
  const h = (fn: (c: Context<TenantEnv>) => Promise<Response>) => fn as any;
  app.openapi(
    routes.askAi,
    h((c) => answer(c, "ask-ai", ASK_AI_FILTERS, (t, q) => askAiRollup(rollupDeps, t, q), ASK_AI_PARAMS)),
  );
  app.openapi(
    routes.logs,
    h(async (c) => {
      const format = requestedFormat(c.req.query("format"), c.req.header("accept"));
      if (format === "json") return answer(c, "ask-ai-logs", LOGS_FILTERS, (t, q) => askAiLogs(rollupDeps, t, q));
      // Exports stream every row of the window (not a page) and are never cached.
      const q = c.req.query() as AnalyticsQuery;
      const tenantId = c.get("tenantId");
      // HEAD: the headers only. Hono drops a GET answer's body without cancelling it, which would
      // leave the export's scratch files behind.
      if (c.req.method === "HEAD") {
        await checkLogsExport(rollupDeps, tenantId, q);
        return c.body(null, 200, exportHeaders(format, "ask-ai-logs"));
      }
      // A few at a time per tenant: each scans its whole window yet counts once against the rate limit.
      const release = exportSlots.take(tenantId);
      let stream: ReadableStream<Uint8Array>;
      try {
        stream = format === "csv"
          ? await logsCsvStream(rollupDeps, tenantId, q)
          : await logsParquet(rollupDeps, tenantId, q);
      } catch (err) {
        release();
        throw err;
      }
      const body = onStreamEnd(stream, release);
      return c.body(hasOwnedChunks(stream) ? markOwnedChunks(body) : body, 200, exportHeaders(format, "ask-ai-logs"));
    }),
  );
  app.openapi(
    routes.sponsored,
    h((c) =>
      answer(
        c,
        "sponsored-conversations",
        SPONSORED_FILTERS,
        (t, q) => sponsoredRollup(rollupDeps, t, q),
        ASK_AI_PARAMS,
      )
    ),
  );
  app.openapi(
    routes.session,
    h((c) =>
      answer(c, "session-intelligence", SESSION_FILTERS, (t, q) => sessionIntelligence(rollupDeps, t, q), ASK_AI_PARAMS)
    ),
  );
  return app;
}
