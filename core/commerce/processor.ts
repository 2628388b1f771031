import { boundedCache, type LRUCache } from "../bounded_cache.ts";
import type { Rail } from "./types.ts";

/** What a charge attempt came to. */
export type ChargeOutcome =
  | { status: "succeeded"; processorRef: string }
  /** Declined: the payment did not settle; terminal for the reference. */
  | { status: "failed"; settlementReason: string }
  /** Needs a human step (3-D Secure and the like); the reference stays open. */
  | { status: "incomplete" };

/** The processor could not be reached or answered with a transient error: retry unchanged. */
export class PaymentProviderUnavailable extends Error {
  constructor(message = "payment provider unavailable") {
    super(message);
    this.name = "PaymentProviderUnavailable";
  }
}

/** One charge against a payment token (a card's shared payment token or a wallet token). */
export interface ChargeInput {
  rail: Rail;
  token: string;
  amountMicros: number;
  /** The payment reference; processors dedupe on it so a retried charge never charges twice. */
  reference: string;
  description: string;
}

/** Giving back a succeeded charge in full. */
export interface RefundInput {
  rail: Rail;
  /** The reference the charge was made with. */
  reference: string;
  /** The processor's id of the charge. */
  processorRef: string;
  amountMicros: number;
  /** Why, for the processor's records (e.g. `upstream_error`). */
  reason: string;
}

/**
 * A payment processor behind the storefront's rails. The embedded default is
 * {@link SandboxProcessor}; a real card processor implements the same interface.
 */
export interface PaymentProcessor {
  readonly name: string;
  /** @throws {PaymentProviderUnavailable} on a transient outage. */
  charge(input: ChargeInput): Promise<ChargeOutcome>;
  /**
   * Refunds a succeeded charge (a pay-as-you-go call whose upstream failed). Idempotent per
   * reference. Without it such calls are left for the operator's `payment refund`.
   * @returns the processor's id of the refund
   * @throws {PaymentProviderUnavailable} on a transient outage.
   */
  refund?(input: RefundInput): Promise<{ refundRef: string }>;
}

/**
 * The documented sandbox test tokens. Card tokens start `spt_test_`, wallet tokens `wal_test_`;
 * the rest of the token picks the outcome. Any other token is declined with `invalid_token`.
 */
export const SANDBOX_TOKENS = {
  card: {
    success: "spt_test_success",
    insufficientFunds: "spt_test_insufficient_funds",
    incomplete: "spt_test_requires_action",
    unavailable: "spt_test_provider_unavailable",
  },
  wallet: {
    success: "wal_test_success",
    insufficientFunds: "wal_test_insufficient_funds",
    unavailable: "wal_test_provider_unavailable",
  },
} as const;

/**
 * Charges the sandbox remembers (the newest): far more than can still be retried, refunded or
 * charged late (minutes), few enough that a flood of purchases cannot grow the process.
 */
export const SANDBOX_REMEMBERED_CHARGES = 10_000;

/**
 * Sandbox processor: deterministic outcomes from the test tokens in {@link SANDBOX_TOKENS}. Succeeded
 * charges are remembered by reference so a retry returns the same result (what real processors do
 * with idempotency keys). It serves production's card and wallet rails, where any agent may charge
 * made-up tokens as often as it likes: only succeeded charges are remembered, and only the newest.
 */
export class SandboxProcessor implements PaymentProcessor {
  readonly name = "sandbox";
  readonly #remember: number;
  readonly #charges: LRUCache<string, { outcome: ChargeOutcome; refunded: boolean }>;
  /** The newest charges that actually moved money, for tests and the operator. */
  readonly ledger: { reference: string; rail: Rail; amountMicros: number }[] = [];
  /** The newest refunds given back, one per refunded reference. */
  readonly refunds: { reference: string; rail: Rail; amountMicros: number; reason: string }[] = [];

  /** @param remember how many succeeded charges (and ledger and refund lines) are kept */
  constructor({ remember = SANDBOX_REMEMBERED_CHARGES }: { remember?: number } = {}) {
    this.#remember = remember;
    this.#charges = boundedCache({ max: remember });
  }

  /** Charges remembered now (at most `remember`). */
  get remembered(): number {
    return this.#charges.size;
  }

  refund(input: RefundInput): Promise<{ refundRef: string }> {
    const refundRef = `sbx_re_${input.reference.slice(0, 21)}`;
    const charged = this.#charges.get(input.reference);
    if (!charged) return Promise.reject(new Error("sandbox refund of a charge that did not succeed"));
    if (!charged.refunded) {
      charged.refunded = true;
      this.#keep(this.refunds, {
        reference: input.reference,
        rail: input.rail,
        amountMicros: input.amountMicros,
        reason: input.reason,
      });
    }
    return Promise.resolve({ refundRef });
  }

  charge(input: ChargeInput): Promise<ChargeOutcome> {
    const seen = this.#charges.get(input.reference);
    if (seen) return Promise.resolve(seen.outcome);
    const prefix = input.rail === "card" ? "spt_test_" : "wal_test_";
    const kind = input.token.startsWith(prefix) ? input.token.slice(prefix.length) : "";
    switch (kind) {
      case "success": {
        const outcome: ChargeOutcome = { status: "succeeded", processorRef: `sbx_${input.reference.slice(0, 24)}` };
        this.#charges.set(input.reference, { outcome, refunded: false });
        this.#keep(this.ledger, { reference: input.reference, rail: input.rail, amountMicros: input.amountMicros });
        return Promise.resolve(outcome);
      }
      case "insufficient_funds":
        return Promise.resolve({ status: "failed", settlementReason: "insufficient_funds" });
      case "requires_action":
        return Promise.resolve({ status: "incomplete" });
      case "provider_unavailable":
        return Promise.reject(new PaymentProviderUnavailable("sandbox outage token"));
      default:
        return Promise.resolve({ status: "failed", settlementReason: "invalid_token" });
    }
  }

  /** Appends to a history, dropping its oldest line past `remember`. */
  #keep<T>(lines: T[], line: T): void {
    lines.push(line);
    if (lines.length > this.#remember) lines.splice(0, lines.length - this.#remember);
  }
}
