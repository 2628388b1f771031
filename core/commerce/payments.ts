/**
 * Payment references and their states. A reference is the id of the challenge it answers (an HMAC,
 * unguessable). Records exist only once a payment is attempted or a checkout is opened; a plain 402
 * writes nothing.
 *
 *   open (checkout page waiting for a human) -> paid -> consumed
 *   processing (a charge in flight)          -> consumed | failed | (deleted: provider outage)
 *   processing -> paid (a standard method settled; consumed next, or redeemed by its credential)
 *   open -> released (cancelled on the page, or expired)      paid/consumed -> refunded (operator)
 *   consumed -> refunded (a pay-as-you-go call whose upstream answered an error; automatic)
 *   released -> refunded | paid (a checkout charge that succeeded after the human cancelled it)
 *
 * `consumed`, `failed`, `refunded`, `released` are terminal: the reference cannot be spent again.
 * Key: `["commerce_payment", sellerId, reference]`. A purchase settled by a facilitator whose
 * transfer the storefront's node has not confirmed yet stays `processing` and is listed for its
 * agent under `["commerce_unconfirmed", sellerId, credentialId, reference]` until it is resolved.
 * A standard settlement is also listed by when the settlement sweep (settle_sweep.ts) next looks at
 * it (`["commerce_settle_recheck", recheckAt, sellerId, reference]`), an `evm` one from its claim and
 * a `stripe` one once `paid`, until it is resolved ({@link sweepable}): the sweep resolves one whose
 * agent never came back.
 *
 * Lifetimes in KV ({@link keepInKv}): a record of money that moved (or may be moving) is kept for
 * good; a record that moved none (`open`, `failed`, `released`) goes a day after its reference can
 * no longer be presented. Any agent may answer fresh 402s with made-up tokens,
 * as often as it likes: their `failed` records would otherwise fill KV.
 */
import type { Clock } from "../clock.ts";
import type { AppError } from "../errors.ts";
import type { LeaseRecord } from "../kv_lease.ts";
import { commerceErrors as errors } from "./errors.ts";
import { CHALLENGE_TTL_MS, type PaymentTerms } from "./challenges.ts";
import type { ChainTransfer, EvmAuthorization } from "./standard_methods.ts";
import type { PaymentMethodName } from "./types.ts";

const DAY_MS = 86_400_000;

export type PaymentState = "open" | "processing" | "paid" | "consumed" | "failed" | "refunded" | "released";

export interface PaymentRecord {
  reference: string;
  sellerId: string;
  rail: PaymentMethodName;
  state: PaymentState;
  terms: PaymentTerms;
  amountMicros: number;
  createdAt: string;
  updatedAt: string;
  /** Checkout lane: after this the open checkout is released. */
  expiresAt?: string;
  processorRef?: string;
  settlementReason?: string;
  /** Refunded: why (`upstream_error`), and the processor's id of the refund when it made one. */
  refundReason?: string;
  refundRef?: string;
  /** Checkout lane: cards declined so far on this checkout (the human may try another card). */
  declines?: number;
  /** The response of the request that consumed it, replayed for the same Idempotency-Key. */
  idempotencyKey?: string;
  /**
   * Standard methods: the last moment the credential can be presented again (its challenge's expiry,
   * or an x402 authorization's `validBefore`, at most {@link STANDARD_PRESENTABLE_MAX_MS} ahead).
   */
  presentableUntil?: string;
  /** A standard settlement the storefront's node has not confirmed yet (the state stays `processing`). */
  pendingTransfer?: ChainTransfer;
  /** An `evm` settlement: the EIP-3009 authorization it submits, what the chain is asked about later. */
  authorization?: EvmAuthorization;
  /** An `evm` settlement whose facilitator answer never came (no transaction named): a retry asks the chain. */
  answerLost?: boolean;
  /** While {@link sweepable}: when the settlement sweep next looks at it (ms since the epoch; see {@link recheckKey}). */
  recheckAt?: number;
  /** How often the sweep asked already without an answer (its backoff grows with it). */
  rechecks?: number;
  /** An `evm` settlement rechecked: the block its next look for the authorization's logs starts at. */
  logsFromBlock?: number;
  /**
   * A pay-as-you-go call `paid` by the sweep: its settlement was confirmed after the agent was told
   * 503, so the answer it paid for was never delivered; the same credential sent again is served once
   * (by one copy at a time: {@link PaymentStore.claimAnswer}).
   */
  answerOwed?: boolean;
}

export const paymentKey = (sellerId: string, reference: string): Deno.KvKey => [
  "commerce_payment",
  sellerId,
  reference,
];

