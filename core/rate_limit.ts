import type { Clock } from "./clock.ts";
import { boundedCache } from "./bounded_cache.ts";

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
  /** Units it takes (all or none); negative for units given back ({@link FixedWindowLimiter.refund}). */
  cost: number;
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
 * The count this process last wrote or peeked at (with its versionstamp) is kept, so a key counted
 * here last costs one KV commit a hit instead of a read and a commit, and a hit after a peek reads
 * nothing again; a stale one fails its check and is read again. Meant to be shared by the analytics and storefront limiters.
 */
export class FixedWindowLimiter {
  readonly #queues = new Map<string, Waiter[]>();
  // The entry this process last committed (or peeked) per key and window: the check a next hit commits against.
  readonly #written = boundedCache<string, Deno.KvEntryMaybe<number>>({ max: 10_000 });

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

  /**
   * Counts one request (or `cost` units of it, e.g. the events of a batch) for `key` and says
   * whether it is within the limit. A hit is granted whole or not at all: a refused hit counts nothing.
   */
  hit(key: string, cost = 1): Promise<RateLimitResult> {
    const n = Math.max(1, Math.trunc(cost));
    return new Promise((resolve, reject) => this.#enqueue(key, { cost: n, resolve, reject }));
  }

  /**
   * Gives back `cost` units counted for `key` in the current window: for a limit that counts only
   * some outcomes (failed guesses), a request is counted before it runs, so concurrent ones cannot
   * all slip under the limit, and given back when it turns out not to count. Never below zero;
   * taken from the window current when given back (a request that spanned a window's end gives
   * back one unit of the next).
   */
  refund(key: string, cost = 1): Promise<void> {
    const n = -Math.max(1, Math.trunc(cost));
    return new Promise((resolve, reject) => this.#enqueue(key, { cost: n, resolve: () => resolve(), reject }));
  }

  /** Queues a hit or refund of `key`; the first of a key starts its drain. */
  #enqueue(key: string, waiter: Waiter): void {
    const queue = this.#queues.get(key);
    if (queue) {
      queue.push(waiter);
      return;
    }
    this.#queues.set(key, [waiter]);
    void this.#drain(key);
  }

  /**
   * What is left for `key` in this window, counting nothing: `allowed` is false once nothing is
   * left. A check before costly work (reading a body), which the work's own {@link hit} then counts.
   */
  async peek(key: string): Promise<RateLimitResult> {
    const { kvKey, cacheKey, retryAfterS } = this.#window(key);
    let entry: Deno.KvEntryMaybe<number> | undefined = this.#written.get(cacheKey);
    if (!entry) {
      entry = await this.kv.get<number>(kvKey);
      // Kept as if written here: the hit that follows a peek commits against it without reading again
      // (unless a hit of this process wrote a newer count meanwhile).
      if (!this.#written.has(cacheKey)) this.#written.set(cacheKey, entry);
    }
    const remaining = Math.max(0, this.opts.limit - (entry.value ?? 0));
    return { allowed: remaining > 0, limit: this.opts.limit, remaining, retryAfterS };
  }

  /** The current window of `key`: its KV key, its key in {@link #written}, its length and what is left of it. */
  #window(key: string) {
    const nowMs = this.clock.now().getTime();
    const windowMs = this.opts.windowS * 1000;
    const start = Math.floor(nowMs / windowMs) * windowMs;
    return {
      kvKey: ["rate", this.opts.scope, key, start] as Deno.KvKey,
      cacheKey: `${key}\u0000${start}`,
      windowMs,
      retryAfterS: Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000)),
    };
  }

  /** Commits the queued hits of `key`, batch by batch, until none wait. */
  async #drain(key: string): Promise<void> {
    const queue = this.#queues.get(key)!;
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0);
        try {
          const results = await this.#count(key, batch.map((w) => w.cost));
          batch.forEach((w, i) => w.resolve(results[i]!));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#queues.delete(key);
    }
  }

  /** Counts queued hits in one commit; each (in order) is allowed when its whole cost still fits. */
  async #count(key: string, costs: number[]): Promise<RateLimitResult[]> {
    const { limit } = this.opts;
    const { kvKey, cacheKey, windowMs, retryAfterS } = this.#window(key);
    const refused: RateLimitResult = { allowed: false, limit, remaining: 0, retryAfterS };
    let known: Deno.KvEntryMaybe<number> | undefined = this.#written.get(cacheKey);
    for (let i = 0; i < MAX_COMMIT_TRIES; i++) {
      const entry = known ?? await this.kv.get<number>(kvKey);
      const count = entry.value ?? 0;
      let used = count;
      const results = costs.map((cost): RateLimitResult => {
        if (cost < 0) { // a refund
          used = Math.max(0, used + cost);
          return { allowed: true, limit, remaining: limit - used, retryAfterS };
        }
        if (used + cost > limit) return { ...refused, remaining: Math.max(0, limit - used) };
        used += cost;
        return { allowed: true, limit, remaining: limit - used, retryAfterS };
      });
      if (used === count) return results;
      const res = await this.kv.atomic().check(entry).set(kvKey, used, { expireIn: windowMs + 60_000 }).commit();
      if (res.ok) {
        this.#written.set(cacheKey, { key: kvKey, value: used, versionstamp: res.versionstamp });
        return results;
      }
      this.#written.delete(cacheKey);
      // The kept count was stale (another process counted since): read it, no back-off.
      if (known) {
        known = undefined;
        continue;
      }
      // Another process counted first: back off a little (jittered) and count again.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** i)));
    }
    // Endless contention across processes on one key is itself a flood: refuse rather than fail open.
    return costs.map(() => refused);
  }
}
