/**
 * The card checkout lane: a purchase asked with `{"checkout": true}` opens a hosted page where a
 * human pays; the agent polls the reference's status and, once it is `paid`, repeats the purchase
 * with the same credential, which consumes it and grants the credit.
 */
import { retryWrite } from "../store/mod.ts";
import type { Clock } from "../clock.ts";
import type { FixedWindowLimiter } from "../rate_limit.ts";
import type { Catalog } from "./catalog.ts";
import type { PaymentTerms, StorefrontChallenge } from "./challenges.ts";
import { commerceErrors as errors } from "./errors.ts";
import { formatUsd } from "./money.ts";
import { effectiveState, type PaymentRecord, type PaymentState, type PaymentStore } from "./payments.ts";
import { type ChargeOutcome, type PaymentProcessor, PaymentProviderUnavailable } from "./processor.ts";
import { type Settlement, staleProcessing } from "./settlement.ts";
import type { AuthenticatedAgent, Seller } from "./types.ts";

/** Commits of a charged checkout's `paid` record tried before the error is given up to the page. */
const RECORD_PAID_TRIES = 3;

/** How long a hosted checkout waits for its human. */
export const CHECKOUT_TTL_MS = 30 * 60_000;
/** Cards a human may have declined on one hosted checkout before it ends as `failed`. */
export const MAX_CHECKOUT_DECLINES = 5;
/**
 * Cards one client address may submit on hosted checkouts per hour, across every checkout: the
 * per-checkout cap alone is dodged by opening checkout after checkout (each purchase opens one).
 */
export const CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR = 10;
/**
 * Hosted checkouts one client address may open per hour. Opening one is the only state a 402
 * writes: without a bound, any agent could fill KV with checkout records.
 */
export const CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR = 20;

export class CheckoutLane {
  constructor(
    private readonly o: {
      clock: Clock;
      catalog: Catalog;
      payments: PaymentStore;
      processor: PaymentProcessor;
      settlement: Settlement;
      /** A seller's storefront base URL (checkout and status URLs lead back to the same seller). */
      storefrontUrl: (seller: Seller) => string;
      /** Checkouts opened per client address. */
      opens?: FixedWindowLimiter;
      /** Cards submitted per client address, across every checkout. */
      cards?: FixedWindowLimiter;
    },
  ) {}

  /** Where an agent polls a payment reference. */
  statusUrl(seller: Seller, reference: string): string {
    return `${this.o.storefrontUrl(seller)}/payments/${reference}`;
  }

  /** Where a human pays a checkout. */
  checkoutUrl(seller: Seller, reference: string): string {
    return `${this.o.storefrontUrl(seller)}/checkout/${reference}`;
  }

