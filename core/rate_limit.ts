import type { Clock } from "./clock.ts";

/** The outcome of one counted request. */
export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (>= 1). */
  retryAfterS: number;
}

/** One waiting hit of a key. */
interface Waiter {
  resolve(result: RateLimitResult): void;
  reject(err: unknown): void;
}

// Cross-process conflicts on one key: retries before refusing (within one process there are none).
const MAX_COMMIT_TRIES = 64;

/**
 * A fixed-window counter in Deno KV: `["rate", scope, key, windowStart]`, so every process behind
 * a shared KV counts together. Counting is check-and-set (not a blind sum) so the answer is exact:
 * never more than the limit through, never a refusal while quota is left. Within a process, the
 * hits of one key that arrive while a commit is under way are counted together in the next
 * commit, so concurrency does not turn into check-and-set conflicts; only other processes race.
 * Meant to be shared by the analytics and storefront limiters.
 */
export class FixedWindowLimiter {
  readonly #queues = new Map<string, Waiter[]>();

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
  hit(key: string): Promise<RateLimitResult> {
    return new Promise((resolve, reject) => {
      const queue = this.#queues.get(key);
      if (queue) {
        queue.push({ resolve, reject });
        return;
      }
      this.#queues.set(key, [{ resolve, reject }]);
      void this.#drain(key);
    });
  }

  /** Commits the queued hits of `key`, batch by batch, until none wait. */
  async #drain(key: string): Promise<void> {
    const queue = this.#queues.get(key)!;
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0);
        try {
          const results = await this.#count(key, batch.length);
          batch.forEach((w, i) => w.resolve(results[i]!));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#queues.delete(key);
    }
  }

  /** Counts `n` hits in one commit; the first ones within the limit are allowed, in order. */
  async #count(key: string, n: number): Promise<RateLimitResult[]> {
    const { scope, limit, windowS } = this.opts;
    const nowMs = this.clock.now().getTime();
    const windowMs = windowS * 1000;
    const start = Math.floor(nowMs / windowMs) * windowMs;
    const retryAfterS = Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000));
    const kvKey = ["rate", scope, key, start];
    const refused: RateLimitResult = { allowed: false, limit, remaining: 0, retryAfterS };
    for (let i = 0; i < MAX_COMMIT_TRIES; i++) {
      const entry = await this.kv.get<number>(kvKey);
      const count = entry.value ?? 0;
      const granted = Math.min(n, Math.max(0, limit - count));
      if (granted === 0) return Array(n).fill(refused);
      const res = await this.kv.atomic().check(entry).set(kvKey, count + granted, { expireIn: windowMs + 60_000 })
        .commit();
      if (res.ok) {
        return Array.from(
          { length: n },
          (_, j) => j < granted ? { allowed: true, limit, remaining: limit - count - j - 1, retryAfterS } : refused,
        );
      }
      // Another process counted first: back off a little (jittered) and count again.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** i)));
    }
    // Endless contention across processes on one key is itself a flood: refuse rather than fail open.
    return Array(n).fill(refused);
  }
}
