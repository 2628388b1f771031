/**
 * The commerce facade the routes use: plan purchase and top-up ({@link PurchaseFlow}), the checkout
 * lane ({@link CheckoutLane}), entitlement views, the allowance check, over one settlement
 * ({@link Settlement}) shared with the paid proxy. HTTP-free: outcomes are values.
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Catalog } from "./catalog.ts";
import { Challenges, loadChallengeKey } from "./challenges.ts";
import { CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR, CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR, CheckoutLane } from "./checkout.ts";
import { FixedWindowLimiter } from "../rate_limit.ts";
import { type CredentialsOfHuman, type Entitlement, EntitlementLedger } from "./entitlements.ts";
import { entitlementView, EntitlementViews } from "./entitlement_views.ts";
import { commerceErrors as errors } from "./errors.ts";
import { IdempotencyKeys } from "./idempotency.ts";
import { AgentIndex, Allowance } from "./allowance.ts";
import type { PaymentRecord, PaymentState } from "./payments.ts";
import { PaymentStore } from "./payments.ts";
import type { PaymentProcessor } from "./processor.ts";
import { type PurchaseChallenge, PurchaseFlow, type PurchaseInput, type PurchaseOutcome } from "./purchase.ts";
import { Settlement } from "./settlement.ts";
import type { SigningSecrets } from "./signing.ts";
import type { StandardMethods } from "./standard_methods.ts";
import type { AuthenticatedAgent, CreditPlan, Plan, Seller } from "./types.ts";

export {
  CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR,
  CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR,
  CHECKOUT_TTL_MS,
  MAX_CHECKOUT_DECLINES,
} from "./checkout.ts";
export { AgentIndex } from "./allowance.ts";
export type { PaidPurchase, PurchaseChallenge, PurchaseInput, PurchaseOutcome } from "./purchase.ts";

export interface CommerceOptions {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  catalog: Catalog;
  processor: PaymentProcessor;
  secrets: SigningSecrets;
  /**
   * A seller's storefront base URL (identity's `sellerBaseUrl`): every URL handed to the seller's
   * agents and humans is built on it.
   */
  storefrontUrl: (seller: Seller) => string;
  /** Every credential a human claimed (entitlements are shared across them). */
  credentialsOfHuman?: CredentialsOfHuman;
  /** mppx's own methods (evm with x402, stripe); absent or not enabled: only the card and wallet rails. */
  standard?: StandardMethods;
}

export class CommerceService {
  readonly catalog: Catalog;
  readonly ledger: EntitlementLedger;
  readonly payments: PaymentStore;
  readonly processor: PaymentProcessor;
  readonly secrets: SigningSecrets;
  /** Agents seen on the storefront, so the allowance check (which only gets an id) finds the human. */
  readonly agents: AgentIndex;
  /** Claims, charges and consumes payment references: every lane that moves money. */
  readonly settlement: Settlement;
  readonly checkoutLane: CheckoutLane;
  readonly #purchases: PurchaseFlow;
  readonly #views: EntitlementViews;
  readonly #allowance: Allowance;
  #challenges?: Challenges;

