/**
 * Limits of the public (unauthenticated) routes: per client address, per widget, and a daily quota
 * per widget, all counted in KV by core/rate_limit.ts so every process behind a shared KV counts
 * together. `/v1/events` uses them; the widget routes use the same factory for their own limits.
 */
import type { Context, MiddlewareHandler } from "hono";
import { AppError } from "../../core/errors.ts";
import type { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { senderNetwork } from "../../core/client_key.ts";
import { clientAddress } from "../storefront/client_address.ts";
import type { AppEnv } from "../env.ts";

/** What a public limit counts against: the caller's address, or the widget it names. */
export type PublicLimitScope = "address" | "widget" | "widget_daily";

// The refusals of the public limits, declared once: the spec's 429 `{message}` ("rate limit
// exceeded"), with the reason after a colon so a caller can tell which limit it met.
const LIMITED_MESSAGES: Record<PublicLimitScope, string> = {
  address: "rate limit exceeded: too many requests from this address",
  widget: "rate limit exceeded: too many requests for this widget",
  widget_daily: "rate limit exceeded: this widget's daily quota is used up",
};

/** The 429 of a public limit, with `Retry-After` (seconds). */
export function publicLimitExceeded(scope: PublicLimitScope, retryAfterS: number): AppError {
  return new AppError("rate_limited", "rate_limited", LIMITED_MESSAGES[scope], {
    headers: { "Retry-After": String(retryAfterS) },
  });
}

/**
 * Counts `cost` units (requests, or the events of a batch) for `key` and throws the public 429 when
 * they do not fit. A refused hit counts nothing, so a flood does not eat the quota it is refused from.
 * @throws AppError 429 with `Retry-After` over the limit
 */
export async function enforcePublicLimit(
  limiter: FixedWindowLimiter,
  scope: PublicLimitScope,
  key: string,
  cost = 1,
): Promise<void> {
  const r = await limiter.hit(key, cost);
  if (!r.allowed) throw publicLimitExceeded(scope, r.retryAfterS);
}

/** Options of {@link publicRateLimit}. */
export interface PublicRateLimitOptions {
  /** The KV counter (scope, limit, window). */
  limiter: FixedWindowLimiter;
  /** Which refusal message a caller sees. */
  scope: PublicLimitScope;
  /** The bucket a request counts against; null or undefined skips this limit. */
  key: (c: Context<AppEnv>) => string | null | undefined;
}

/**
 * Middleware of one public limit: one hit per request against `key(c)`; over the limit a 429
 * `{message: "rate limit exceeded: ..."}` with `Retry-After`, before the handler runs.
 * @example
 * app.use("/:wd/ask", publicRateLimit({ limiter: limits.widgetPerAddress, scope: "address",
 *   key: byClientAddress(config.trustProxy) }));
 */
export function publicRateLimit({ limiter, scope, key }: PublicRateLimitOptions): MiddlewareHandler<AppEnv> {
  return async function publicRateLimit(c, next) {
    const bucket = key(c);
    if (bucket) await enforcePublicLimit(limiter, scope, bucket);
    await next();
  };
}

/**
 * The bucket of a per-address limit: the client address (the socket peer, or the trusted proxy's
 * `X-Forwarded-For` hop), an IPv6 address as its /64, since one subscriber holds a whole /64.
 */
export function limitAddress(c: Context<AppEnv>, trustProxy: number): string {
  const address = clientAddress(c, trustProxy);
  return senderNetwork(address) ?? address;
}

/** The key function of a per-address limit ({@link limitAddress}). */
export const byClientAddress = (trustProxy: number) => (c: Context<AppEnv>): string => limitAddress(c, trustProxy);
