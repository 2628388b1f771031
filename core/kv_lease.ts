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
  /** The lease's version as this owner's last acquire wrote it. */
  #held: string | null = null;

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
    this.#held = res.ok ? res.versionstamp : null;
    return res.ok;
  }

  /**
   * `op` checked against the lease as this owner's last {@link acquire} left it: it commits only if
   * nobody took the lease since (a holder that stalled past it, then took it again, fails too: what
   * it read before its last acquire may be stale).
   */
  checkHeld(op: Deno.AtomicOperation): Deno.AtomicOperation {
    return op.check({ key: this.key, versionstamp: this.#held ?? "00000000000000000000" });
  }

  /** Gives the lease up when this owner holds it, so another process need not wait for it to lapse. */
  async release(): Promise<void> {
    const cur = await this.#kv.get<LeaseRecord>(this.key);
    if (cur.value?.owner === this.owner) await this.#kv.atomic().check(cur).delete(this.key).commit();
  }
}
