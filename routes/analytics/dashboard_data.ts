/**
 * `GET /v1/analytics/dashboard`: every panel of the dashboard page in one call, streamed as
 * NDJSON, one line per panel in the order the panels finish, so the page draws each one as soon as
 * it is ready. One request against the rate limit instead of nine; each panel is the same answer
 * (and the same cache entry) as its own endpoint for the same parameters.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { rollupDepsOf } from "./rollup_deps.ts";
import type { Context } from "hono";
import { askAiBreakdown, BREAKDOWN_PARAMS } from "../../analytics/breakdown.ts";
import { COMPARE_MODES, parseCompare } from "../../analytics/compare.ts";
import { dayInZone } from "../../analytics/timezone.ts";
import { realtimeCounters } from "../../analytics/realtime.ts";
import { agentReadership, READERSHIP_FILTERS, topArticles } from "../../analytics/readership.ts";
import {
  type AnalyticsQuery,
  ASK_AI_FILTERS,
  ASK_AI_PARAMS,
  askAiLogs,
  askAiRollup,
  LOGS_FILTERS,
  requestWindow,
  type RollupDeps,
  SESSION_FILTERS,
  sessionIntelligence,
  widgetAgent,
  ZONE_PARAMS,
} from "../../analytics/rollups.ts";
import { AppError } from "../../core/errors.ts";
import { describeError } from "../../core/log.ts";
import type { analyticsAnswerer, AnswerSpec } from "./answer.ts";
import type { Deps } from "../../composition.ts";
import type { TenantEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { analyticsErrors, header, RATE_LIMIT_HEADERS } from "./responses.ts";
import { httpStatus } from "../error_status.ts";

/** The view parameters the page passes on. */
const VIEW_PARAMS = [
  "start_date",
  "end_date",
  "timezone",
  "compare",
  "widget_id",
  "placement_id",
  "deployment_type",
] as const;

/** Rows in the dashboard's tables. */
const TABLE_ROWS = "10";
const LOG_ROWS = "20";

/** One panel: its name, the query it answers, and how (a cached answer or the uncached realtime). */
interface Panel {
  panel: string;
  query: AnalyticsQuery;
  answer: AnswerSpec | "realtime";
}

/** Whole days in a view without dates: a day still under way would be compared with whole ones. */
const WHOLE_DAYS = 7;

/**
 * The dates of a view that names none: the last {@link WHOLE_DAYS} whole days, ending yesterday in
 * the view's zone, so every figure and its comparison cover whole days (today is its own panel).
 */
export function lastWholeDays(today: string): { start_date: string; end_date: string } {
  const day = (offset: number) =>
    new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
  return { start_date: day(-WHOLE_DAYS), end_date: day(-1) };
}

