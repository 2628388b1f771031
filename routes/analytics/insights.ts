import { createRoute, z } from "@hono/zod-openapi";
import { rollupDepsOf } from "./rollup_deps.ts";
import type { Context } from "hono";
import {
  askAiBreakdown,
  BREAKDOWN_PARAMS,
  breakdownExportColumns,
  DIMENSIONS,
  SORT_FIELDS,
} from "../../analytics/breakdown.ts";
import { FORMATS, PARQUET_TYPE, requestedFormat, toCsv, toParquet } from "../../analytics/export.ts";
import { COMPARE_MODES } from "../../analytics/compare.ts";
import { INTERVALS } from "../../analytics/metrics.ts";
import { type AnalyticsQuery, ASK_AI_FILTERS, ZONE_PARAMS } from "../../analytics/rollups.ts";
import { realtimeCounters } from "../../analytics/realtime.ts";
import { agentReadership, READERSHIP_FILTERS, topArticles } from "../../analytics/readership.ts";
import type { Deps } from "../../composition.ts";
import type { TenantEnv } from "../env.ts";
import { type analyticsAnswerer, jsonAnswer } from "./answer.ts";
import { createDashboardDataRoute } from "./dashboard_data.ts";
import { familyApp } from "../family.ts";
import { analyticsErrors, ANSWER_HEADERS } from "./responses.ts";

/** What the analytics routes read. */
export type InsightDeps = Pick<
  Deps,
  "analytics" | "analyticsMemo" | "analyticsVisits" | "duckdb" | "events" | "repos" | "clock" | "log" | "kv"
>;

const str = (description: string) => z.string().optional().openapi({ description });

/** Query parameters shared with GET /v1/analytics/ask-ai. */
export const askAiQuery = {
  start_date: str("YYYY-MM-DD in `timezone`, inclusive. Default: end_date minus 6 days."),
  end_date: str("YYYY-MM-DD in `timezone`, inclusive, at most 365 days after start_date. Default: today there."),
  timezone: str("IANA zone for dates and buckets (default `UTC`; unknown is 400); echoed in `meta.timezone`."),
  widget_id: str("`wd_...` of the key's tenant; 400 `widget_id not found`."),
  placement_id: str("Exact placement id."),
  deployment_type: str("e.g. `brand_agent`, `sponsored_conversation`, `embed`."),
  creative_id: str("Creative id."),
  line_item_id: str("Line item id."),
  publisher_id: str("Publisher id."),
  compare: z.enum(COMPARE_MODES).optional().openapi({
    description: "Adds a `comparison` block: the earlier window's summary (and rows) and the change of each metric " +
      "(relative, percent; null when the earlier value is 0).",
  }),
};

/** The `format` query parameter of exportable answers. */
export const exportFormatParam = z.enum(FORMATS).optional().openapi({
  description: "`csv` or `parquet` exports the answer (also `Accept: text/csv`); default JSON.",
});

/** Headers of an export response. */
export function exportHeaders(format: "csv" | "parquet", name: string): Record<string, string> {
  return {
    "content-type": format === "csv" ? "text/csv; charset=UTF-8" : PARQUET_TYPE,
    "content-disposition": `attachment; filename="${name}.${format}"`,
    "X-Cache": "BYPASS",
  };
}

const DATES = "a malformed date, end_date before start_date, a window over 365 days, an unknown timezone";
const LIMIT = "a limit that is not a whole number >= 1";
const headers = z.object({
  "cache-control": z.string().optional().openapi({ description: "`no-cache` skips the cache read." }),
});
const bearer = [{ bearerAuth: [] }];

const breakdownRoute = createRoute({
  method: "get",
  path: "/ask-ai/breakdown",
  tags: ["analytics"],
  summary: "Ask AI metrics per dimension value or time bucket",
  description: "Rows carry the 13 summary metrics of `GET /v1/analytics/ask-ai`. A session counts once in every " +
    "row it has events in, so session figures of column rows may add up to more than `summary`.",
  security: bearer,
  request: {
    query: z.object({
      dimension: z.enum(DIMENSIONS).openapi({ description: "What a row is." }),
      interval: z.enum(INTERVALS).optional().openapi({
        description: "With dimension=date: local hour (`YYYY-MM-DDTHH:00`), day, ISO week (its Monday) or month.",
      }),
      sort: z.enum(SORT_FIELDS).optional().openapi({
        description: "Default `key` for dates, `sessions` otherwise.",
      }),
      order: z.enum(["asc", "desc"]).optional().openapi({ description: "Default asc for key, desc otherwise." }),
      limit: str("Rows: default 100 (dimension=date: every bucket), values over 10000 become 10000."),
      format: exportFormatParam,
      ...askAiQuery,
    }),
    headers,
  },
  responses: {
    200: {
      description: "success, filters, breakdown, summary, comparison (with compare), rows, meta. " +
        "CSV / Parquet: the rows (key, label for intents, the 13 metrics).",
      headers: ANSWER_HEADERS,
      content: {
        "application/json": { schema: z.record(z.string(), z.unknown()) },
        "text/csv": { schema: z.string() },
        [PARQUET_TYPE]: { schema: z.string().openapi({ format: "binary" }) },
      },
    },
    ...analyticsErrors(
      `400 for ${DATES}, a widget_id not of the key's tenant, an unknown dimension, interval (or one off ` +
        `dimension=date), sort, order, compare or format, or ${LIMIT}`,
    ),
  },
});

