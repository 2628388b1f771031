/**
 * The HTTP app. Every URL family is a sub-app mounted at its prefix, with its own `onError`
 * rendering its error body (routes/family.ts; the `message` family's is the root's); the root adds
 * the 404 of paths no family owns, and its `fetch` is wrapped in the request envelope (request ids,
 * the request's scope as `c.env`, the access log: routes/middleware/request_envelope.ts).
 *
 * Where each URL is served:
 *
 *   /                                     routes/front_page.ts (HTML, or JSON by Accept)
 *   /healthz, /readyz                     routes/system.ts (`/openapi.json`: here)
 *   /docs                                 routes/api_reference.ts (Swagger UI over /openapi.json)
 *   /app/v2/search                        routes/search.ts
 *   /app/aimodel/{id}                     routes/aimodel.ts
 *   /app/datamodel/{id} (legacy search)   routes/datamodel_legacy.ts
 *   /mcp, /.well-known/mcp.json           routes/mcp/mod.ts
 *   /payproxy/...                         routes/payproxy.ts
 *   /zeroclick/...                        routes/zeroclick.ts (the payproxy routes, Dappier's paths)
 *   /v1/analytics/...                     routes/analytics/mod.ts (+ analytics_insights.ts)
 *   /dashboard                            routes/analytics/dashboard_page.ts
 *   /v1/events                            routes/events.ts
 *   /v1/data-models[/{id}/articles]       routes/data_models.ts
 *   /v1/data-models/{id}/sources,         routes/sources.ts (inside the data-models family)
 *     /retention
 *   /v1/ai-models, widgets, campaigns,    routes/resources.ts (and every other `/v1` path)
 *     prompts
 *   /widget/v1/loader.js, /assets/...     routes/widget/assets.ts
 *   /r/{token}                            routes/redirect.ts
 *   /img                                  routes/images.ts
 *   /widget/v1/{wd}/config, ask,          routes/widget/api.ts (public, origin-checked)
 *     recommend
 *   storefront (AGENT_AUTH_URL)           routes/storefront/mod.ts mounts:
 *     /agent/identity/...                   identity.ts
 *     /agent/entitlements, /network/...     entitlements.ts
 *     /oauth2/token                         token.ts
 *     /.well-known/...                      discovery.ts
 *     /claim/{link}                         claim_page.ts
 *     /dev/outbox                           outbox.ts
 *     /plans/{id}/purchase, /extend         purchase.ts
 *     /payments/{ref}, /checkout/{ref}      checkout.ts
 *     /services, /manifest.json, /llms*.txt catalog.ts
 *     /internal/allowance                   allowance.ts
 *     /v2/search, /aimodel/{id}             paid_proxy.ts
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getPath } from "hono/utils/url";
import type { Deps } from "../composition.ts";
import { notFound } from "../core/errors.ts";
import { createAiModelRoutes } from "./aimodel.ts";
import { createAnalyticsRoutes } from "./analytics/mod.ts";
import { createDashboardRoutes } from "./analytics/dashboard_page.ts";
import { createDataModelRoutes } from "./data_models.ts";
import type { AppEnv } from "./env.ts";
import { createErrorHandler } from "./errors.ts";
import { createEventRoutes } from "./events.ts";
import { familyApp, mount } from "./family.ts";
import { createImageRoutes } from "./images.ts";
import { withRequestEnvelope } from "./middleware/request_envelope.ts";
import { createDatamodelLegacyRoutes } from "./datamodel_legacy.ts";
import { createMcpCardRoutes, createMcpRoutes } from "./mcp/mod.ts";
import { createPayproxyRoutes } from "./payproxy.ts";
import { createZeroclickRoutes } from "./zeroclick.ts";
import { createRedirectRoutes } from "./redirect.ts";
import { createResourceRoutes } from "./resources.ts";
import { createSearchRoutes } from "./search.ts";
import { mountStorefront } from "./storefront/mod.ts";
import { createSystemRoutes, sharedStoreProbe } from "./system.ts";
import { createFrontPageRoutes } from "./front_page.ts";
import { createApiReferenceRoutes } from "./api_reference.ts";
import { withExamples } from "./openapi_examples.ts";
import { acceptsGzip, AssetStore, type LoadedAsset, matchesEtag } from "./analytics/dashboard/assets.ts";
import { createWidgetApiRoutes } from "./widget/api.ts";
import { createWidgetAssetRoutes } from "./widget/assets.ts";
import { shardGuard } from "./shard_guard.ts";
import { PrefixSplitRouter } from "./router.ts";

import { API_VERSION } from "./version.ts";

/** Version of the service's interface description. */
export { API_VERSION };

/**
 * Builds the whole HTTP app from its dependencies and binds it as this process's own routes
 * (`deps.loopback`). No I/O happens here beyond what the deps do.
 */