/** Where an agent's purchases awaiting their on-chain confirmation are listed. */
const unconfirmedKey = (p: PaymentRecord): Deno.KvKey => [
  "commerce_unconfirmed",
  p.sellerId,
  p.terms.agent,
  p.reference,
];

const RECHECK_PREFIX = "commerce_settle_recheck";
/**
 * How long KV keeps one recheck listing, so none is kept for good: far past the sweep's longest
 * backoff (each relisting writes a new key): a listing lapses only when no sweep ran for that long.
 */
const RECHECK_LISTING_TTL_MS = 30 * DAY_MS;
/** Where a `processing` settlement is listed by when the sweep next looks at it. */
const recheckKey = (p: PaymentRecord): Deno.KvKey => [RECHECK_PREFIX, p.recheckAt!, p.sellerId, p.reference];

/** One due entry of the recheck list: the reference, and the entry to remove it by. */
export interface DueRecheck {
  sellerId: string;
  reference: string;
  at: number;
  entry: Deno.KvEntry<string>;
}

/**
 * Whether the settlement sweep looks at a record in this state: `processing` (its outcome unknown),
 * or a standard settlement `paid` and never consumed (its credit failed to commit; a call's
 * answer given but its consume not recorded). A call `paid` with its answer owed waits for its agent.
 */
export function sweepable(p: PaymentRecord): boolean {
  return p.recheckAt !== undefined && (p.state === "processing" || (p.state === "paid" && !p.answerOwed));
}

/**
 * Keeps the listings of a record that moves from `prev` to `next` (null: deleted) in step, in `op`:
 * its recheck listing while it is {@link sweepable} (moved with its due time), its agent's
 * unconfirmed listing while it is `processing`.
 */
function relist(op: Deno.AtomicOperation, prev: PaymentRecord | null, next: PaymentRecord | null): void {
  const was = prev && sweepable(prev) ? recheckKey(prev) : null;
  const is = next && sweepable(next) ? recheckKey(next) : null;
  const same = was !== null && is !== null && prev!.recheckAt === next!.recheckAt;
  if (was && !same) op.delete(was);
  if (is && !same) op.set(is, next!.reference, { expireIn: RECHECK_LISTING_TTL_MS });
  if (prev?.pendingTransfer && next?.state !== "processing") op.delete(unconfirmedKey(prev));
}

/** The state as of now: an open checkout past its expiry reads as released. */
export function effectiveState(p: PaymentRecord, clock: Clock): PaymentState {
  if (p.state === "open" && p.expiresAt && Date.parse(p.expiresAt) <= clock.now().getTime()) return "released";
  return p.state;
}

/**
 * The storefront error for a reference in a terminal state, or null when it can still move.
 */
export function terminalError(p: PaymentRecord, state: PaymentState): AppError | null {
  switch (state) {
    case "consumed":
      return errors.payment_consumed({ detail: `reference ${p.reference} was consumed` });
    case "paid":
      // A pay-as-you-go call is settled only after its upstream answered: paid, it was served (unless
      // the sweep confirmed it after the agent was told 503: its answer is still owed).
      return p.terms.action === "call" && !p.answerOwed
        ? errors.payment_consumed({ detail: `reference ${p.reference} was consumed` })
        : null;
    case "failed":
      return errors.payment_failed({
        detail: p.settlementReason ? `settlementReason: ${p.settlementReason}` : undefined,
      });
    case "refunded":
      return errors.payment_refunded();
    case "released":
      return errors.payment_released();
    default:
      return null;
  }
}

/**
 * How far ahead a standard credential's own validity is believed: an x402 payer picks its EIP-3009
 * `validBefore` freely. Past this its failed record goes, and the credential, presented again, is
 * settled afresh (it pays what it was signed for, or fails again).
 */
export const STANDARD_PRESENTABLE_MAX_MS = 7 * DAY_MS;

/**
 * How long KV keeps a record as it now stands: undefined (for good) once money moved or may be
 * moving (`processing`, `paid`, `consumed`, `refunded`); otherwise a day past the last moment the
 * reference can be presented: a card or wallet challenge's ten minutes, a checkout's expiry, a
 * standard credential's {@link PaymentRecord.presentableUntil} (kept for good without one).
 */
export function keepInKv(p: PaymentRecord, nowMs: number): { expireIn: number } | undefined {
  if (p.state !== "open" && p.state !== "failed" && p.state !== "released") return undefined;
  let lastUse: number;
  if (p.rail === "card" || p.rail === "wallet") {
    // A challenge is answered at most its ten minutes after it was issued, which was before the record.
    lastUse = p.expiresAt ? Date.parse(p.expiresAt) : Date.parse(p.createdAt) + CHALLENGE_TTL_MS;
  } else if (p.presentableUntil) lastUse = Date.parse(p.presentableUntil);
  else return undefined;
  return { expireIn: Math.max(0, lastUse - nowMs) + DAY_MS };
}

