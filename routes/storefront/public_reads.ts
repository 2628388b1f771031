/**
 * The per-address limit of the public storefront families that have no limit of their own: payment
 * status (`statusUrl`), the checkout page, the catalog documents, and what an anonymous identity (free
 * to get) opens: the agent's reads (entitlements, balance) and its jwt-bearer token exchange. One KV
 * counter (`PUBLIC_READS_PER_MIN_PER_ADDRESS`), a key prefix per family, so an agent polling its
 * `statusUrl` every second does not use up a human's checkout page on the same address.
 */
import type { MiddlewareHandler } from "hono";
import type { Deps } from "../../composition.ts";
import { commerceErrors as errors } from "../../core/commerce/mod.ts";
import type { RateLimitResult } from "../../core/rate_limit.ts";
import type { AppEnv } from "../env.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { rateLimit } from "../middleware/rate_limit.ts";
import type { Context } from "hono";

/** A family counted by {@link publicReadLimit}: its key prefix. */
export type PublicReadFamily = "payments" | "checkout" | "catalog" | "agent_reads" | "agent_token";

/** How a limited storefront route's OpenAPI 429 reads. */
export const PUBLIC_READS_LIMITED_DOC =
  "rate_limit_exceeded: too many requests from this client address this minute (`retry_after`, `Retry-After`)";

/**
 * Middleware: one hit per request for the client address (IPv6: its /64) in `family`; over the limit
 * the storefront's 429 `rate_limit_exceeded` with `retry_after` and `Retry-After`.
 */
export function publicReadLimit(
  deps: Pick<Deps, "publicReadLimiter" | "config">,
  family: PublicReadFamily,
): MiddlewareHandler<AppEnv> {
  return rateLimit({
    limiter: deps.publicReadLimiter,
    key: (c) => `${family}:${limitAddress(c, deps.config.trustProxy)}`,
    policy: "public_reads",
    onLimited: (retryAfterS) => errors.public_reads_exhausted({ extra: { retry_after: retryAfterS } }),
  });
}

/** One hit for the client address in `family`, for a route that answers its own 429 (the checkout page's HTML). */
export function hitPublicRead(
  deps: Pick<Deps, "publicReadLimiter" | "config">,
  family: PublicReadFamily,
  c: Context<AppEnv>,
): Promise<RateLimitResult> {
  return deps.publicReadLimiter.hit(`${family}:${limitAddress(c, deps.config.trustProxy)}`);
}
