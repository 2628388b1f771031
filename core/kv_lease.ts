import type { Clock } from "./clock.ts";

/** A lease as stored in KV: who holds it and until when (ms since the epoch, by the injected clock). */
export interface LeaseRecord {
  owner: string;
  until: number;
}

/**
 * A time-limited, renewable claim on some work shared by every process on one KV: only the
 * holder does the work. A holder that dies stops renewing, and its lease lapses after `ttlMs`,
 * so another process takes over within one lease period. Expiry is read from the value by the
 * injected clock (KV's `expireIn` only sets the earliest deletion).
 * @example
 * const lease = new KvLease({ kv, clock, key: ["ev_flush_lease"], owner: crypto.randomUUID(), ttlMs: 15_000 });
 * if (await lease.acquire()) { ... } // takes it, or renews it when this owner holds it
 */
export class KvLease {
  readonly key: Deno.KvKey;
  readonly owner: string;
  readonly #kv: Deno.Kv;
  readonly #clock: Clock;
  readonly #ttlMs: number;

  constructor({ kv, clock, key, owner, ttlMs }: {
    kv: Deno.Kv;
    clock: Clock;
    key: Deno.KvKey;
    owner: string;
    ttlMs: number;
  }) {
    this.#kv = kv;
    this.#clock = clock;
    this.key = key;
    this.owner = owner;
    this.#ttlMs = ttlMs;
  }

  /** Takes the lease when it is free or lapsed, renews it when this owner holds it; false when another holds it. */
  async acquire(): Promise<boolean> {
    const nowMs = this.#clock.now().getTime();
    const cur = await this.#kv.get<LeaseRecord>(this.key);
    if (cur.value && cur.value.owner !== this.owner && cur.value.until > nowMs) return false;
    const res = await this.#kv.atomic().check(cur)
      .set(this.key, { owner: this.owner, until: nowMs + this.#ttlMs } satisfies LeaseRecord).commit();
    return res.ok;
  }

  /** Gives the lease up when this owner holds it, so another process need not wait for it to lapse. */
  async release(): Promise<void> {
    const cur = await this.#kv.get<LeaseRecord>(this.key);
    if (cur.value?.owner === this.owner) await this.#kv.atomic().check(cur).delete(this.key).commit();
  }
}
