/**
 * The commerce sweep: gives back money held for calls and payments nobody comes back for, and
 * resolves standard settlements that nobody else resolves, on a quiet storefront as on a busy one.
 * It runs in every serving process (whatever rails are configured: the card and wallet rails always
 * are), one at a time under a KV lease, each run a bounded batch from each index, never a scan:
 * - stale reservations (`commerce_debit_open`, by age): a paid call's hold on its entitlement's
 *   credit whose call died; given back ({@link EntitlementLedger.returnStale});
 * - abandoned pay-per-call charges (`commerce_call_open`, by age): card or wallet calls charged
 *   whose process died before the answer; refunded ({@link PaidProxy.refundAbandonedCalls});
 * - settlements due a recheck (`commerce_settle_recheck`, by due time): `evm` ones left
 *   `processing`, and any left `paid` whose credit never committed (a `paid` Stripe purchase too).
 * Each moves money in one commit checked against the record it read, so a live call, a read or
 * another sweep racing it moves it once. Paid calls still recover a few of the first two as well.
 *
 * Why: a settlement whose outcome was not known (the facilitator's answer lost, the node unable to
 * confirm the transfer) is answered 503 and resolved by its agent's retry or entitlements read; an
 * agent that gave up, or a process killed between a settlement and its `paid` record, left it
 * `processing` for good, the money perhaps moved and neither credited nor refused. Each claimed `evm`
 * settlement (and each standard one once `paid`) is listed by when it is next due (payments.ts
 * `recheckAt`, {@link sweepable}); past its grace period the sweep asks the chain
 * ({@link StandardMethods.recheckSettlement}) and moves it ({@link Settlement.settleRechecked}). One
 * still unknown is listed again, later each time, until {@link recheckUntilMs} (at most
 * {@link SETTLE_RECHECK_HORIZON_MS} after its claim); then it is the operator's (logged as an error).
 * Stripe charges of unknown outcome are not listed: its stand-in keeps no record to ask, so they stay
 * the operator's to reconcile (a `paid` Stripe charge is: its outcome is known).
 */
import type { Clock } from "../clock.ts";
import { KvLease } from "../kv_lease.ts";
import { describeError, type Logger } from "../log.ts";
import { systemTimers, type TimerId, type Timers } from "../timers.ts";
import type { AgentIndex } from "./allowance.ts";
import type { EntitlementLedger } from "./entitlements.ts";
import { type PaymentRecord, type PaymentStore, sweepable } from "./payments.ts";
import { SETTLE_RECHECK_GRACE_MS, type SettledOutcome, type Settlement } from "./settlement.ts";
import type { PaidProxy } from "./proxy.ts";
import type { StandardMethods } from "./standard_methods.ts";
import type { AuthenticatedAgent, Seller } from "./types.ts";

/** Settlements looked at per sweep: bounded work (each may take a few node calls). */
export const SETTLE_SWEEP_BATCH = 20;
/** Stale reservations given back, and abandoned calls refunded, per sweep (each kind): bounded work. */
export const RECOVERY_SWEEP_BATCH = 50;
/** The longest wait between two rechecks of a settlement still unknown. */
export const SETTLE_RECHECK_MAX_MS = 60 * 60_000;
/**
 * How long after its claim a settlement is rechecked at least; one still unknown then (used with no
 * log found, a provider refusing, no node) is left to the operator, unless its authorization can
 * still be used ({@link recheckUntilMs}).
 */
export const SETTLE_RECHECK_MAX_AGE_MS = 8 * 24 * 60 * 60_000;
/** How long past its authorization's `validBefore` a settlement is still rechecked (the chain's time lags). */
const PAST_VALID_BEFORE_MS = 24 * 60 * 60_000;
/**
 * The latest a settlement is rechecked, after its claim, whatever its authorization's `validBefore`:
 * a payer picks it freely (up to 78 digits), and one far ahead must not keep its record listed,
 * and asked about hourly, for years. Past this it is the operator's like any other.
 */
export const SETTLE_RECHECK_HORIZON_MS = 31 * 24 * 60 * 60_000;

/**
 * Until when an unresolved settlement is rechecked: {@link SETTLE_RECHECK_MAX_AGE_MS} after its
 * claim, or a day past its authorization's `validBefore` when that is later (one still usable may
 * yet be submitted and move money), never past {@link SETTLE_RECHECK_HORIZON_MS} after its claim.
 */
export function recheckUntilMs(p: Pick<PaymentRecord, "createdAt" | "authorization">): number {
  const createdMs = Date.parse(p.createdAt);
  const claimed = createdMs + SETTLE_RECHECK_MAX_AGE_MS;
  const validBefore = p.authorization?.validBefore;
  const usable = validBefore && /^[0-9]{1,78}$/.test(validBefore)
    ? Number(validBefore) * 1000 + PAST_VALID_BEFORE_MS
    : 0;
  return Math.min(Math.max(claimed, usable), createdMs + SETTLE_RECHECK_HORIZON_MS);
}