/** The panels of a view, each with the parameters its own endpoint would get from the page. */
function panelsOf(v: AnalyticsQuery, rollupDeps: RollupDeps, kv: Deno.Kv, today: string): Panel[] {
  const pick = (names: readonly string[], extra: AnalyticsQuery = {}) => {
    const q: AnalyticsQuery = {};
    for (const n of names) if (v[n] !== undefined && v[n] !== "") q[n] = v[n];
    return { ...q, ...extra };
  };
  const filters = ["start_date", "end_date", "timezone", "widget_id", "placement_id", "deployment_type"];
  const window = ["start_date", "end_date", "timezone"];
  const byDimension = (panel: string, dimension: string): Panel => ({
    panel,
    query: pick(filters, { dimension, limit: TABLE_ROWS }),
    answer: {
      endpoint: "ask-ai-breakdown",
      echo: ASK_AI_FILTERS,
      keyParams: [...ZONE_PARAMS, ...BREAKDOWN_PARAMS],
      compute: (t, q) => askAiBreakdown(rollupDeps, t, q),
    },
  });
  return [
    {
      panel: "ask-ai",
      query: pick([...filters, "compare"]),
      answer: {
        endpoint: "ask-ai",
        echo: ASK_AI_FILTERS,
        keyParams: ASK_AI_PARAMS,
        compute: (t, q) => askAiRollup(rollupDeps, t, q),
      },
    },
    { panel: "realtime", query: pick(["widget_id", "timezone"]), answer: "realtime" },
    {
      // Today so far, apart from the whole days of the view (and never compared with them).
      panel: "today",
      query: pick(["timezone", "widget_id", "placement_id", "deployment_type"], { start_date: today, end_date: today }),
      answer: {
        endpoint: "ask-ai",
        echo: ASK_AI_FILTERS,
        keyParams: ASK_AI_PARAMS,
        compute: (t, q) => askAiRollup(rollupDeps, t, q),
      },
    },
    {
      panel: "articles",
      query: pick(window, { limit: TABLE_ROWS }),
      answer: {
        endpoint: "articles",
        echo: READERSHIP_FILTERS,
        keyParams: [...ZONE_PARAMS, "limit"],
        compute: (t, q) => topArticles({ ...rollupDeps, kv }, t, q),
      },
    },
    {
      panel: "agents",
      query: pick(window, { limit: TABLE_ROWS }),
      answer: {
        endpoint: "agents",
        echo: ["start_date", "end_date"],
        keyParams: [...ZONE_PARAMS, "limit"],
        compute: (t, q) => agentReadership(rollupDeps, t, q),
      },
    },
    byDimension("by-placement", "placement_id"),
    byDimension("by-deployment", "deployment_type"),
    byDimension("by-referrer", "referring_url"),
    {
      panel: "session-intelligence",
      query: pick(filters),
      answer: {
        endpoint: "session-intelligence",
        echo: SESSION_FILTERS,
        keyParams: ZONE_PARAMS,
        compute: (t, q) => sessionIntelligence(rollupDeps, t, q),
      },
    },
    {
      panel: "logs",
      query: pick(filters, { limit: LOG_ROWS }),
      answer: {
        endpoint: "ask-ai-logs",
        echo: LOGS_FILTERS,
        keyParams: ZONE_PARAMS,
        compute: (t, q) => askAiLogs(rollupDeps, t, q),
      },
    },
  ];
}

/** The panel names, in the order they are started. */
export const DASHBOARD_PANELS = [
  "ask-ai",
  "realtime",
  "today",
  "articles",
  "agents",
  "by-placement",
  "by-deployment",
  "by-referrer",
  "session-intelligence",
  "logs",
] as const;

const str = (description: string) => z.string().optional().openapi({ description });

const dashboardRoute = createRoute({
  method: "get",
  path: "/dashboard",
  tags: ["analytics"],
  summary: "Every dashboard panel in one call (NDJSON, one line per panel as it is ready)",
  description: "The panels of `GET /dashboard` for one view: `ask-ai` (with `compare`), `realtime`, `today` (the " +
    "`ask-ai` rollup of today so far in the view's zone, with its filters and no comparison), `articles` and " +
    "`agents` (10 rows), breakdowns `by-placement`, `by-deployment`, `by-referrer` (10 rows), " +
    "`session-intelligence`, and `logs` (20 rows). Each line is `{panel, status, body}`: `body` is what the " +
    "panel's own endpoint answers for the same parameters (from the same cache, and a 200 line's `cache` is the " +
    "`X-Cache` that endpoint would have sent), or `{message}` with the status that endpoint would have given. " +
    "The stream itself is never cached: its `X-Cache` is `BYPASS`. Lines come in the order the panels finish. Counts as one request against " +
    "the rate limit. The view is checked before streaming: a bad date, zone or widget is a 400.",
  security: [{ bearerAuth: [] }],
  request: {
    query: z.object({
      start_date: str(
        "YYYY-MM-DD in `timezone`, inclusive. Default: end_date minus 6 days; with no end_date either, the last 7 " +
          "whole days (yesterday back), so a comparison is of whole days with whole days.",
      ),
      end_date: str(
        "YYYY-MM-DD in `timezone`, inclusive. Default: today there (yesterday when start_date is absent too).",
      ),
      timezone: str("IANA zone (default `UTC`)."),
      compare: z.enum(COMPARE_MODES).optional().openapi({ description: "Comparison for the `ask-ai` panel." }),
      widget_id: str("`wd_...` of the key's tenant."),
      placement_id: str("Exact placement id."),
      deployment_type: str("e.g. `embed`."),
    }),
    headers: z.object({
      "cache-control": z.string().optional().openapi({ description: "`no-cache` skips the cache reads." }),
    }),
  },
  responses: {
    200: {
      description: "NDJSON: one `{panel, status, body}` line per panel (200 lines add `cache`)",
      headers: {
        "X-Cache": header(
          "Always `BYPASS`: the stream is never cached (each 200 line's `cache` says how its panel was).",
        ),
        ...RATE_LIMIT_HEADERS,
      },
      content: {
        "application/x-ndjson": {
          schema: z.string().openapi({
            description: '`{"panel":"ask-ai","status":200,"cache":"MISS","body":{...}}` lines',
          }),
        },
      },
    },
    ...analyticsErrors(
      "400 for a malformed date, end_date before start_date, a window over 365 days, an unknown timezone or " +
        "compare, or a widget_id not of the key's tenant",
    ),
  },
});