/** A pay-as-you-go call charged and not ended yet (see {@link PaymentStore.callOpened}). */
export interface OpenCall {
  sellerId: string;
  reference: string;
  rail: "card" | "wallet";
  processorRef: string;
  amountMicros: number;
  requestId: string;
  /** When it was charged, or last taken to be refunded (ISO): the mark sorts by it. */
  at: string;
  /** When it was charged (ISO), kept when the mark is taken: a refund failing for long is given up. */
  openedAt?: string;
}

const OPEN_CALL_PREFIX = "commerce_call_open";
const openCallKey = (c: OpenCall): Deno.KvKey => [OPEN_CALL_PREFIX, c.at, c.sellerId, c.reference];

/**
 * The claim of one request on giving a pay-as-you-go call's owed answer (see
 * {@link PaymentStore.claimAnswer}): its key, and the exact entry it wrote.
 */
export interface AnswerClaim {
  key: Deno.KvKey;
  versionstamp: string;
}

const answeringKey = (sellerId: string, reference: string): Deno.KvKey => [
  "commerce_call_answering",
  sellerId,
  reference,
];

/** Reads and moves payment records. */
export class PaymentStore {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  get(sellerId: string, reference: string): Promise<Deno.KvEntryMaybe<PaymentRecord>> {
    return this.kv.get<PaymentRecord>(paymentKey(sellerId, reference));
  }

