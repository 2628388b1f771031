/**
 * Idempotency-Key for purchases: the first request with a key runs and its paid result is kept
 * for a day; a repeat with the same terms replays it, one with other terms is refused (422), and
 * one arriving while the first still runs waits its turn (409). Key:
 * `["commerce_idem", sellerId, agent, key]`.
 */
import { retryWrite } from "../store/mod.ts";
import { type Clock, KV_EXPIRY_SLACK_MS } from "../clock.ts";
import { sha256Hex } from "../crypto.ts";
import type { PaymentTerms } from "./challenges.ts";
import { commerceErrors as errors } from "./errors.ts";

const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
// A request that held a key this long without finishing died with its process: the key is taken over.
const IDEMPOTENCY_STALE_MS = 60_000;
const IDEMPOTENCY_RE = /^[\x21-\x7e]{1,255}$/;
// Writes of a paid result tried before it is given up (and logged by the caller).
const REMEMBER_TRIES = 3;

/** What a paid request keeps under its key: the receipt body and the receipt header pairs. */
export interface KeptResult {
  body: Record<string, unknown>;
  /** `Payment-Receipt` (and x402 `PAYMENT-RESPONSE`) pairs. */
  receipts: [string, string][];
}

// The stored shape predates the split (responses written by older processes replay the same).
// `charged` is written in the commit that consumes the payment and grants its credit, so a request
// that died before its result was kept is answered from the payment, never charged again.
// `keptUntil` (unix ms) ends the record's life on read: KV's expireIn only sets its earliest deletion.
type Stored =
  | { hash: string; state: "running"; startedAt: string; keptUntil?: number }
  | { hash: string; state: "charged"; reference: string; startedAt: string; keptUntil?: number }
  | {
    hash: string;
    state?: "done";
    status: number;
    body: Record<string, unknown>;
    headers: [string, string][];
    keptUntil?: number;
  };

/** What a key says of an earlier request: its result to replay, or the payment it consumed. */
export type Earlier = { kept: KeptResult } | { charged: string };

/** A key as one request sees it: where it lives and the hash of the terms it was sent with. */
export interface KeyRef {
  key: Deno.KvKey;
  hash: string;
}

/** A key this request holds (it may charge). */
export interface HeldKey extends KeyRef {
  versionstamp: string;
}

const inUse = () => errors.idempotency_key_in_use({ headers: { "retry-after": "1" } });

export class IdempotencyKeys {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /**
   * The request's key, if it sent one, and the result to replay when it already ran.
   * @throws {AppError} `invalid_request` for a malformed key, `idempotency_key_reused`,
   *   `idempotency_key_in_use`
   */
  async lookup(headers: Headers, terms: PaymentTerms): Promise<(KeyRef & { earlier: Earlier | null }) | null> {
    const raw = headers.get("idempotency-key");
    if (raw === null) return null;
    if (!IDEMPOTENCY_RE.test(raw)) throw errors.idempotency_key_malformed();
    const hash = await sha256Hex(JSON.stringify(terms));
    const key: Deno.KvKey = ["commerce_idem", terms.sellerId, terms.agent, raw];
    const got = this.#live(await this.kv.get<Stored>(key));
    return { key, hash, earlier: got ? this.#replayOrRefuse(got, hash) : null };
  }

  /**
   * Claims the key for this request, atomically: exactly one of concurrent requests gets it; the
   * others replay its result (done) or get 409 (running). A stale claim is taken over.
   */
  async hold(ref: KeyRef): Promise<Earlier | HeldKey> {
    for (let i = 0; i < 8; i++) {
      const got = await this.kv.get<Stored>(ref.key);
      const live = this.#live(got);
      if (live) {
        const earlier = this.#replayOrRefuse(live, ref.hash);
        if (earlier) return earlier;
      }
      const now = this.clock.now();
      const running: Stored = {
        hash: ref.hash,
        state: "running",
        startedAt: now.toISOString(),
        keptUntil: now.getTime() + IDEMPOTENCY_TTL_MS,
      };
      const res = await this.kv.atomic().check(got).set(ref.key, running, {
        expireIn: IDEMPOTENCY_TTL_MS + KV_EXPIRY_SLACK_MS,
      }).commit();
      if (res.ok) return { key: ref.key, hash: ref.hash, versionstamp: res.versionstamp };
    }
    throw inUse();
  }

  /**
   * The write that marks the held key `charged` with the payment `reference`, for the commit that
   * consumes the payment and grants its credit (never checked: that commit must not fail on it).
   */
  markCharged(held: HeldKey, reference: string): (op: Deno.AtomicOperation) => Deno.AtomicOperation {
    const now = this.clock.now();
    const charged: Stored = {
      hash: held.hash,
      state: "charged",
      reference,
      startedAt: now.toISOString(),
      keptUntil: now.getTime() + IDEMPOTENCY_TTL_MS,
    };
    return (op) => op.set(held.key, charged, { expireIn: IDEMPOTENCY_TTL_MS + KV_EXPIRY_SLACK_MS });
  }

  /** Frees a held key: nothing to replay (a decline, a checkout not paid yet), the retry may run. */
  async release(held: HeldKey): Promise<void> {
    await this.kv.atomic().check({ key: held.key, versionstamp: held.versionstamp }).delete(held.key).commit();
  }

  /**
   * Keeps the paid result under the held key for repeats. Money moved already, so a failed write (a
   * KV error) is made again: a key left `running` is taken over after a minute, and a retry with a
   * new credential would then be charged again.
   * @throws the last error when every attempt failed
   */
  async remember(held: HeldKey, result: KeptResult): Promise<void> {
    const stored: Stored = {
      hash: held.hash,
      state: "done",
      status: 200,
      body: result.body,
      headers: [["cache-control", "no-store"], ...result.receipts],
      keptUntil: this.clock.now().getTime() + IDEMPOTENCY_TTL_MS,
    };
    await retryWrite(
      () => this.kv.set(held.key, stored, { expireIn: IDEMPOTENCY_TTL_MS + KV_EXPIRY_SLACK_MS }),
      REMEMBER_TRIES,
    );
  }

  /** What the key holds now: nothing once its day is over, whether or not KV has dropped it yet. */
  #live(got: Deno.KvEntryMaybe<Stored>): Stored | null {
    const v = got.value;
    return v && (v.keptUntil === undefined || v.keptUntil > this.clock.now().getTime()) ? v : null;
  }

  /** What a request finds under its key: the result to replay, the payment consumed, or 422 / 409 thrown. */
  #replayOrRefuse(got: Stored, hash: string): Earlier | null {
    if (got.hash !== hash) throw errors.idempotency_key_reused();
    if (got.state === "running") {
      if (this.clock.now().getTime() - Date.parse(got.startedAt) > IDEMPOTENCY_STALE_MS) return null;
      throw inUse();
    }
    if (got.state === "charged") return { charged: got.reference };
    return { kept: { body: got.body, receipts: got.headers.filter(([k]) => k.toLowerCase() !== "cache-control") } };
  }
}
