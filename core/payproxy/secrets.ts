/**
 * Per-seller payproxy signing secrets with rotation.
 *
 * KV: `["payproxy_secret", kid]` -> {@link PayproxySecret};
 * `["payproxy_secret_by_seller", sellerId, kid]` -> kid.
 *
 * A seller has at most one `current` and one `previous` secret; both verify. `rotate` makes a new
 * current, demotes the current to previous and retires the old previous; `retire` retires the
 * previous (or a named kid) so it stops verifying. Retired records stay, without their secret,
 * as an audit trail. Secrets are stored as-is because HMAC needs them; they are shown once, at
 * creation or rotation, and never logged.
 */
import type { Clock } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";
import type { KeyLookup, VerificationKey } from "./signature.ts";
import { boundedCache, type LRUCache } from "../bounded_cache.ts";

/** A stored signing secret. */
export interface PayproxySecret extends VerificationKey {
  createdAt: string;
  /** When it stopped being current. */
  rotatedAt?: string;
  retiredAt?: string;
}

/** A secret record without the secret, for listings. */
export type PayproxySecretInfo = Omit<PayproxySecret, "secret">;

/** Seller ids: the storefront's seller identifiers (short, URL- and log-safe). */
export const SELLER_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/;

/** A rule broken by a secret-store call (unknown seller, nothing to retire, ...). */
export class SecretStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretStoreError";
  }
}

const secretKey = (kid: string) => ["payproxy_secret", kid];
const sellerKey = (sellerId: string, kid: string) => ["payproxy_secret_by_seller", sellerId, kid];
const versionKey = (sellerId: string) => ["payproxy_secret_seller_version", sellerId];

/** New key id: `ppk_` + 16 base64url characters (96 random bits). */
const newKid = () => `ppk_${base64url(randomBytes(12))}`;
/** New secret: `pps_` + 43 base64url characters (256 random bits). */
const newSecret = () => `pps_${base64url(randomBytes(32))}`;

/**
 * The payproxy signing-secret store. Implements {@link KeyLookup} for the verifier.
 *
 * `get` is on every payproxy request, so records are cached for `cacheMs` (default 1 s; misses
 * too, bounded). Changes made through this instance clear the cache at once; changes made by
 * another process (the admin CLI) are seen within `cacheMs`.
 */