/** What the combined call reads. */
type DashboardDataDeps = Pick<
  Deps,
  "analytics" | "analyticsMemo" | "analyticsVisits" | "events" | "repos" | "clock" | "log" | "kv"
>;

/** Mounted inside the `/v1/analytics` sub-app (behind its key check and rate limit). */
export function createDashboardDataRoute(deps: DashboardDataDeps, answer: ReturnType<typeof analyticsAnswerer>) {
  const app = familyApp<TenantEnv>("message", deps.log);
  // The same sources as the panels' own endpoints (without the closed days' visit figures and the
  // compare memo every dashboard load read each event of its window again, and both windows).
  const rollupDeps = rollupDepsOf(deps);
  const encoder = new TextEncoder();

  /** One panel's line: its answer, or the error its own endpoint would have answered. */
  const run = async (c: Context<TenantEnv>, tenantId: string, p: Panel) => {
    try {
      if (p.answer === "realtime") {
        const body = await realtimeCounters({ ...rollupDeps, wal: deps.events.wal }, tenantId, p.query);
        return { panel: p.panel, status: 200, cache: "BYPASS", body }; // realtime is never cached
      }
      const { body, status: cache } = await answer(c, p.answer, p.query);
      return { panel: p.panel, status: 200, cache, body };
    } catch (err) {
      if (err instanceof AppError && !err.serverSide) {
        return { panel: p.panel, status: httpStatus(err), body: { message: err.message } };
      }
      deps.log.error("dashboard panel failed", {
        request_id: c.env.requestId,
        panel: p.panel,
        error: describeError(err),
      });
      return { panel: p.panel, status: 500, body: { message: "Internal server error" } };
    }
  };

  app.openapi(
    dashboardRoute,
    (async (c: Context<TenantEnv>) => {
      const tenantId = c.get("tenantId");
      const raw = c.req.query();
      const view: AnalyticsQuery = {};
      for (const n of VIEW_PARAMS) if (raw[n] !== undefined) view[n] = raw[n];
      // The view is checked once, before the stream starts: its errors are a plain 400.
      parseCompare(view.compare);
      const { tz } = await requestWindow(rollupDeps, view);
      await widgetAgent(rollupDeps, tenantId, view);
      const today = dayInZone(deps.clock.now(), tz);
      if (view.start_date === undefined && view.end_date === undefined) Object.assign(view, lastWholeDays(today));
      // The stream itself is never cached (each panel's line says how its answer was found).
      const headers = {
        "content-type": "application/x-ndjson; charset=UTF-8",
        "cache-control": "no-store",
        "x-cache": "BYPASS",
      };
      // HEAD: no panel runs (Hono would drop the stream without cancelling it).
      if (c.req.method === "HEAD") return c.body(null, 200, headers);
      const panels = panelsOf(view, rollupDeps, deps.kv, today);
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          await Promise.all(panels.map(async (p) => {
            const line = await run(c, tenantId, p);
            controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
          }));
          controller.close();
        },
      });
      return c.body(stream, 200, headers);
      // deno-lint-ignore no-explicit-any
    }) as any,
  );
  return app;
}
