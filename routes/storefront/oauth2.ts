import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { agentCors } from "../middleware/cors.ts";
import { rateLimit } from "../middleware/rate_limit.ts";
import { addAuthorizePage } from "./authorize_page.ts";
import { byClientAddress } from "../middleware/public_limits.ts";
import { addRegistrationRoute } from "./oauth_register.ts";
import { addTokenRoute } from "./token.ts";

/**
 * Mounted at `/oauth2` (RFC 6749 error body): `POST /token` (jwt-bearer, authorization_code,
 * refresh_token), `POST /register` (RFC 7591) and `GET|POST /authorize` (the consent page). CORS
 * for browser-hosted clients on all of them; registration, the consent page and every grant of the
 * token endpoint are rate-limited per client address.
 */
export function createOAuthRoutes(
  deps: Pick<Deps, "config" | "storefront" | "log" | "publicReadLimiter">,
): OpenAPIHono<AppEnv> {
  const app = familyApp("oauth", deps.log);
  app.use("*", agentCors());
  const limited = (retryAfterS: number) =>
    new AppError("rate_limited", "rate_limit_exceeded", "Too many requests: retry later", {
      extra: { retry_after: retryAfterS },
    });
  const limit = rateLimit({
    limiter: deps.storefront.limiter,
    key: byClientAddress(deps.config.trustProxy),
    policy: "storefront",
    onLimited: limited,
  });
  // Registrations are kept 30 days: a daily cap per address bounds what one address can store.
  const dailyRegistrations = rateLimit({
    limiter: deps.storefront.registrationLimiter,
    key: byClientAddress(deps.config.trustProxy),
    policy: "oauth_register",
    onLimited: limited,
  });
  app.use("/register", limit, dailyRegistrations);
  app.use("/authorize", limit);
  addTokenRoute(app, deps);
  addRegistrationRoute(app, deps);
  addAuthorizePage(app, deps);
  return app;
}
