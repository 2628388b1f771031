import type { Hono } from "hono";
import type { Deps } from "../../core/deps.ts";
import type { AppEnv } from "../env.ts";
import { errorFamily } from "../middleware/family.ts";
import { createClaimPageRoutes } from "./claim_page.ts";
import { createDiscoveryRoutes } from "./discovery.ts";
import { createIdentityRoutes } from "./identity.ts";
import { createStorefrontRouter, jsonObjectBody } from "./json_body.ts";
import { createOutboxRoutes } from "./outbox.ts";
import { sfError } from "../../core/storefront/errors.ts";
import { rateLimit } from "../middleware/rate_limit.ts";
import { clientAddress } from "./client_address.ts";
import { requireSeller } from "./seller.ts";
import { createTokenRoutes } from "./token.ts";

/**
 * Every storefront route of issue 7, served at AGENT_AUTH_URL beside the base routes (the paths
 * do not collide): identity registration and claims (seller from the Host header, rate-limited
 * per client address), the claim page, the token endpoint (oauth error family), discovery and
 * the JWKS, and the dev outbox. Middleware is bound to these paths only, never `*`, because this
 * router is mounted at `/` with the others.
 */
export function createStorefrontRoutes(deps: Deps): Hono<AppEnv> {
  const app = createStorefrontRouter();
  // Per client address; over the limit: 429 `rate_limit_exceeded` with `retry_after` and `Retry-After`.
  const limit = rateLimit({
    limiter: deps.storefront.limiter,
    key: (c) => clientAddress(c, deps.config.trustProxy),
    policy: "storefront",
    onLimited: (retryAfterS) =>
      sfError(429, "rate_limit_exceeded", "Too many requests: retry later", { extra: { retry_after: retryAfterS } }),
  });
  // "/agent/identity/*" also matches "/agent/identity" itself.
  app.use("/agent/identity/*", errorFamily("storefront"), requireSeller(deps), limit);
  app.post("/agent/identity/*", jsonObjectBody(deps.config.maxBodyBytes));
  for (const p of ["/claim/*", "/.well-known/*", "/dev/outbox"]) app.use(p, errorFamily("storefront"));
  app.use("/oauth2/token", errorFamily("oauth"));

  app.route("/", createIdentityRoutes(deps));
  app.route("/", createClaimPageRoutes(deps));
  app.route("/", createTokenRoutes(deps));
  app.route("/", createDiscoveryRoutes(deps));
  app.route("/", createOutboxRoutes(deps));
  return app;
}
