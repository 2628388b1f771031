/**
 * Payment references and their states. A reference is the id of the challenge it answers (an HMAC,
 * unguessable). Records exist only once a payment is attempted or a checkout is opened; a plain 402
 * writes nothing.
 *
 *   open (checkout page waiting for a human) -> paid -> consumed
 *   processing (a charge in flight)          -> consumed | failed | (deleted: provider outage)
 *   open -> released (cancelled on the page, or expired)      paid/consumed -> refunded (operator)
 *   consumed -> refunded (a pay-as-you-go call whose upstream answered an error; automatic)
 *
 * `consumed`, `failed`, `refunded`, `released` are terminal: the reference cannot be spent again.
 * Key: `["commerce_payment", sellerId, reference]`.
 */
import type { Clock } from "../clock.ts";
import { AppError } from "../errors.ts";
import type { PaymentTerms } from "./challenges.ts";
import type { PaymentMethodName } from "./types.ts";

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
}

export const paymentKey = (sellerId: string, reference: string): Deno.KvKey => [
  "commerce_payment",
  sellerId,
  reference,
];

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
      return new AppError(409, "payment_consumed", "Payment already settled; it cannot be spent again", {
        detail: `reference ${p.reference} was consumed`,
      });
    case "failed":
      return new AppError(409, "payment_failed", "Payment failed; this reference is terminal", {
        detail: p.settlementReason ? `settlementReason: ${p.settlementReason}` : undefined,
      });
    case "refunded":
      return new AppError(409, "payment_refunded", "Payment was refunded; this reference is terminal");
    case "released":
      return new AppError(409, "payment_released", "Payment was released; this reference is terminal");
    default:
      return null;
  }
}

/** Reads and moves payment records. */
export class PaymentStore {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  get(sellerId: string, reference: string): Promise<Deno.KvEntryMaybe<PaymentRecord>> {
    return this.kv.get<PaymentRecord>(paymentKey(sellerId, reference));
  }

  /** Opens a checkout (the hosted page a human pays on). */
  async openCheckout(record: PaymentRecord): Promise<void> {
    const key = paymentKey(record.sellerId, record.reference);
    const res = await this.kv.atomic().check({ key, versionstamp: null }).set(key, record).commit();
    if (!res.ok) throw new AppError(409, "payment_request_mismatch", "This checkout already exists");
  }

  /**
   * Moves a record from the exact entry read to `patch`, atomically; false when it changed meanwhile.
   */
  async move(entry: Deno.KvEntry<PaymentRecord>, patch: Partial<PaymentRecord>): Promise<boolean> {
    const next = { ...entry.value, ...patch, updatedAt: this.clock.now().toISOString() };
    return (await this.kv.atomic().check(entry).set(entry.key, next).commit()).ok;
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
