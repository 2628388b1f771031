import type { MiddlewareHandler } from "hono";
import { sfError } from "../../core/storefront/errors.ts";
import type { FixedWindowLimiter } from "../../core/rate_limit.ts";
import type { AppEnv } from "../env.ts";
import { clientAddress } from "./client_address.ts";

/**
 * Limits requests per client address with a shared fixed window. Over the limit: 429
 * `rate_limit_exceeded` with `retry_after` (seconds) in the body and `Retry-After` in the headers.
 */
export function storefrontRateLimit(
  { limiter, trustProxy }: { limiter: FixedWindowLimiter; trustProxy: number },
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const r = await limiter.hit(clientAddress(c, trustProxy));
    if (!r.allowed) {
      throw sfError(429, "rate_limit_exceeded", "Too many requests: retry later", {
        extra: { retry_after: r.retryAfterS },
        headers: {
          "Retry-After": String(r.retryAfterS),
          "X-RateLimit-Limit": String(r.limit),
          "X-RateLimit-Remaining": "0",
        },
      });
    }
    await next();
    c.res.headers.set("X-RateLimit-Limit", String(r.limit));
    c.res.headers.set("X-RateLimit-Remaining", String(r.remaining));
  };
}
