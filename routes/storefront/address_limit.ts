import type { MiddlewareHandler } from "hono";
import type { Deps } from "../../composition.ts";
import { sfError } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";
import { byClientAddress } from "../middleware/public_limits.ts";
import { rateLimit } from "../middleware/rate_limit.ts";

/**
 * The storefront's limit per client address (`STOREFRONT_RATE_LIMIT`; an IPv6 address counts as its
 * /64), shared by the identity and claim API and the claim page: over it 429 `rate_limit_exceeded`
 * with `retry_after` and `Retry-After`.
 */
export function storefrontAddressLimit(deps: Pick<Deps, "storefront" | "config">): MiddlewareHandler<AppEnv> {
  return rateLimit({
    limiter: deps.storefront.limiter,
    key: byClientAddress(deps.config.trustProxy),
    policy: "storefront",
    onLimited: (retryAfterS) =>
      sfError("rate_limited", "rate_limit_exceeded", "Too many requests: retry later", {
        extra: { retry_after: retryAfterS },
      }),
  });
}
