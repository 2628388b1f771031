import type { Clock } from "./clock.ts";

/** The outcome of one counted request. */
export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (>= 1). */
  retryAfterS: number;
}

/**
 * A fixed-window counter in Deno KV: `["rate", scope, key, windowStart]`, so every process behind
 * a shared KV counts together. Counting is check-and-set (not a blind sum) so the answer is exact.
 * Meant to be shared by the analytics and storefront limiters.
 */
export class FixedWindowLimiter {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly opts: { scope: string; limit: number; windowS: number },
  ) {}

  /** Requests allowed per window. */
  get limit(): number {
    return this.opts.limit;
  }

  /** Window length in seconds. */
  get windowS(): number {
    return this.opts.windowS;
  }

  /** Counts one request for `key` and says whether it is within the limit. */
  async hit(key: string): Promise<RateLimitResult> {
    const { scope, limit, windowS } = this.opts;
    const nowMs = this.clock.now().getTime();
    const windowMs = windowS * 1000;
    const start = Math.floor(nowMs / windowMs) * windowMs;
    const retryAfterS = Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000));
    const kvKey = ["rate", scope, key, start];
    for (let i = 0; i < 16; i++) {
      const entry = await this.kv.get<number>(kvKey);
      const count = entry.value ?? 0;
      if (count >= limit) return { allowed: false, limit, remaining: 0, retryAfterS };
      const res = await this.kv.atomic().check(entry).set(kvKey, count + 1, { expireIn: windowMs + 60_000 }).commit();
      if (res.ok) return { allowed: true, limit, remaining: limit - count - 1, retryAfterS };
    }
    // Heavy contention on one key is itself a flood: refuse rather than fail open.
    return { allowed: false, limit, remaining: 0, retryAfterS };
  }
}