  constructor(private readonly o: CommerceOptions) {
    this.catalog = o.catalog;
    this.processor = o.processor;
    this.secrets = o.secrets;
    this.ledger = new EntitlementLedger(o.kv, o.clock, o.credentialsOfHuman);
    this.payments = new PaymentStore(o.kv, o.clock);
    this.agents = new AgentIndex(o.kv, o.clock);
    const statusUrl = (reference: string, seller: Seller) => this.statusUrl(seller, reference);
    this.settlement = new Settlement({
      clock: o.clock,
      payments: this.payments,
      ledger: this.ledger,
      processor: o.processor,
      statusUrl,
      standard: o.standard,
    });
    this.checkoutLane = new CheckoutLane({
      clock: o.clock,
      catalog: o.catalog,
      payments: this.payments,
      processor: o.processor,
      settlement: this.settlement,
      storefrontUrl: o.storefrontUrl,
      opens: new FixedWindowLimiter(o.kv, o.clock, {
        scope: "checkout_opens",
        limit: CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR,
        windowS: 3600,
      }),
      cards: new FixedWindowLimiter(o.kv, o.clock, {
        scope: "checkout_cards",
        limit: CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR,
        windowS: 3600,
      }),
    });
    this.#purchases = new PurchaseFlow({
      clock: o.clock,
      storefrontUrl: o.storefrontUrl,
      ledger: this.ledger,
      challenges: () => this.challenges(),
      settlement: this.settlement,
      checkout: this.checkoutLane,
      idempotency: new IdempotencyKeys(o.kv, o.clock),
      log: o.log,
    });
    this.#views = new EntitlementViews({ catalog: o.catalog, ledger: this.ledger, storefrontUrl: o.storefrontUrl });
    this.#allowance = new Allowance({ catalog: o.catalog, ledger: this.ledger, agents: this.agents });
  }

  /** Challenge issuer; its key is loaded from KV (made on first use). */
  async challenges(): Promise<Challenges> {
    this.#challenges ??= await Challenges.load(await loadChallengeKey(this.o.kv), this.o.clock);
    return this.#challenges;
  }

  /** The seller's storefront base URL, which every URL handed to its agents and humans starts with. */
  storefrontUrl(seller: Seller): string {
    return this.o.storefrontUrl(seller);
  }

  /** Where an agent polls a payment reference. */
  statusUrl(seller: Seller, reference: string): string {
    return this.checkoutLane.statusUrl(seller, reference);
  }

  /** Where a human pays a checkout. */
  checkoutUrl(seller: Seller, reference: string): string {
    return this.checkoutLane.checkoutUrl(seller, reference);
  }

  /**
   * The seller's plans, refusing sellers that sell none (501 `entitlements_not_available`) or whose
   * setup is unfinished (409 `signing_secret_required`).
   */
  async sellingPlans(seller: Seller): Promise<Plan[]> {
    const plans = await this.catalog.listPlans(seller.sellerId);
    if (plans.length === 0) throw errors.entitlements_not_available();
    if (!(await this.secrets.current(seller.sellerId))) throw errors.signing_secret_required();
    return plans;
  }

  /** POST /plans/{planId}/purchase and POST /extend: paid, or the challenge to pay. */
  async purchase(input: PurchaseInput): Promise<PurchaseOutcome> {
    return await this.#purchases.purchase(input, await this.sellingPlans(input.seller));
  }

  /** The challenge to buy `plan` for `micros` (no purchase runs; nothing is written). */
  purchaseChallenge(
    seller: Seller,
    agent: AuthenticatedAgent,
    plan: CreditPlan,
    micros: number,
  ): Promise<PurchaseChallenge> {
    return this.#purchases.challengeFor(seller, agent, plan, micros);
  }

  /** Whether the request answers a standard method (mppx `evm`/`stripe` credential, or x402). */
  standardCredential(headers: Headers): Promise<boolean> {
    return this.settlement.standardCredential(headers);
  }

  /** The error for a reference that cannot be consumed in its current state. */
  stateError(p: PaymentRecord, seller: Seller) {
    return this.settlement.stateError(p, seller);
  }

  /** Public JSON of an entitlement. */
  entitlementView(e: Entitlement, plan: Plan | null, seller?: Seller): Record<string, unknown> {
    return entitlementView(e, plan, seller);
  }

  /** GET /agent/entitlements: live plans at this seller with remaining credit. */
  async entitlementsHere(seller: Seller, agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    // Purchases settled while the storefront's node could not confirm them are credited here too.
    await this.settlement.settleUnconfirmed(seller, agent);
    return await this.#views.here(seller, await this.sellingPlans(seller), agent);
  }

  /** GET {network}/agent/entitlements: live plans at every seller. */
  entitlementsEverywhere(agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    return this.#views.everywhere(agent);
  }

  /** GET /payments/{reference}: the state an agent polls. */
  paymentStatus(seller: Seller, reference: string): Promise<Record<string, unknown>> {
    return this.checkoutLane.status(seller, reference);
  }

  /** The checkout a human opens, or null for an unknown reference. */
  checkout(seller: Seller, reference: string) {
    return this.checkoutLane.find(seller, reference);
  }

  /** The human's answer on the hosted checkout page: pay with a card token, or cancel. */
  completeCheckout(
    seller: Seller,
    reference: string,
    action: "pay" | "cancel",
    cardToken: string,
  ): Promise<{ state: PaymentState; settlementReason?: string; retry?: boolean; triesLeft?: number }> {
    return this.checkoutLane.complete(seller, reference, action, cardToken);
  }

  /** The server side of the payproxy allowance contract (see {@link Allowance.allowance}). */
  allowance(sellerId: string, agentId: string, serviceSlug: string, quantity: number): Promise<boolean> {
    return this.#allowance.allowance(sellerId, agentId, serviceSlug, quantity);
  }

  /** {@link allowance} for the usage lines of an allowance request (see {@link Allowance.allowUsage}). */
  allowUsage(sellerId: string, agentId: string, serviceSlug: string, usage: unknown[]): Promise<boolean> {
    return this.#allowance.allowUsage(sellerId, agentId, serviceSlug, usage);
  }
}