  /**
   * Opens the hosted checkout of a card challenge (the one state a 402 writes), counted against
   * the client's address when it is known.
   * @throws {AppError} 429 `rate_limit_exceeded` when the address opened too many this hour
   */
  async open(
    challenge: StorefrontChallenge,
    sellerId: string,
    terms: PaymentTerms,
    micros: number,
    client?: string,
  ): Promise<void> {
    if (this.o.opens && client !== undefined) {
      const hit = await this.o.opens.hit(client);
      if (!hit.allowed) {
        throw errors.checkout_opens_exhausted({
          extra: { retry_after: hit.retryAfterS },
          headers: { "retry-after": String(hit.retryAfterS) },
        });
      }
    }
    const now = this.o.clock.now();
    await this.o.payments.openCheckout({
      reference: challenge.id,
      sellerId,
      rail: "card",
      state: "open",
      terms,
      amountMicros: micros,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + CHECKOUT_TTL_MS).toISOString(),
    });
  }

  /**
   * Counts one card submitted on a hosted checkout from `client` (each checkout also ends at its
   * fifth decline, a cap one address could dodge by opening checkout after checkout).
   * @returns whether it may be tried now, and when to retry if not
   */
  async cardAttempt(client: string): Promise<{ allowed: boolean; retryAfterS: number }> {
    if (!this.o.cards) return { allowed: true, retryAfterS: 0 };
    const { allowed, retryAfterS } = await this.o.cards.hit(client);
    return { allowed, retryAfterS };
  }

  /** The purchase that presents a checkout's credential: the human paid (state `paid`); consume and grant. */
  async settle(
    challenge: StorefrontChallenge,
    agent: AuthenticatedAgent,
    seller: Seller,
    also?: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
  ): Promise<PaymentRecord> {
    const sellerId = challenge.request.sellerId as string;
    const entry = await this.o.payments.get(sellerId, challenge.id);
    if (!entry.value) throw errors.payment_unknown({ detail: 'request a fresh 402 with {"checkout": true}' });
    const state = effectiveState(entry.value, this.o.clock);
    if (state !== "paid") throw this.o.settlement.stateError(entry.value, seller);
    return await this.o.settlement.consumeAndGrant(entry as Deno.KvEntry<PaymentRecord>, agent, {}, seller, also);
  }

  /** GET /payments/{reference}: the state an agent polls. */
  async status(seller: Seller, reference: string): Promise<Record<string, unknown>> {
    const p = (await this.o.payments.get(seller.sellerId, reference)).value;
    if (!p) throw errors.payment_unknown({ detail: "request a fresh 402" });
    const state = effectiveState(p, this.o.clock);
    return {
      reference,
      status: state,
      complete: state === "paid" || state === "consumed",
      rail: p.rail,
      planId: p.terms.planId,
      amountUsd: formatUsd(p.amountMicros),
      ...(p.settlementReason ? { settlementReason: p.settlementReason } : {}),
      ...(state === "open" ? { checkoutUrl: this.checkoutUrl(seller, reference), expiresAt: p.expiresAt } : {}),
      next: state === "paid"
        ? "retry the purchase with the same Payment credential"
        : state === "open"
        ? "waiting for the human to pay at checkoutUrl; poll again"
        : undefined,
    };
  }

  /**
   * The checkout a human opens, or null for an unknown reference. `retryable`: a charge has been
   * processing past the grace period (its process may have died), so the page offers paying again
   * or cancelling, as {@link complete} accepts.
   */
  async find(seller: Seller, reference: string) {
    const e = await this.o.payments.get(seller.sellerId, reference);
    if (!e.value || e.value.terms.checkout !== true) return null;
    const plan = await this.o.catalog.getPlan(seller.sellerId, e.value.terms.planId);
    const state = effectiveState(e.value, this.o.clock);
    return { record: e.value, state, plan, retryable: staleProcessing(e.value, this.o.clock) };
  }

  /**
   * The human's answer on the hosted checkout page: pay with a card token, or cancel.
   * @returns the state the checkout is in afterwards and, for a decline, why.
   */
  async complete(
    seller: Seller,
    reference: string,
    action: "pay" | "cancel",
    cardToken: string,
  ): Promise<{ state: PaymentState; settlementReason?: string; retry?: boolean; triesLeft?: number }> {
    const { payments, clock } = this.o;
    const e = await payments.get(seller.sellerId, reference);
    if (!e.value || e.value.terms.checkout !== true) throw errors.checkout_unknown();
    const entry = e as Deno.KvEntry<PaymentRecord>;
    const state = effectiveState(entry.value, clock);
    // A submit abandoned mid-charge by a dead process may be submitted again after the grace period.
    const stale = staleProcessing(entry.value, clock);
    if (state !== "open" && !stale) return { state, settlementReason: entry.value.settlementReason };
    if (action === "cancel") {
      await payments.move(entry, { state: "released" });
      return { state: "released" };
    }
    // Claim the checkout so a double submit charges once.
    if (!(await payments.move(entry, { state: "processing" }))) {
      return { state: (await payments.get(seller.sellerId, reference)).value!.state };
    }
    const processing = (await payments.get(seller.sellerId, reference)) as Deno.KvEntry<PaymentRecord>;
    let outcome: ChargeOutcome;
    try {
      outcome = await this.o.processor.charge({
        rail: "card",
        token: cardToken,
        amountMicros: entry.value.amountMicros,
        reference,
        description: `checkout ${entry.value.terms.planId}`,
      });
    } catch (err) {
      await payments.move(processing, { state: "open" });
      if (err instanceof PaymentProviderUnavailable) return { state: "open", retry: true };
      throw err;
    }
    if (outcome.status === "succeeded") {
      // An earlier decline on this checkout is history once a card paid.
      const paid = { state: "paid" as const, processorRef: outcome.processorRef, settlementReason: undefined };
      if (await this.#recordPaid(processing, paid)) return { state: "paid" };
      return await this.#chargedAfterMove(seller, reference, outcome.processorRef);
    }
    try {
      if (outcome.status === "failed") {
        // A decline leaves the checkout open for another card until it expires, up to a few tries
        // (more would let the page test stolen cards); the last decline ends it.
        const declines = (processing.value.declines ?? 0) + 1;
        const triesLeft = MAX_CHECKOUT_DECLINES - declines;
        const settlementReason = outcome.settlementReason;
        if (triesLeft <= 0) {
          await payments.move(processing, { state: "failed", settlementReason, declines });
          return { state: "failed", settlementReason };
        }
        await payments.move(processing, { state: "open", settlementReason, declines });
        return { state: "open", settlementReason, triesLeft };
      }
      await payments.move(processing, { state: "open" });
      return { state: "open", retry: true };
    } catch (err) {
      await payments.move(processing, { state: "open" }).catch(() => {});
      throw err;
    }
  }

  /**
   * Moves this submit's `processing` claim to `paid` once the card was charged; false when another
   * commit moved the record first. Money moved, so a failed commit (a KV error) is made again from
   * the claim rather than reopening the checkout, which a cancel or its expiry would then record
   * released. One that keeps failing is thrown with the record left `processing`: a submit after the
   * grace period records it paid (the processor dedupes the charge by reference).
   */
  async #recordPaid(claim: Deno.KvEntry<PaymentRecord>, paid: Partial<PaymentRecord>): Promise<boolean> {
    return await retryWrite(() => this.o.payments.move(claim, paid), RECORD_PAID_TRIES);
  }

  /**
   * A charge that succeeded after its checkout moved on: the human cancelled once the charge had
   * been processing past the grace period, or a second submit took the checkout over. Money moved,
   * so the record must say so. A cancelled checkout is refunded (the human's last word); where the
   * processor cannot refund, or any other state, the payment stands as `paid` and the agent may
   * redeem it (the operator can still `payment refund` it). Never charged and recorded as released.
   */
  async #chargedAfterMove(
    seller: Seller,
    reference: string,
    processorRef: string,
  ): Promise<{ state: PaymentState; settlementReason?: string }> {
    const { payments, processor } = this.o;
    for (let attempt = 0; attempt < 5; attempt++) {
      const e = await payments.get(seller.sellerId, reference);
      if (!e.value) return { state: "released" };
      const entry = e as Deno.KvEntry<PaymentRecord>;
      const { state } = entry.value;
      // Recorded by the submit that took over (the processor dedupes the charge by reference).
      if (state === "paid" || state === "consumed" || state === "refunded" || state === "processing") {
        return { state };
      }
      if (state === "released" && processor.refund) {
        const refunded = await processor.refund({
          rail: "card",
          reference,
          processorRef,
          amountMicros: entry.value.amountMicros,
          reason: "checkout_cancelled",
        }).catch(() => null);
        const patch = { state: "refunded" as const, processorRef, refundReason: "checkout_cancelled" };
        if (refunded && await payments.move(entry, { ...patch, refundRef: refunded.refundRef })) {
          return { state: "refunded" };
        }
        if (refunded) continue; // the record moved again: read it anew (the refund is idempotent)
      }
      if (await payments.move(entry, { state: "paid", processorRef, settlementReason: undefined })) {
        return { state: "paid" };
      }
    }
    return { state: (await payments.get(seller.sellerId, reference)).value?.state ?? "released" };
  }
}