export function createApp(deps: Deps): OpenAPIHono<AppEnv> {
  // The widget's paths on a trie, every other path on Hono's RegExpRouter (routes/router.ts).
  const app = new OpenAPIHono<AppEnv>({ router: new PrefixSplitRouter(["/widget/v1"]), getPath: mcpEndpointPath });
  const openApiConfig = {
    openapi: "3.1.0",
    info: {
      title: "Article recommendation, real-time search, analytics and agent-payment API",
      version: API_VERSION,
    },
    servers: [{ url: deps.config.baseUrl }],
  };
  const onError = createErrorHandler(deps.log, "message");
  // SEARCH_SHARD: a data model of another shard is 421 before any route (routes/shard_guard.ts).
  if (deps.config.searchShard) app.use("*", shardGuard(deps.config.searchShard));
  app.onError(onError);
  app.notFound(() => {
    throw notFound("Not found");
  });

  // System routes have no common prefix; they sit at the root, in the root's own family.
  const probe = sharedStoreProbe(deps);
  app.route("/", createSystemRoutes(deps, { probe }));
  app.route("/", createApiReferenceRoutes(deps, { title: openApiConfig.info.title }));
  app.route("/", createFrontPageRoutes(deps, { probe, title: openApiConfig.info.title }));
  // MCP (Streamable HTTP) and its server card, before the storefront's `/.well-known` family.
  app.route("/.well-known", createMcpCardRoutes(deps));
  mount(app, "/mcp", createMcpRoutes(deps));

  const bearerApi = familyApp("message", deps.log);
  bearerApi.route("/v2/search", createSearchRoutes(deps));
  bearerApi.route("/aimodel", createAiModelRoutes(deps));
  // The old docs' and the Go SDK's path for the same search.
  bearerApi.route("/datamodel", createDatamodelLegacyRoutes(deps));
  mount(app, "/app", bearerApi);
  mount(app, "/payproxy", createPayproxyRoutes(deps));
  mount(app, "/zeroclick", createZeroclickRoutes(deps));

  // The `/v1` families with files of their own first: the `/v1` resource app owns every other
  // `/v1` path (and asks for an API key before its 404).
  mount(app, "/v1/analytics", createAnalyticsRoutes(deps));
  mount(app, "/dashboard", createDashboardRoutes(deps));
  mount(app, "/v1/events", createEventRoutes(deps));
  mount(app, "/v1/data-models", createDataModelRoutes(deps));
  mount(app, "/v1", createResourceRoutes(deps));

  mount(app, "/r", createRedirectRoutes(deps));
  mount(app, "/img", createImageRoutes(deps));
  // The widget's scripts, before the widget API family (which owns the rest of `/widget/v1`).
  app.route("/widget/v1", createWidgetAssetRoutes(deps));
  // The public widget API (after the widget's asset routes, which share the prefix).
  mount(app, "/widget/v1", createWidgetApiRoutes(deps));
  mountStorefront(app, deps);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "Tenant API key (`ak_...`)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "agentToken", {
    type: "http",
    scheme: "bearer",
    description:
      "Agent access token from POST /oauth2/token; in `ZC-Agent-Authorization` when `Authorization` carries `Payment ...`",
  });
  // The documents are built once, at the first request (every route is registered by then), with the
  // demo-shaped examples merged in. /docs reads the 3.0 rendering of the same routes: Swagger UI's
  // OpenAPI 3.1 path takes about a second longer to draw the same document.
  app.get("/openapi.json", servedJson(() => withExamples(app.getOpenAPI31Document(openApiConfig))));
  app.get(
    "/openapi-3.0.json",
    servedJson(() => withExamples(app.getOpenAPIDocument({ ...openApiConfig, openapi: "3.0.3" }))),
  );
  // The root: every request's id, scope and access-log line (app.request() in tests goes through it).
  app.fetch = withRequestEnvelope(app.fetch, deps.log);
  deps.loopback.bind(app.fetch);
  return app;
}

/**
 * A JSON document built on first use and kept as bytes with a gzip copy and an ETag (the OpenAPI
 * documents are about 170 KB of JSON, 20 KB gzipped, and the API reference loads one on every visit).
 */
function servedJson(build: () => unknown) {
  let doc: LoadedAsset | undefined;
  return (c: Context<AppEnv>) => {
    doc ??= new AssetStore({ "doc.json": { text: JSON.stringify(build()), type: "application/json" } }).get(
      "doc.json",
    )!;
    const headers = { etag: doc.etag, "cache-control": "no-cache", vary: "Accept-Encoding" };
    if (matchesEtag(c.req.header("if-none-match"), doc.etag)) return c.body(null, 304, headers);
    return acceptsGzip(c.req.header("accept-encoding"))
      ? c.body(doc.gzip, 200, { ...headers, "content-type": doc.type, "content-encoding": "gzip" })
      : c.body(doc.bytes, 200, { ...headers, "content-type": doc.type });
  };
}

/**
 * The routed path: Hono's, with `/mcp/` read as `/mcp`. Streamable HTTP has one endpoint, and
 * several MCP hosts normalise a configured server URL to a trailing slash; every method (CORS
 * preflight included) then meets the same routes. The documented path stays `/mcp`.
 */
function mcpEndpointPath(request: Request): string {
  const path = getPath(request);
  return path === "/mcp/" ? "/mcp" : path;
}
