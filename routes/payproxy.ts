/**
 * Payment-proxy routes (spec 4.3, 4.4, 5.2, 7.1): the bearer search and real-time orchestration
 * behind a request signature instead of an API key, an allowance check before billable work, a
 * marketplace gate, and usage reported in `zc-usage`.
 *
 * Order of checks (the first failing one answers):
 *
 *   search                                  real-time
 *   1. data_model_id present, `dm_`, 400     -
 *      search_version known
 *   2. body read (size cap)          422     1. body read (size cap)             422
 *   3. signature, zc-request-id      401     2. signature, zc-request-id         401
 *                                            3. aimodel_external_id format       422
 *   4. body JSON, query non-empty,   422     4. body JSON, query non-empty       422
 *      search_type known
 *   5. model exists, marketplace     404     5. exists, public, marketplace      404
 *   6. allowance                     402     6. allowance                        402
 *   7. search                        200     7. answer                           200
 *
 * The query-parameter check comes first because it needs no secret and the spec gives it its own
 * plain-text 400; everything about the body and the model waits until the caller proved who it is,
 * so unsigned callers learn nothing about which models exist. A verified signature is consumed at
 * the signature step whatever happens next: a retry must be signed again.
 *
 * The single-use mark is a durable KV commit, milliseconds under load, so it is not waited for
 * idly; whatever a request did meanwhile, a refused mark answers the 401 (even when its body or model
 * would also have been refused), and only a confirmed one lets a 200 and its `zc-usage` out.
 * - A replay sent to the same process is refused at once, before any work (the process remembers
 *   its marks). Only a replay racing its original through another process gets as far as the mark.
 * - Search runs steps 4 to 7 while the mark commits: a search is local CPU work, and the one a
 *   racing replay runs is thrown away unanswered and unbilled (the payment layer bills `zc-usage`).
 * - Real-time overlaps only steps 4 and 5 and awaits the mark before the allowance: an answer may
 *   call a paid model API, which no replay may reach.
 *
 * The protocol itself (signature, single-use mark, allowance, metrics, the `zc-usage` value) is the
 * payproxy room's gate (core/payproxy/gate.ts); these handlers do HTTP and the orchestration.
 */
