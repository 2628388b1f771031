/**
 * Single-use marks for verified signatures, in KV so every process behind a load balancer sees them.
 *
 * Each process also remembers the marks it made (bounded, until they expire), so a replay sent to
 * the same process is refused at once, without a KV round trip and before any work; KV decides
 * everything else (other processes, restarts, marks this process has forgotten).
 *
 * Each mark is a `check(versionstamp: null) + set(expireIn)` on its own key, so of two requests
 * carrying one signature exactly one wins, across processes. Marks are group-committed: while one
 * commit is in flight, new marks queue and then go out together in one atomic operation (at most
 * {@link MAX_BATCH}). A KV commit costs far more than its size, so under load this keeps the mark
 * from dominating a request; alone, a mark commits at once as before. A batch that fails (one of
 * its keys exists: a replay) is retried mark by mark, so one replay never fails its neighbours.
 */
import type { Clock } from "../clock.ts";
import { boundedCache, type LRUCache } from "../bounded_cache.ts";

/** Most marks in one atomic commit (KV allows 100 checks; half keeps well inside its size limits). */
export const MAX_BATCH = 50;
/** Marks a process remembers by default (~100 bytes each); older ones are left to KV alone. */
export const DEFAULT_RECENT_LIMIT = 50_000;

interface Pending {
  key: Deno.KvKey;
  id: string;
  expireIn: number;
  resolve: (first: boolean) => void;
  reject: (err: unknown) => void;
}

/** Group-committed single-use marks over one KV handle. */
export class ReplayMarks {
  readonly #kv: Deno.Kv;
  readonly #clock: Clock;
  // Marks made here, each remembered until it may be forgotten (its own lifetime).
  readonly #recent: LRUCache<string, true>;
  #queue: Pending[] = [];
  #draining = false;

  constructor(kv: Deno.Kv, { clock, recentLimit = DEFAULT_RECENT_LIMIT }: { clock: Clock; recentLimit?: number }) {
    this.#kv = kv;
    this.#clock = clock;
    this.#recent = boundedCache({ max: recentLimit, now: () => this.#clock.now().getTime() });
  }

  /**
   * Marks `key` used, keeping the mark at least `expireIn` ms.
   * @returns `false` at once for a mark this process made and remembers (a replay); otherwise a
   * promise of true when this call made the mark, false when it already existed (a replay).
   */
  mark(key: Deno.KvKey, expireIn: number): false | Promise<boolean> {
    const id = JSON.stringify(key);
    if (this.#recent.has(id)) return false;
    // Remembered before the commit: a replay arriving while it runs is refused here too. A commit
    // that then fails spends the signature all the same; the caller signs a retry anew.
    this.#recent.set(id, true, { ttl: Math.max(1, expireIn) });
    return new Promise((resolve, reject) => {
      this.#queue.push({ key, id, expireIn, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        // The same signature twice in one batch: the later ones are replays of the first.
        const unique = new Map<string, Pending>();
        for (const p of batch) {
          if (unique.has(p.id)) p.resolve(false);
          else unique.set(p.id, p);
        }
        await this.#commit([...unique.values()]);
      }
    } finally {
      this.#draining = false;
    }
  }

  async #commit(items: Pending[]): Promise<void> {
    try {
      if (items.length > 1) {
        const op = this.#kv.atomic();
        for (const p of items) op.check({ key: p.key, versionstamp: null }).set(p.key, 1, { expireIn: p.expireIn });
        if ((await op.commit()).ok) {
          for (const p of items) p.resolve(true);
          return;
        }
      }
      // Alone, or a batch that held a replay: one commit each, so only the replays lose.
      await Promise.all(items.map(async (p) => {
        try {
          const res = await this.#kv.atomic().check({ key: p.key, versionstamp: null })
            .set(p.key, 1, { expireIn: p.expireIn }).commit();
          p.resolve(res.ok);
        } catch (err) {
          p.reject(err);
        }
      }));
    } catch (err) {
      for (const p of items) p.reject(err);
    }
  }
}