export class PayproxySecretStore implements KeyLookup {
  readonly #cache: LRUCache<string, { value: PayproxySecret | null }>;
  readonly #cacheMs: number;

  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock, { cacheMs = 1000 } = {}) {
    this.#cacheMs = cacheMs;
    // Misses are cached too; the bound keeps a stream of unknown kids from growing it.
    this.#cache = boundedCache({ max: 1000, ttlMs: cacheMs, now: () => performance.now() });
  }

  /** The record for `kid`, or null (cached up to `cacheMs`). */
  async get(kid: string): Promise<PayproxySecret | null> {
    const hit = this.#cache.get(kid);
    if (hit) return hit.value;
    const value = (await this.kv.get<PayproxySecret>(secretKey(kid))).value;
    if (this.#cacheMs > 0) this.#cache.set(kid, { value });
    return value;
  }

  /**
   * The seller and secret behind a `kid` when it may still verify (current or previous), else null.
   * The storefront's verifier asks this (its `SigningSecrets.byKid`).
   */
  async byKid(kid: string): Promise<{ sellerId: string; secret: string } | null> {
    const r = await this.get(kid);
    return r && (r.status === "current" || r.status === "previous") ? { sellerId: r.sellerId, secret: r.secret } : null;
  }

  /** The seller's secrets without their values, newest first. */
  async list(sellerId: string): Promise<PayproxySecretInfo[]> {
    const entries = await this.#sellerEntries(sellerId);
    return entries.map((e) => {
      const { secret: _secret, ...info } = e.value;
      return info;
    }).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** The seller's current secret (what a signer uses), or null. */
  async current(sellerId: string): Promise<{ kid: string; secret: string } | null> {
    const cur = (await this.#sellerEntries(sellerId)).find((e) => e.value.status === "current");
    return cur ? { kid: cur.value.kid, secret: cur.value.secret } : null;
  }

  /**
   * Creates the seller's first secret.
   * @throws {SecretStoreError} when the seller already has a current secret (rotate instead).
   */
  async create(sellerId: string): Promise<PayproxySecret> {
    return await this.#change(sellerId, (records) => {
      if (records.some((r) => r.status === "current")) {
        throw new SecretStoreError(`seller ${sellerId} already has a current secret; rotate it instead`);
      }
      return [];
    });
  }

  /**
   * Makes a new current secret; the current one becomes previous (still verifies) and the old
   * previous is retired.
   * @throws {SecretStoreError} when the seller has no current secret (create one first).
   */
  async rotate(sellerId: string): Promise<PayproxySecret> {
    const now = this.clock.now().toISOString();
    return await this.#change(sellerId, (records) => {
      if (!records.some((r) => r.status === "current")) {
        throw new SecretStoreError(`seller ${sellerId} has no current secret; create one first`);
      }
      const changed: PayproxySecret[] = [];
      for (const r of records) {
        if (r.status === "previous") changed.push(retired(r, now));
        else if (r.status === "current") changed.push({ ...r, status: "previous", rotatedAt: now });
      }
      return changed;
    });
  }

  /**
   * Retires a secret so it stops verifying: the seller's previous secret, or `kid` when given
   * (which may be the current one, leaving the seller without a working secret).
   * @throws {SecretStoreError} when there is nothing to retire.
   */
  async retire(sellerId: string, kid?: string): Promise<PayproxySecretInfo> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const entries = await this.#sellerEntries(sellerId);
      const target = entries.find((e) => kid ? e.value.kid === kid : e.value.status === "previous");
      if (!target) {
        throw new SecretStoreError(
          kid ? `no secret ${kid} for seller ${sellerId}` : `seller ${sellerId} has no previous secret to retire`,
        );
      }
      if (target.value.status === "retired") throw new SecretStoreError(`secret ${kid} is already retired`);
      const next = retired(target.value, this.clock.now().toISOString());
      const res = await this.kv.atomic().check(target).set(secretKey(next.kid), next).sum(versionKey(sellerId), 1n)
        .commit();
      if (res.ok) {
        this.#cache.clear();
        const { secret: _secret, ...info } = next;
        return info;
      }
    }
    throw new SecretStoreError(`secrets of seller ${sellerId} changed concurrently; retry`);
  }

  /**
   * Adds a new current secret after `plan` decided which existing records change, all in one
   * atomic commit guarded by the versionstamps read (retried on a concurrent change).
   */
  async #change(sellerId: string, plan: (records: PayproxySecret[]) => PayproxySecret[]): Promise<PayproxySecret> {
    if (!SELLER_ID_RE.test(sellerId)) throw new SecretStoreError("seller id must be 1 to 64 of A-Z a-z 0-9 . _ : -");
    for (let attempt = 0; attempt < 10; attempt++) {
      // The seller's version counter is read first and checked at commit: two concurrent creates
      // both see no records, and only the first one's commit leaves the counter unchanged.
      const guard = await this.kv.get(versionKey(sellerId));
      const entries = await this.#sellerEntries(sellerId);
      const changed = plan(entries.map((e) => e.value));
      const record: PayproxySecret = {
        kid: newKid(),
        sellerId,
        secret: newSecret(),
        status: "current",
        createdAt: this.clock.now().toISOString(),
      };
      const op = this.kv.atomic().check(guard).check({ key: secretKey(record.kid), versionstamp: null });
      for (const e of entries) op.check(e);
      for (const c of changed) op.set(secretKey(c.kid), c);
      op.set(secretKey(record.kid), record).set(sellerKey(sellerId, record.kid), record.kid);
      op.sum(versionKey(sellerId), 1n);
      if ((await op.commit()).ok) {
        this.#cache.clear();
        return record;
      }
    }
    throw new SecretStoreError(`secrets of seller ${sellerId} changed concurrently; retry`);
  }

  async #sellerEntries(sellerId: string): Promise<Deno.KvEntry<PayproxySecret>[]> {
    const kids: string[] = [];
    for await (const e of this.kv.list<string>({ prefix: ["payproxy_secret_by_seller", sellerId] })) kids.push(e.value);
    const out: Deno.KvEntry<PayproxySecret>[] = [];
    for (let i = 0; i < kids.length; i += 10) {
      const got = await this.kv.getMany<PayproxySecret[]>(kids.slice(i, i + 10).map(secretKey));
      for (const e of got) if (e.value) out.push(e as Deno.KvEntry<PayproxySecret>);
    }
    return out;
  }
}

function retired(r: PayproxySecret, now: string): PayproxySecret {
  // The secret itself is dropped: a retired key never verifies again, so nothing needs it.
  return { ...r, status: "retired", secret: "", retiredAt: now };
}