  /** Opens a checkout (the hosted page a human pays on), kept in KV by {@link keepInKv}. */
  async openCheckout(record: PaymentRecord): Promise<void> {
    const key = paymentKey(record.sellerId, record.reference);
    const res = await this.kv.atomic().check({ key, versionstamp: null }).set(key, record, this.#keep(record))
      .commit();
    if (!res.ok) throw errors.checkout_exists();
  }

  /**
   * Claims a reference for a charge about to run (`record`, in state `processing`), atomically: of
   * concurrent claims exactly one wins, so a reference is charged once. `takeOver` is the entry of a
   * claim abandoned by a dead process, replaced only if it is still exactly that.
   * @returns the claimed entry, or null when the reference is already taken (read it for its state)
   */
  async claim(
    record: PaymentRecord,
    takeOver?: Deno.KvEntry<PaymentRecord>,
  ): Promise<Deno.KvEntry<PaymentRecord> | null> {
    const key = paymentKey(record.sellerId, record.reference);
    const op = this.kv.atomic().check(takeOver ?? { key, versionstamp: null }).set(key, record, this.#keep(record));
    relist(op, null, record);
    const res = await op.commit();
    return res.ok ? { key, value: record, versionstamp: res.versionstamp } : null;
  }

  /** Gives a claim back (nothing was charged): the reference is free again. False when it changed meanwhile. */
  async release(entry: Deno.KvEntry<PaymentRecord>): Promise<boolean> {
    const op = this.kv.atomic().check(entry).delete(entry.key);
    relist(op, entry.value, null);
    return (await op.commit()).ok;
  }

  /**
   * Moves a record from the exact entry read to `patch`, atomically, with `also` in the same commit;
   * false when it changed meanwhile.
   */
  async move(
    entry: Deno.KvEntry<PaymentRecord>,
    patch: Partial<PaymentRecord>,
    also: (op: Deno.AtomicOperation) => Deno.AtomicOperation = (op) => op,
  ): Promise<boolean> {
    const next = { ...entry.value, ...patch, updatedAt: this.clock.now().toISOString() };
    const op = this.kv.atomic().check(entry).set(entry.key, next, this.#keep(next));
    relist(op, entry.value, next);
    return (await also(op).commit()).ok;
  }

  /**
   * Keeps a claimed reference `processing` with the settlement its facilitator reported, until the
   * storefront's node confirms the transfer; a purchase is listed for its agent, so a later read of
   * its entitlements grants the credit.
   */
  async awaitTransfer(entry: Deno.KvEntry<PaymentRecord>, transfer: ChainTransfer): Promise<boolean> {
    const next: PaymentRecord = {
      ...entry.value,
      processorRef: transfer.transaction,
      pendingTransfer: transfer,
      updatedAt: this.clock.now().toISOString(),
    };
    const op = this.kv.atomic().check(entry).set(entry.key, next, this.#keep(next));
    if (next.terms.action !== "call") op.set(unconfirmedKey(next), next.reference);
    return (await op.commit()).ok;
  }

  /** References of this agent's purchases here awaiting their on-chain confirmation (at most `limit`). */
  async unconfirmed(sellerId: string, credentialId: string, limit: number): Promise<string[]> {
    const out: string[] = [];
    for await (
      const e of this.kv.list<string>({ prefix: ["commerce_unconfirmed", sellerId, credentialId] }, { limit })
    ) {
      out.push(e.value);
    }
    return out;
  }

  /**
   * Settlements due for a recheck at `nowMs` (listed at their claim, oldest first), at most `limit`.
   */
  async dueRechecks(nowMs: number, limit: number): Promise<DueRecheck[]> {
    const out: DueRecheck[] = [];
    const sel = { prefix: [RECHECK_PREFIX], end: [RECHECK_PREFIX, nowMs + 1] };
    for await (const e of this.kv.list<string>(sel, { limit })) {
      const [, at, sellerId] = e.key as [string, number, string, string];
      out.push({ sellerId, reference: e.value, at, entry: e });
    }
    return out;
  }

  /** Drops a recheck listing whose record moved on (or is gone), if it is still exactly that entry. */
  async dropRecheck(due: DueRecheck): Promise<void> {
    await this.kv.atomic().check(due.entry).delete(due.entry.key).commit();
  }

  /**
   * Lists a still-unknown settlement again for `atMs` (one more recheck counted), atomically with
   * the exact entry read: of two sweeps that looked at it, one reschedules it. False when it changed.
   */
  async recheckLater(
    entry: Deno.KvEntry<PaymentRecord>,
    atMs: number,
    patch: Pick<PaymentRecord, "logsFromBlock"> = {},
  ): Promise<boolean> {
    const next: PaymentRecord = {
      ...entry.value,
      ...patch,
      recheckAt: atMs,
      rechecks: (entry.value.rechecks ?? 0) + 1,
    };
    const op = this.kv.atomic().check(entry).set(entry.key, next, this.#keep(next));
    relist(op, entry.value, next);
    return (await op.commit()).ok;
  }

  /**
   * Takes a settlement the sweep gave up on off its recheck list and its agent's unconfirmed list (its
   * reads stop asking the node), its state as it is (the operator's now), atomically with the exact
   * entry read. False when it changed.
   */
  async stopRechecks(entry: Deno.KvEntry<PaymentRecord>): Promise<boolean> {
    const { recheckAt: _, ...next } = entry.value;
    const op = this.kv.atomic().check(entry).set(entry.key, next, this.#keep(next));
    relist(op, entry.value, next);
    if (entry.value.pendingTransfer) op.delete(unconfirmedKey(entry.value));
    return (await op.commit()).ok;
  }

  /**
   * Claims the giving of a pay-as-you-go call's owed answer (its settlement confirmed after the
   * agent was told 503: `paid` with its answer owed, or `processing` and about to be confirmed) for
   * `ttlMs`, atomically with the exact record read: of concurrent copies of the credential (or
   * processes on one KV) exactly one runs the upstream; the others find the claim held, or the record
   * moved on. The claim ends with the record's consume ({@link answerGiven}), or is released when the
   * answer could not be given ({@link releaseAnswer}), or lapses with a process that died.
   * @returns the claim, or null when a live one is held or the record changed since it was read
   */
  async claimAnswer(entry: Deno.KvEntry<PaymentRecord>, ttlMs: number): Promise<AnswerClaim | null> {
    const key = answeringKey(entry.value.sellerId, entry.value.reference);
    const nowMs = this.clock.now().getTime();
    // Held until `until`; the claim is told apart by the entry it wrote, so it names no owner.
    const held = await this.kv.get<Pick<LeaseRecord, "until">>(key);
    if (held.value && held.value.until > nowMs) return null;
    const lease: Pick<LeaseRecord, "until"> = { until: nowMs + ttlMs };
    const res = await this.kv.atomic().check(entry).check(held).set(key, lease, { expireIn: ttlMs }).commit();
    return res.ok ? { key, versionstamp: res.versionstamp } : null;
  }

  /** Gives up a claim whose answer was not given (the upstream failed): the answer stays owed. */
  async releaseAnswer(claim: AnswerClaim): Promise<void> {
    await this.kv.atomic().check(claim).delete(claim.key).commit();
  }

  /**
   * Ends a claim in the commit that consumes its record (the answer given), checked against the
   * claim as written: a request whose claim lapsed and was taken over does not consume (it lost the
   * reference to the one that took it, which is answering), nor end the other's claim.
   */
  answerGiven(claim: AnswerClaim): (op: Deno.AtomicOperation) => Deno.AtomicOperation {
    return (op) => op.check(claim).delete(claim.key);
  }

  /**
   * The mark of a pay-as-you-go call whose charge is consumed and whose answer is not given yet,
   * written in the commit that consumes it: a process killed before the call ends leaves it, and
   * {@link takeStaleCalls} finds it to refund.
   */
  callOpened(call: OpenCall): (op: Deno.AtomicOperation) => Deno.AtomicOperation {
    return (op) => op.set(openCallKey(call), call);
  }

  /** Removes the mark of a call that ended (answered, or refunded). */
  async callEnded(call: OpenCall): Promise<void> {
    await this.kv.delete(openCallKey(call));
  }

  /**
   * Takes the mark of this call to refund it, atomically: the taken mark for the one caller that
   * moved it, null when another took it first, so a call's own refund and the sweep's
   * ({@link takeStaleCalls}) racing refund it once. End the taken mark ({@link callEnded}) once done.
   */
  async takeCall(call: OpenCall): Promise<OpenCall | null> {
    const mark = await this.kv.get<OpenCall>(openCallKey(call));
    return mark.versionstamp === null ? null : await this.#take(mark as Deno.KvEntry<OpenCall>);
  }

  /**
   * Takes the oldest marks of calls opened before `before` (ISO), at most `limit`: their process
   * died mid-call. Each is taken atomically, so of two callers sweeping at once only one gets a
   * mark (and refunds its charge once). End each taken mark ({@link callEnded}) once done.
   */
  async takeStaleCalls(before: string, limit: number): Promise<OpenCall[]> {
    const out: OpenCall[] = [];
    const sel = { prefix: [OPEN_CALL_PREFIX], end: [OPEN_CALL_PREFIX, before] };
    for await (const e of this.kv.list<OpenCall>(sel, { limit })) {
      const taken = await this.#take(e);
      if (taken) out.push(taken);
    }
    return out;
  }

  /**
   * Moves a mark to now, in one commit checked against the mark read: its taker refunds it, and
   * should the taker die before it ends the mark, or its refund fail, it is stale again later and
   * refunded then (the processor refunds once per reference), never left charged.
   */
  async #take(mark: Deno.KvEntry<OpenCall>): Promise<OpenCall | null> {
    const taken: OpenCall = {
      ...mark.value,
      at: this.clock.now().toISOString(),
      openedAt: mark.value.openedAt ?? mark.value.at,
    };
    // Taken in the millisecond it was made (a call failing at once): a key of its own all the same.
    if (taken.at === mark.value.at) taken.at = new Date(Date.parse(taken.at) + 1).toISOString();
    const res = await this.kv.atomic().check(mark).delete(mark.key).set(openCallKey(taken), taken).commit();
    return res.ok ? taken : null;
  }

  /**
   * Marks the exact entry read `consumed` with `patch` and commits `grant` (the credit it buys) in
   * the same atomic operation, with `also` (the caller's own record of it, e.g. its Idempotency-Key);
   * false when either changed meanwhile.
   */
  async consume(
    entry: Deno.KvEntry<PaymentRecord>,
    patch: Partial<PaymentRecord>,
    grant: { key: Deno.KvKey; current: Deno.KvEntryMaybe<unknown>; next: unknown },
    also: (op: Deno.AtomicOperation) => Deno.AtomicOperation = (op) => op,
  ): Promise<PaymentRecord | null> {
    const next: PaymentRecord = {
      ...entry.value,
      ...patch,
      state: "consumed",
      updatedAt: this.clock.now().toISOString(),
    };
    const op = this.kv.atomic().check(entry).check(grant.current).set(entry.key, next, this.#keep(next))
      .set(grant.key, grant.next);
    relist(op, entry.value, next);
    const res = await also(op).commit();
    return res.ok ? next : null;
  }

  #keep(p: PaymentRecord): { expireIn: number } | undefined {
    return keepInKv(p, this.clock.now().getTime());
  }

  /** Operator refund of a paid or consumed reference (credit already granted is not clawed back here). */
  async refund(sellerId: string, reference: string): Promise<PaymentRecord> {
    const e = await this.get(sellerId, reference);
    if (!e.value) throw new Error(`payment not found: ${reference}`);
    if (e.value.state !== "paid" && e.value.state !== "consumed") {
      throw new Error(`payment ${reference} is ${e.value.state}; only paid or consumed payments can be refunded`);
    }
    if (!(await this.move(e as Deno.KvEntry<PaymentRecord>, { state: "refunded" }))) {
      throw new Error("payment changed concurrently; retry");
    }
    return (await this.get(sellerId, reference)).value!;
  }
}