const realtimeRoute = createRoute({
  method: "get",
  path: "/realtime",
  tags: ["analytics"],
  summary: "Active sessions, queries and clicks in the last 5 and 30 minutes",
  description: "Counts events still in the write-ahead log (not yet flushed to Parquet). Computed on every " +
    "request (X-Cache DISABLED).",
  security: bearer,
  request: {
    query: z.object({
      widget_id: askAiQuery.widget_id,
      timezone: askAiQuery.timezone,
    }),
  },
  responses: {
    200: {
      description: "success, filters, last_5_minutes, last_30_minutes ({active_sessions, queries, clicks}), " +
        "unflushed_events, meta",
      headers: ANSWER_HEADERS,
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
    ...analyticsErrors("400 for an unknown timezone or a widget_id not of the key's tenant"),
  },
});

const windowQuery = {
  start_date: askAiQuery.start_date,
  end_date: askAiQuery.end_date,
  timezone: askAiQuery.timezone,
  limit: str("Rows per list: default 20, values over 500 become 500."),
};
const json = (description: string) => ({
  description,
  headers: ANSWER_HEADERS,
  content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
});

const articlesRoute = createRoute({
  method: "get",
  path: "/articles",
  tags: ["analytics"],
  summary: "Recirculation: top articles and sites by clicks on our tracking links",
  description: "Impressions are the times an article was shown in search results served to any caller; " +
    "ctr = clicks / impressions in percent.",
  security: bearer,
  request: {
    query: z.object({
      ...windowQuery,
      data_model_id: str("A data model of the key's tenant (400 `data_model_id not found`); default all."),
    }),
    headers,
  },
  responses: {
    200: json(
      "success, filters, articles[] (data_model_id, article_id, title, url, site, clicks, impressions, ctr), " +
        "sites[] (site, clicks, impressions, ctr), meta",
    ),
    ...analyticsErrors(`400 for ${DATES}, ${LIMIT}, or a data_model_id not of the key's tenant`),
  },
});

const agentsRoute = createRoute({
  method: "get",
  path: "/agents",
  tags: ["analytics"],
  summary: "Agent readership: which AI agents read us, and do their users click through",
  description: "Traffic by caller identity (`payproxy:<agent>`, `zeroclick:<agent>`, storefront and MCP callers).",
  security: bearer,
  request: { query: z.object(windowQuery), headers },
  responses: {
    200: json(
      "success, filters, agents[] (agent_identity, channel, verified and directory_host (Web Bot Auth: " +
        "`webbot:<directory host>` when the signature verified, `webbot-unverified` when it did not), searches, " +
        "answers, queries, results_surfaced, articles_surfaced, clicks, click_through_rate), meta",
    ),
    ...analyticsErrors(`400 for ${DATES} or ${LIMIT}`),
  },
});

/**
 * The analytics routes beyond the spec's four (breakdown, realtime, recirculation, agent
 * readership), mounted inside the `/v1/analytics` sub-app, behind its key check and rate limit.
 */
export function createAnalyticsInsightRoutes(deps: InsightDeps, answer: ReturnType<typeof analyticsAnswerer>) {
  const app = familyApp<TenantEnv>("message", deps.log);
  const rollupDeps = rollupDepsOf(deps);
  // deno-lint-ignore no-explicit-any
  const h = (fn: (c: Context<TenantEnv>) => Promise<Response>) => fn as any;
  app.route("/", createDashboardDataRoute(deps, answer));

  app.openapi(
    breakdownRoute,
    h(async (c) => {
      const a = await answer(c, {
        endpoint: "ask-ai-breakdown",
        echo: ASK_AI_FILTERS,
        keyParams: [...ZONE_PARAMS, ...BREAKDOWN_PARAMS],
        compute: (t, q) => askAiBreakdown(rollupDeps, t, q),
      });
      const format = requestedFormat(c.req.query("format"), c.req.header("accept"));
      if (format === "json") return jsonAnswer(c, a);
      const rows = a.body.rows as Record<string, unknown>[];
      const columns = breakdownExportColumns(c.req.query("dimension"));
      const headers = { ...exportHeaders(format, "ask-ai-breakdown"), "X-Cache": a.status };
      if (format === "csv") return c.body(toCsv(columns.map(([name]) => name), rows), 200, headers);
      return c.body(await toParquet(deps.duckdb, columns, rows), 200, headers);
    }),
  );
  app.openapi(
    articlesRoute,
    h(async (c) =>
      jsonAnswer(
        c,
        await answer(c, {
          endpoint: "articles",
          echo: READERSHIP_FILTERS,
          keyParams: [...ZONE_PARAMS, "limit"],
          compute: (t, q) => topArticles({ ...rollupDeps, kv: deps.kv }, t, q),
        }),
      )
    ),
  );
  app.openapi(
    agentsRoute,
    h(async (c) =>
      jsonAnswer(
        c,
        await answer(c, {
          endpoint: "agents",
          echo: ["start_date", "end_date"],
          keyParams: [...ZONE_PARAMS, "limit"],
          compute: (t, q) => agentReadership(rollupDeps, t, q),
        }),
      )
    ),
  );
  app.openapi(
    realtimeRoute,
    h(async (c) => {
      const body = await realtimeCounters(
        { ...rollupDeps, wal: deps.events.wal },
        c.get("tenantId"),
        c.req.query() as AnalyticsQuery,
      );
      return c.json(body, 200, { "X-Cache": "DISABLED" });
    }),
  );
  return app;
}