/** What one sweep did. */
export interface SettleSweepOutcome {
  /** False when another process held the lease (nothing was looked at). */
  swept: boolean;
  /** Moved to their final state by this sweep: credited (`consumed`), `paid` (a call), or `failed`. */
  resolved: { reference: string; state: "consumed" | "paid" | "failed" }[];
  /** Still unknown, listed again for later. */
  deferred: number;
  /** Stale reservations handled (their credit given back unless their call settled meanwhile). */
  staleReservations: number;
  /** Abandoned pay-per-call charges refunded. */
  abandonedCalls: number;
  /** Unresolved past {@link recheckUntilMs}: taken off the recheck list, the operator's. */
  givenUp: number;
}

/** When a settlement still unknown after `rechecks` looks is next due: the grace period, doubling, capped. */
export function nextRecheckMs(nowMs: number, rechecks: number): number {
  return nowMs + Math.min(SETTLE_RECHECK_GRACE_MS * 2 ** Math.min(rechecks, 16), SETTLE_RECHECK_MAX_MS);
}

export class SettlementSweep {
  readonly #lease: KvLease;
  readonly #timers: Timers;
  #timer: TimerId | undefined;
  #running = false;
  /** Set while {@link stop} waits: the sweep in flight ends after the payment in hand. */
  #stopAsked = false;
  #sweeping: Promise<SettleSweepOutcome> | null = null;

