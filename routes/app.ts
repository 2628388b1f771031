import { OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../core/deps.ts";
import { notFound } from "../core/errors.ts";
import type { AppEnv } from "./env.ts";
import { createAnalyticsRoutes } from "./analytics.ts";
import { createAiModelRoutes } from "./aimodel.ts";
import { createErrorHandler } from "./errors.ts";
import { accessLog } from "./middleware/access_log.ts";
import { requestId } from "./middleware/request_id.ts";
import { createImageRoutes } from "./images.ts";
import { createRedirectRoutes } from "./redirect.ts";
import { createPayproxyRoutes } from "./payproxy.ts";
import { createResourceRoutes } from "./resources.ts";
import { createStorefrontRoutes } from "./storefront/mod.ts";
import { createSearchRoutes } from "./search.ts";
import { createCommerceRoutes } from "./storefront/commerce.ts";
import { registerStorefrontDocs } from "./storefront/commerce_docs.ts";
import { createSystemRoutes } from "./system.ts";
import { validationHook } from "./validation.ts";

/** Version of the service's interface description. */
export const API_VERSION = "1.0.0";

/**
 * Builds the whole HTTP app from its dependencies. No I/O happens here beyond what the deps do.
 */
export function createApp(deps: Deps): OpenAPIHono<AppEnv> {
  // deno-lint-ignore no-explicit-any
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook as any });
  app.use("*", requestId());
  app.use("*", accessLog(deps.log));
  app.use("*", async (c, next) => {
    c.set("family", "message");
    await next();
  });
  app.onError(createErrorHandler(deps.log));
  app.notFound(() => {
    throw notFound("Not found");
  });

  app.route("/", createSystemRoutes(deps));
  // Before the resource routes: their `/v1/*` key check must not run for widget event posts.
  app.route("/", createAnalyticsRoutes(deps));
  app.route("/", createResourceRoutes(deps));
  app.route("/", createStorefrontRoutes(deps));
  app.route("/", createRedirectRoutes(deps));
  app.route("/", createImageRoutes(deps));
  app.route("/", createSearchRoutes(deps));
  app.route("/", createAiModelRoutes(deps));
  app.route("/", createPayproxyRoutes(deps));
  app.route("/", createCommerceRoutes(deps, { self: (req) => app.fetch(req) }));

  registerStorefrontDocs(app);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "Tenant API key (`ak_...`)",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Article recommendation, real-time search, analytics and agent-payment API",
      version: API_VERSION,
    },
    servers: [{ url: deps.config.baseUrl }],
  });
  return app;
}
