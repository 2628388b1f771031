import type { Context, MiddlewareHandler } from "hono";
import { AppError } from "../../core/errors.ts";
import type { FixedWindowLimiter } from "../../core/rate_limit.ts";
import type { AppEnv } from "../env.ts";

/** Options of {@link rateLimit}. */
export interface RateLimitOptions {
  /** The shared KV counter (its scope, limit and window), from core/rate_limit.ts. */
  limiter: FixedWindowLimiter;
  /** The bucket a request counts against (e.g. the API key id); null skips limiting. */
  key: (c: Context<AppEnv>) => string | null | undefined;
  /** The error thrown when over the limit; rendered by the route family's error handler. */
  onLimited?: (retryAfterS: number) => AppError;
  /** Name of the quota policy in the IETF `RateLimit` headers. */
  policy?: string;
}

const defaultLimited = (retryAfterS: number) =>
  new AppError("rate_limited", "rate_limited", "rate limit exceeded", {
    headers: { "Retry-After": String(retryAfterS) },
  });

/** How a route's OpenAPI 429 reads when it is limited per API key. */
export const RATE_LIMITED_DOC =
  "`rate limit exceeded`: too many requests for this API key this minute; `Retry-After` says when to try again";

/**
 * One hit per request on `limiter` in the bucket of the request's API key (after the key check);
 * over the limit the family's 429 `{message: "rate limit exceeded"}` with `Retry-After`.
 */
export function perApiKeyLimit(limiter: FixedWindowLimiter): MiddlewareHandler<AppEnv> {
  return rateLimit({ limiter, key: (c) => c.get("apiKey")?.id, policy: "api_key" });
}

/**
 * Fixed-window rate limiting per key, counted in KV (so every process shares the count).
 * Sets on every response:
 * - `X-RateLimit-Limit`: requests allowed per window;
 * - `X-RateLimit-Remaining`: requests left in the current window;
 * - `X-RateLimit-Reset`: seconds until the current window ends (a delta, not an epoch time);
 * - `RateLimit-Policy: "<policy>";q=<limit>;w=<window>` and `RateLimit: "<policy>";r=<remaining>;t=<reset>`
 *   (draft-ietf-httpapi-ratelimit-headers).
 * Over the limit it throws `onLimited(retryAfter)` (default 429 `{message: "rate limit exceeded"}`
 * with `Retry-After`), carrying the same headers.
 */
export function rateLimit(
  { limiter, key, onLimited = defaultLimited, policy = "default" }: RateLimitOptions,
): MiddlewareHandler<AppEnv> {
  // The counting is core/rate_limit.ts's shared KV fixed window; this layer adds the headers.
  const { limit, windowS } = limiter;
  return async function rateLimit(c, next) {
    const bucket = key(c);
    if (!bucket) return await next();
    const r = await limiter.hit(bucket);
    const headers: Record<string, string> = {
      "X-RateLimit-Limit": String(limit),
      "X-RateLimit-Remaining": String(r.remaining),
      "X-RateLimit-Reset": String(r.retryAfterS),
      "RateLimit-Policy": `"${policy}";q=${limit};w=${windowS}`,
      "RateLimit": `"${policy}";r=${r.remaining};t=${r.retryAfterS}`,
    };
    if (!r.allowed) {
      const err = onLimited(r.retryAfterS);
      throw new AppError(err.kind, err.code, err.message, {
        reason: err.reason,
        detail: err.detail,
        extra: err.extra,
        headers: { ...headers, "Retry-After": String(r.retryAfterS), ...err.headers },
      });
    }
    await next();
    for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  };
}