  constructor(
    private readonly o: {
      kv: Deno.Kv;
      clock: Clock;
      log: Logger;
      payments: PaymentStore;
      settlement: Settlement;
      /** Null without the standard methods: nothing is listed for a recheck. */
      standard: StandardMethods | null;
      ledger: Pick<EntitlementLedger, "returnStale">;
      calls: Pick<PaidProxy, "refundAbandonedCalls">;
      /** The agents seen on the storefront: a purchase's credit goes to its agent's human when claimed. */
      agents: AgentIndex;
      sellers: { getSeller(id: string): Promise<Seller | null> };
      intervalMs: number;
      timers?: Timers;
      owner?: string;
    },
  ) {
    this.#timers = o.timers ?? systemTimers;
    this.#lease = new KvLease({
      kv: o.kv,
      clock: o.clock,
      key: ["commerce_settle_sweep_lease"],
      owner: o.owner ?? crypto.randomUUID(),
      // Renewed by each sweep; a dead holder's lapses within a few intervals.
      ttlMs: Math.max(3 * o.intervalMs, 60_000),
    });
  }

  /** Sweeps every `intervalMs` until {@link stop}. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const schedule = () => {
      this.#timer = this.#timers.setTimeout(() => {
        this.sweep().catch((err) => this.o.log.error("settlement sweep failed", { error: describeError(err) }))
          .finally(() => {
            if (this.#running) schedule();
          });
      }, this.o.intervalMs);
    };
    schedule();
  }

  /**
   * Stops the schedule, lets a sweep in flight finish the payment in hand (the rest of its batch is
   * left for the next process) and gives the lease up.
   */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stopAsked = true;
    try {
      await this.#sweeping?.catch(() => {});
    } finally {
      this.#stopAsked = false;
    }
    await this.#lease.release().catch(() => {});
  }

  /** One sweep (one at a time in this process; under the lease across processes). */
  sweep(): Promise<SettleSweepOutcome> {
    if (this.#sweeping) return this.#sweeping;
    this.#sweeping = this.#sweep().finally(() => {
      this.#sweeping = null;
    });
    return this.#sweeping;
  }

  async #sweep(): Promise<SettleSweepOutcome> {
    const out: SettleSweepOutcome = {
      swept: false,
      resolved: [],
      deferred: 0,
      staleReservations: 0,
      abandonedCalls: 0,
      givenUp: 0,
    };
    if (!(await this.#goOn())) return out;
    out.swept = true;
    // Each kind apart: one failing (a KV error, a processor down) leaves the others to run.
    await this.#settlements(out).catch((err) =>
      this.o.log.error("settlement rechecks failed", { error: describeError(err) })
    );
    if (!(await this.#goOn())) return out;
    out.staleReservations = await this.o.ledger.returnStale(RECOVERY_SWEEP_BATCH).catch((err) => {
      this.o.log.error("stale reservations not returned", { error: describeError(err) });
      return 0;
    });
    if (!(await this.#goOn())) return out;
    out.abandonedCalls = await this.o.calls.refundAbandonedCalls(RECOVERY_SWEEP_BATCH).catch((err) => {
      this.o.log.error("abandoned calls not refunded", { error: describeError(err) });
      return 0;
    });
    return out;
  }

  /**
   * Whether the sweep may take its next piece of work: no stop is waiting (each may wait on a slow
   * node or processor), and the lease is still this process's (renewed).
   */
  async #goOn(): Promise<boolean> {
    // Asked again after the lease's commit: a stop that came meanwhile starts nothing more.
    return !this.#stopAsked && (await this.#lease.acquire()) && !this.#stopAsked;
  }

  async #settlements(out: SettleSweepOutcome): Promise<void> {
    const { payments, clock } = this.o;
    if (!this.o.standard) return;
    for (const due of await payments.dueRechecks(clock.now().getTime(), SETTLE_SWEEP_BATCH)) {
      // Renewed before each: node calls may outlast the lease, and a sweep that lost it stops.
      if (!(await this.#goOn())) break;
      const entry = await payments.get(due.sellerId, due.reference);
      const p = entry.value;
      // Moved on (or relisted) since it was listed: the listing is stale.
      if (!p || !sweepable(p) || p.recheckAt !== due.at) {
        await payments.dropRecheck(due);
        continue;
      }
      try {
        const done = await this.#resolve(entry as Deno.KvEntry<PaymentRecord>);
        if (done === "deferred") out.deferred++;
        else if (done === "given up") out.givenUp++;
        else if (done !== "moved") out.resolved.push({ reference: p.reference, state: done });
      } catch (err) {
        // One settlement's failure (a KV error) does not stop the others; it is due again later, on
        // the backoff and within the age of any unresolved one.
        this.o.log.error("settlement recheck failed", { reference: p.reference, error: describeError(err) });
        const done = await this.#later(entry as Deno.KvEntry<PaymentRecord>).catch(() => "deferred");
        if (done === "given up") out.givenUp++;
      }
    }
  }

  /**
   * The final state it moved the settlement to; `deferred` when it is still unknown (listed again),
   * `moved` when a retry, a read or another sweep moved it first.
   */
  async #resolve(
    entry: Deno.KvEntry<PaymentRecord>,
  ): Promise<"consumed" | "paid" | "failed" | "deferred" | "moved" | "given up"> {
    const { settlement } = this.o;
    const standard = this.o.standard!;
    const p = entry.value;
    // Paid and never consumed: the money is known to have moved; only the credit is owed.
    const recheck = p.state === "paid" ? null : await standard.recheckSettlement(p);
    if (recheck?.check === "unconfirmed") {
      const rechecks = (p.rechecks ?? 0) + 1;
      if (nextRecheckMs(0, rechecks) >= SETTLE_RECHECK_MAX_MS) {
        // Hours without an answer: the operator should look (the sweep keeps asking, hourly, until
        // SETTLE_RECHECK_MAX_AGE_MS).
        this.o.log.warn("settlement still unknown", { reference: p.reference, rechecks });
      }
      return await this.#later(entry, { logsFromBlock: recheck.logsFromBlock ?? p.logsFromBlock });
    }
    const seller = await this.o.sellers.getSeller(p.sellerId);
    if (!seller) return await this.#later(entry);
    const agent: AuthenticatedAgent = (await this.o.agents.get(p.terms.agent)) ??
      { credentialId: p.terms.agent, claimed: false };
    const outcome: SettledOutcome = recheck === null
      ? { check: "confirmed", processorRef: p.processorRef ?? "" }
      : recheck.check === "confirmed"
      ? { check: "confirmed", processorRef: recheck.transfer.transaction }
      : recheck;
    if (!(await settlement.settleRechecked(entry, outcome, agent, seller))) return "moved";
    if (outcome.check === "refused") return "failed";
    if (p.terms.action !== "call" || p.state !== "processing") return "consumed";
    // Paid on chain for an answer never delivered: served if its agent comes back; the chain cannot
    // give the money back by itself, so the operator hears of it.
    this.o.log.warn("pay-as-you-go call paid, answer owed", { reference: p.reference, seller: p.sellerId });
    return "paid";
  }

  /**
   * Lists a settlement still unresolved again, later each time; one past {@link recheckUntilMs}
   * is taken off the list instead, its state as it is, and
   * logged as an error: the operator's (docs/operations.md).
   */
  async #later(
    entry: Deno.KvEntry<PaymentRecord>,
    patch: Pick<PaymentRecord, "logsFromBlock"> = {},
  ): Promise<"deferred" | "given up" | "moved"> {
    const { payments, clock } = this.o;
    const p = entry.value;
    const now = clock.now().getTime();
    if (now < recheckUntilMs(p)) {
      // Not listed again when it moved meanwhile (the live path resolved it).
      return (await payments.recheckLater(entry, nextRecheckMs(now, (p.rechecks ?? 0) + 1), patch))
        ? "deferred"
        : "moved";
    }
    if (!(await payments.stopRechecks(entry))) return "moved";
    this.o.log.error("settlement recheck given up: resolve it by hand", {
      reference: p.reference,
      seller: p.sellerId,
      state: p.state,
      rechecks: p.rechecks ?? 0,
      ...(p.authorization ? { valid_before: p.authorization.validBefore } : {}),
    });
    return "given up";
  }
}