import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../composition.ts";
import {
  filtersOf,
  fullTextNotLicensed,
  isSearchType,
  isSearchVersion,
  mayReadFullText,
  SEARCH_TYPES,
  SEARCH_VERSION_DOC,
  SEARCH_VERSIONS,
  searchRequestSchema,
  textOptionOf,
} from "../core/search/mod.ts";
import { idPattern } from "../core/ids.ts";
import {
  type Admission,
  AGENT_ID_HEADER,
  marketplaceAiModel,
  marketplaceDataModel,
  payproxyErrors as errors,
  REQUEST_ID_HEADER,
  serviceSlug,
  SIGNATURE_HEADER,
  USAGE_HEADER,
} from "../core/payproxy/mod.ts";
import { citationsSchema, MAX_QUERY_CHARS } from "./aimodel.ts";
import type { AppEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { requireOperator } from "./middleware/operator.ts";
import { bodyReader, decodeJson } from "./middleware/body.ts";
import { documented } from "./openapi.ts";
import { describeIssue } from "./validation.ts";
import { callerIs } from "./request_scope.ts";
import { searchJson } from "./search_json.ts";
import { oncePerKey } from "./once_per_key.ts";

// The shared id format (core/ids.ts), checked before any lookup.
const DM_ID_RE = idPattern("dm");
const AM_ID_RE = idPattern("am");
const realtimeBodySchema = z.object({
  query: z.string({ error: "must be a string" }).trim().min(1, { error: "query cannot be empty" }),
  related_questions: z.boolean({ error: "must be true or false" }).optional().openapi({
    description: "Text models: also answer three follow-up questions (`related_questions`)",
  }),
}).loose();

type Ctx = Context<AppEnv>;

/** A path family of the payment proxy: its error family (the 401 body) and its caller prefix. */
export interface ProxyPaths {
  family: "payproxy" | "zeroclick";
  /** Caller identity `<caller>:<agent-id>` (logs, analytics). */
  caller: string;
  /** Serves `GET /metrics` (once per process is enough). */
  metrics: boolean;
}
/** `/payproxy/...`. */
export const PAYPROXY: ProxyPaths = { family: "payproxy", caller: "payproxy", metrics: true };
/** Dappier's `/zeroclick/...` paths (routes/zeroclick.ts). */
export const ZEROCLICK: ProxyPaths = { family: "zeroclick", caller: "zeroclick", metrics: false };

/** The 401 body schema per error code, built once per process: each app (a test world each) asks again. */
const signatureErrorBody = oncePerKey(buildSignatureErrorBody);

function buildSignatureErrorBody(error: string) {
  return z.object({ error: z.literal(error) });
}

/** A route definition with the 401 body and summary of a path family. */
function forPaths(route: RouteConfig, paths: ProxyPaths): RouteConfig {
  if (paths.family === "payproxy") return route;
  const error = `invalid_${paths.family}_signature`;
  return {
    ...route,
    tags: [paths.family],
    summary: `${route.summary} (Dappier's ${paths.family} path)`,
    responses: {
      ...route.responses,
      401: {
        description: "Signature missing, invalid, replayed, or not configured",
        content: { "application/json": { schema: signatureErrorBody(error) } },
      },
    },
  };
}
type PayproxyDeps = Pick<Deps, "config" | "repos" | "payproxy" | "search" | "answer" | "log" | "operatorKeys">;

const signedHeaders = z.object({
  "zc-signature": z.string().openapi({
    description: "`t=<unix-seconds>,kid=<key-id>,v1=<hex HMAC-SHA256>` over the canonical string (spec 5.2)",
    example: "t=1795348800,kid=ppk_vectors01,v1=bae2c74564e5029ae42e177859e44a89a60831c231d8691f1e1341a4ce127a2a",
  }),
  "zc-request-id": z.string().openapi({ description: "Caller's request id; part of the signed string" }),
  "zc-agent-id": z.string().optional().openapi({
    description: "Paying agent; part of the signed string (empty when absent); caller identity `payproxy:<id>`",
  }),
});
const usageHeaderDoc = {
  [USAGE_HEADER]: {
    description: 'JSON array: `[{"serviceSlug":"...","meterSlug":"query","quantity":1}]`; a search that served ' +
      'full texts adds `{"serviceSlug":"...","meterSlug":"full_text","quantity":<texts>}`',
    schema: { type: "string" as const },
  },
};
const commonResponses = {
  401: {
    description: "Signature missing, invalid, replayed, or not configured",
    content: { "application/json": { schema: z.object({ error: z.literal("invalid_payproxy_signature") }) } },
  },
  402: {
    description: "Allowance denied",
    content: {
      "application/json": {
        schema: z.object({
          error: z.literal("payment_required"),
          serviceSlug: z.string(),
          usage: z.array(z.object({ meterSlug: z.literal("query"), quantity: z.number().int() })),
        }),
      },
    },
  },
  404: { description: "Model unresolved, private or not marketplace-enabled (no body)" },
  422: {
    description: "Body unreadable, empty query, or malformed model id",
    content: {
      "application/json": { schema: z.object({ message: z.string(), code: z.string().optional() }) },
    },
  },
  500: { description: "Unexpected error (no body)" },
};

const searchDoc = createRoute({
  method: "post",
  path: "/v2/search",
  tags: ["payproxy"],
  summary: "Article recommendations behind the payment proxy",
  description:
    "Signature-authenticated variant of `/app/v2/search`: marketplace-enabled data models only, allowance check before the search, usage in `zc-usage`, nothing counted on the tenant's platform usage.",
  request: {
    query: z.object({
      data_model_id: z.string().openapi({ description: "Data model id (`dm_...`)" }),
      search_version: z.enum(Object.keys(SEARCH_VERSIONS) as [string, ...string[]]).optional().openapi({
        description: SEARCH_VERSION_DOC,
      }),
    }),
    headers: signedHeaders,
    body: { required: true, content: { "application/json": { schema: searchRequestSchema } } },
  },
  responses: {
    200: {
      description: "SearchResponse",
      headers: usageHeaderDoc,
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
    400: {
      description: "A required query parameter is missing",
      content: { "text/plain": { schema: z.string() } },
    },
    403: {
      description: "`contents.text` asked of a data model whose licence is `summary` (no body; refused before the " +
        "allowance check)",
    },
    ...commonResponses,
    503: { description: "A URL query found page analysis busy; `Retry-After` says when to try again" },
  },
});

const realtimeDoc = createRoute({
  method: "post",
  path: "/aimodel/{aimodel_external_id}",
  tags: ["payproxy"],
  summary: "Real-time answer behind the payment proxy",
  description:
    "Signature-authenticated variant of `/app/aimodel/{id}`. Private or non-marketplace models are 404. Structured models emit their payload instead of `{message}`.",
  request: {
    params: z.object({ aimodel_external_id: z.string().openapi({ description: "AI model id (`am_...`)" }) }),
    headers: signedHeaders,
    body: { required: true, content: { "application/json": { schema: realtimeBodySchema } } },
  },
  responses: {
    200: {
      description:
        "`{message, citations}` for text models (as on `/app/aimodel/{id}`), or the model's structured payload",
      headers: usageHeaderDoc,
      content: {
        "application/json": {
          schema: z.union([
            z.object({ message: z.string(), citations: citationsSchema }),
            z.record(z.string(), z.unknown()),
          ]),
        },
      },
    },
    ...commonResponses,
  },
});

const metricsDoc = createRoute({
  method: "get",
  path: "/metrics",
  tags: ["payproxy"],
  summary: "Payproxy counters of this process (allowance outcomes, fail-opens, 401s, 402s); operator key required",
  responses: {
    401: {
      description:
        "No operator key (`Authorization: Bearer op_...`): the operator's `{message}` body, not a signature error",
      content: { "application/json": { schema: z.object({ message: z.string() }) } },
    },
    200: {
      description: "Counters since start",
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
  },
});

/**
 * Mounted at `/payproxy`: `POST /v2/search`, `POST /aimodel/{aimodel_external_id}` and
 * `GET /metrics`, each served with its OpenAPI definition above.
 */
export function createPayproxyRoutes(deps: PayproxyDeps, paths: ProxyPaths = PAYPROXY) {
  const app = familyApp(paths.family, deps.log);
  const { gate, metrics } = deps.payproxy;
  const readBody = bodyReader({ limit: deps.config.maxBodyBytes, json: false });

  /**
   * Step 3's checks that need no body (header form, ids, timestamp, key), before the body is read;
   * what they found is kept for {@link admit}, which then checks only the MAC.
   */
  async function signedHeaders(c: Ctx, next: () => Promise<void>): Promise<void> {
    c.set(
      "signatureHeaders",
      await gate.checkHeaders({
        signature: c.req.header(SIGNATURE_HEADER),
        requestId: c.req.header(REQUEST_ID_HEADER),
        agentId: c.req.header(AGENT_ID_HEADER),
      }),
    );
    await next();
  }

  /** Step 3 (core): the signature and its single-use mark; sets the caller identity for logs and analytics. */
  async function admit(c: Ctx): Promise<Admission> {
    const admission = await gate.admit(
      {
        signature: c.req.header(SIGNATURE_HEADER),
        method: c.req.method,
        url: c.req.url,
        body: c.get("rawBody") ?? new Uint8Array(),
        requestId: c.req.header(REQUEST_ID_HEADER),
        agentId: c.req.header(AGENT_ID_HEADER),
        checked: c.get("signatureHeaders"),
      },
      paths.caller,
      c.env.requestId,
    );
    callerIs(c, admission.caller);
    return admission;
  }

  /**
   * A 200 JSON response carrying `zc-usage`. The header is added after the body is set, not passed
   * with it: a JSON response that starts with one content-type header stays on Deno's cheap
   * response path, while a headers object built up front costs ~15 us per request.
   */
  const withUsage = (res: Response, usage: string) => {
    res.headers.set(USAGE_HEADER, usage);
    return res;
  };

  documented(app, forPaths(searchDoc, paths), requireSearchQuery, signedHeaders, readBody, async (c) => {
    // Asked first (Deno makes a request's signal on first use): a page its caller left records no impressions.
    const left = c.req.raw.signal;
    const admission = await admit(c);
    const { result, slug } = await admission.whileConsuming(async () => {
      const request = parseBody(c, searchRequestSchema);
      if (request.search_type !== undefined && !isSearchType(request.search_type)) {
        throw errors.invalid_field({ issue: `search_type must be one of ${SEARCH_TYPES.join(", ")}` });
      }
      // A reversed date window is refused before any billable step.
      filtersOf(request);
      const dm = await marketplaceDataModel(deps.repos.dataModels, c.req.query("data_model_id")!);
      // Full text the publisher does not license is refused before any billable step (403, no body).
      if (textOptionOf(request) !== null && !mayReadFullText(dm, {})) throw fullTextNotLicensed();
      const slug = serviceSlug(dm);
      await admission.requireAllowance(slug);
      // No tenantId: payproxy traffic is not the tenant's own platform usage.
      const result = await deps.search.recommend(dm, request, {
        caller: c.get("caller"),
        searchVersion: c.req.query("search_version"),
        requestId: c.env.requestId,
        left,
      });
      return { result, slug };
    });
    const texts = result.response.results.filter((r) => r.text !== undefined).length;
    return withUsage(await searchJson(c, result), admission.settle(slug, texts));
  });

  documented(app, forPaths(realtimeDoc, paths), signedHeaders, readBody, async (c) => {
    // Whether the caller left before the answer was made (its citations then shown to nobody). Asked
    // first: Deno makes a request's signal when first asked, and one made after its client left may
    // never abort.
    const callerSignal = c.req.raw.signal;
    const admission = await admit(c);
    const { query, wantsRelated, model } = await admission.whileConsuming(async () => {
      const id = c.req.param("aimodel_external_id") ?? "";
      if (!AM_ID_RE.test(id)) throw errors.invalid_model_id();
      const { query, related_questions: wantsRelated } = parseBody(c, realtimeBodySchema);
      // The bearer route's limit: the same orchestration takes the same bodies.
      if (query.length > MAX_QUERY_CHARS) throw errors.query_too_long({ limit: MAX_QUERY_CHARS });
      return { query, wantsRelated, model: await marketplaceAiModel(deps.repos.aiModels, id) };
    });
    const slug = serviceSlug(model);
    await admission.requireAllowance(slug);
    const answer = await deps.answer.answer(model, query, {
      caller: c.get("caller"),
      requestId: c.env.requestId,
      left: callerSignal,
    });
    const usage = admission.settle(slug);
    // Structured models emit their payload itself, not the {message} envelope (spec 2.3). No
    // follow-ups written (nor paid for) for a caller already gone.
    const related = wantsRelated && answer.kind === "text" && deps.answer.relatedQuestions
      ? {
        related_questions: callerSignal.aborted
          ? []
          : await deps.answer.relatedQuestions(model, query, answer.citations),
      }
      : {};
    const body = answer.kind === "structured"
      ? answer.payload
      : { message: answer.message, citations: answer.citations, ...related };
    return withUsage(c.json(body as Record<string, unknown>, 200), usage);
  });

  // Counters reveal traffic and allowance outcomes: operators only.
  if (paths.metrics) {
    documented(
      app,
      metricsDoc,
      requireOperator(deps.operatorKeys, { family: "message" }),
      (c) => c.json(metrics.snapshot(), 200),
    );
  }
  return app;
}

/** Step 1 of search: the required query parameter, answered in text/plain. */
async function requireSearchQuery(c: Ctx, next: () => Promise<void>): Promise<void> {
  const id = c.req.query("data_model_id");
  if (id === undefined || id === "") {
    throw errors.missing_data_model_id();
  }
  if (!DM_ID_RE.test(id)) throw errors.data_model_id_malformed();
  const version = c.req.query("search_version");
  if (version !== undefined && !isSearchVersion(version)) {
    throw errors.search_version_unknown({ versions: Object.keys(SEARCH_VERSIONS) });
  }
  await next();
}

/** Step 4: the raw bytes as a JSON object matching `schema`; every problem is a 422 `{message, code}`. */
function parseBody<T>(c: Ctx, schema: z.ZodType<T>): T {
  const decoded = decodeJson(c.get("rawBody") ?? new Uint8Array(), { object: true });
  if (!("value" in decoded)) throw errors.invalid_body({ why: decoded.kind === "syntax" ? decoded.why : null });
  const value = decoded.value;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  // A missing query is as empty as a blank one: one message for both, as the spec words it.
  if (issue.path[0] === "query" && (issue.code === "too_small" || (value as { query?: unknown }).query === undefined)) {
    throw errors.empty_query();
  }
  throw errors.invalid_field({ issue: describeIssue(issue) });
}
