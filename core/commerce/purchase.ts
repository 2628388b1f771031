/**
 * Plan purchase and top-up over the `Payment` scheme. HTTP-free: the outcome is a value, either
 * the paid result (the receipt body and its receipt headers) or the challenge to pay
 * ({@link PurchaseChallenge}), which REST renders as a 402 and MCP as JSON-RPC -32042.
 */
import type { Challenge } from "mppx";
import type { Clock } from "../clock.ts";
import { describeError, type Logger } from "../log.ts";
import { planView } from "./catalog.ts";
import {
  type Challenges,
  type IssuedChallenge,
  matchTerms,
  type PaymentTerms,
  receiptHeader,
  type StorefrontChallenge,
} from "./challenges.ts";
import { CHECKOUT_TTL_MS, type CheckoutLane } from "./checkout.ts";
import type { EntitlementLedger } from "./entitlements.ts";
import { entitlementView } from "./entitlement_views.ts";
import { commerceErrors as errors } from "./errors.ts";
import type { HeldKey, IdempotencyKeys, KeptResult } from "./idempotency.ts";
import { CARD_MINIMUM_MICROS, checkAmount, formatUsd, parseAmountUsd } from "./money.ts";
import type { PaymentRecord } from "./payments.ts";
import { type Settlement, settlementRefused, type StandardOffer, standardOfferView } from "./settlement.ts";
import { type AuthenticatedAgent, type CreditPlan, type Plan, type Rail, realmOf, type Seller } from "./types.ts";

/** What a purchase or extend call carries. */
export interface PurchaseInput {
  seller: Seller;
  agent: AuthenticatedAgent;
  action: "purchase" | "extend";
  /** Path plan id (purchase) or body `planId` (extend, optional). */
  planId?: string;
  body: unknown;
  headers: Headers;
  /** The HTTP request itself: x402 binds a payment to its URL. Absent on the MCP path. */
  request?: Request;
  /** The client's address, which hosted checkouts opened are counted against. */
  client?: string;
}

/** A purchase that went through (or the replay of one under its Idempotency-Key). */
export interface PaidPurchase {
  kind: "paid";
  /** The receipt: what was bought and the entitlement it left. */
  body: Record<string, unknown>;
  /** `Payment-Receipt` (and x402 `PAYMENT-RESPONSE`) pairs. */
  receipts: [string, string][];
  /** True when this is the result of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/** The payment a purchase asks for: one challenge per rail of ours, and what mppx's methods offer. */
export interface PurchaseChallenge {
  kind: "challenge";
  /** The seller asked to be paid: its URLs (status, checkout) are the ones to hand out. */
  seller: Seller;
  terms: PaymentTerms;
  plan: CreditPlan;
  /** Our rails' challenges (card, wallet), in the order they are offered. */
  rails: IssuedChallenge[];
  cardMinimumMicros: number;
  /** mppx's methods (null when they are not offered, or on the checkout lane). */
  standard: StandardOffer | null;
}

export type PurchaseOutcome = PaidPurchase | PurchaseChallenge;

export class PurchaseFlow {
  constructor(
    private readonly o: {
      clock: Clock;
      /** A seller's storefront base URL: plan URLs and the request a payment binds to are on it. */
      storefrontUrl: (seller: Seller) => string;
      ledger: EntitlementLedger;
      challenges: () => Promise<Challenges>;
      settlement: Settlement;
      checkout: CheckoutLane;
      idempotency: IdempotencyKeys;
      log: Logger;
    },
  ) {}

  /** POST /plans/{planId}/purchase and POST /extend, with the seller's selling plans. */
  async purchase(input: PurchaseInput, plans: Plan[]): Promise<PurchaseOutcome> {
    const { seller, agent } = input;
    const body = input.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw errors.body_not_object();
    const fields = body as Record<string, unknown>;
    const plan = await this.#planFor(input, plans, fields);
    if (fields.checkout !== undefined && typeof fields.checkout !== "boolean") throw errors.checkout_not_boolean();
    const checkout = fields.checkout === true;
    const micros = parseAmountUsd(fields.amountUsd);
    const limits = {
      minimumMicros: plan.minimumMicros,
      maximumMicros: plan.maximumMicros,
      cardMinimumMicros: CARD_MINIMUM_MICROS,
    };
    checkAmount(micros, limits, checkout ? "card" : "any");
    const terms = termsOf(input.action, seller, plan, agent, micros, checkout);

    const { settlement } = this.o;
    // A key whose request consumed a payment and died before keeping its result: the payment's receipt.
    const earlier = async (reference: string): Promise<PaidPurchase> => {
      const p = await settlement.payment(seller.sellerId, reference);
      if (!p) throw errors.payment_unknown();
      if (p.state !== "consumed") throw settlement.stateError(p, seller);
      return replay(await this.#receipt(p, plan, seller, agent));
    };
    const idem = await this.o.idempotency.lookup(input.headers, terms);
    if (idem?.earlier) return "kept" in idem.earlier ? replay(idem.earlier.kept) : await earlier(idem.earlier.charged);

    if (!checkout && await settlement.standardCredential(input.headers)) {
      return await this.#holding(idem, earlier, async (also) => {
        const out = await settlement.standardPayment(this.#requestFor(input, terms), seller, terms, micros);
        if (out.status === 402) throw await settlementRefused(out.response);
        const patch = { processorRef: out.externalId };
        const record = await settlement.consumeAndGrant(
          out.entry,
          agent,
          patch,
          seller,
          also(out.entry.value.reference),
        );
        return await this.#receipt(record, plan, seller, agent, out.receiptHeaders);
      });
    }
    const challenges = await this.o.challenges();
    const presented = challenges.read(input.headers, realmOf(seller));
    if (!presented) return await this.#challenge(plan, terms, micros, input);

    const { challenge, payload } = presented;
    const rail = challenge.method;
    if (rail !== "card" && rail !== "wallet") throw errors.payment_unknown();
    matchTerms(challenge, terms);
    if (rail === "card") checkAmount(micros, limits, "card");
    return await this.#holding(idem, earlier, async (also) => {
      let record: PaymentRecord;
      if (checkout) record = await this.o.checkout.settle(challenge, agent, seller, also(challenge.id));
      else {
        const token = settlement.tokenOf(payload);
        const charged = await settlement.chargeToken({
          rail,
          reference: challenge.id,
          seller,
          terms: challenge.request as unknown as PaymentTerms,
          micros,
          token,
        }, `${plan.name} (${plan.id})`);
        const patch = { processorRef: charged.processorRef };
        record = await settlement.consumeAndGrant(charged.entry, agent, patch, seller, also(challenge.id));
      }
      return await this.#receipt(record, plan, seller, agent);
    });
  }

  /**
   * The challenge to buy `plan` for `micros` (what a purchase without a credential answers), for
   * callers that know the plan and amount already (the MCP tools). Writes nothing.
   */
  async challengeFor(seller: Seller, agent: AuthenticatedAgent, plan: CreditPlan, micros: number) {
    const terms = termsOf("purchase", seller, plan, agent, micros, false);
    return await this.#challenge(plan, terms, micros, { seller, headers: new Headers() });
  }

  /**
   * Runs a charge while holding the request's Idempotency-Key (if any): only a request that can
   * charge holds it; concurrent ones replay its result or get 409. A failure frees the key. `charge`
   * gets, per payment reference, the write to join its consume commit: the key marked `charged`
   * with the payment, which `earlier` answers from if the request dies before its result is kept.
   */
  async #holding(
    idem: { key: Deno.KvKey; hash: string } | null,
    earlier: (reference: string) => Promise<PaidPurchase>,
    charge: (also: (reference: string) => ((op: Deno.AtomicOperation) => Deno.AtomicOperation) | undefined) => Promise<
      KeptResult
    >,
  ): Promise<PaidPurchase> {
    const { idempotency } = this.o;
    const held = idem ? await idempotency.hold(idem) : null;
    if (held && "kept" in held) return replay(held.kept);
    if (held && "charged" in held) return await earlier(held.charged);
    const mark = (reference: string) => held ? idempotency.markCharged(held, reference) : undefined;
    let result: KeptResult;
    try {
      result = await charge(mark);
    } catch (err) {
      // Nothing to replay (a decline, a checkout not paid yet): the key is free for the retry.
      if (held) await idempotency.release(held as HeldKey);
      throw err;
    }
    if (held) {
      // Charged and credited: a result that could not be kept is logged, never answered as an error
      // (which the client would retry, with new money).
      await idempotency.remember(held as HeldKey, result).catch((err) =>
        this.o.log.error("purchase result not kept under its Idempotency-Key", { error: describeError(err) })
      );
    }
    return { kind: "paid", ...result, replayed: false };
  }

  /** The request mppx sees: the route's own, or (MCP) one naming the purchase route. */
  #requestFor(input: Pick<PurchaseInput, "seller" | "request" | "headers">, terms: PaymentTerms): Request {
    if (input.request) return input.request;
    const path = terms.action === "purchase" ? `/plans/${encodeURIComponent(terms.planId)}/purchase` : "/extend";
    return new Request(`${this.o.storefrontUrl(input.seller)}${path}`, { method: "POST", headers: input.headers });
  }

  async #planFor(input: PurchaseInput, plans: Plan[], fields: Record<string, unknown>): Promise<CreditPlan> {
    if (input.action === "purchase") {
      const plan = plans.find((p) => p.id === input.planId);
      if (!plan) throw errors.plan_not_found();
      if (plan.kind === "payg") throw errors.payg_not_purchasable();
      return plan;
    }
    // extend: an explicit planId, else the credit plan the agent holds here (newest first).
    if (fields.planId !== undefined) {
      if (typeof fields.planId !== "string") throw errors.plan_id_not_string();
      const plan = plans.find((p) => p.id === fields.planId);
      if (!plan) throw errors.plan_not_found();
      if (plan.kind === "payg") throw errors.payg_not_extendable();
      return plan;
    }
    const held = (await this.o.ledger.entries(input.agent, input.seller.sellerId)).map((e) => e.value.planId);
    const plan = [...held].reverse().map((id) => plans.find((p) => p.id === id)).find((p) => p?.kind === "credit");
    if (!plan || plan.kind !== "credit") {
      throw errors.nothing_to_extend({
        extra: { plans: plans.map((p) => planView(p, this.o.storefrontUrl(input.seller))) },
      });
    }
    return plan;
  }

  /** The challenge: one per rail, mppx's offer, no state written (except a checkout). */
  async #challenge(
    plan: CreditPlan,
    terms: PaymentTerms,
    micros: number,
    input: Pick<PurchaseInput, "seller" | "request" | "headers" | "client">,
  ): Promise<PurchaseChallenge> {
    const challenges = await this.o.challenges();
    const realm = realmOf(input.seller);
    const cardAllowed = micros >= CARD_MINIMUM_MICROS;
    const railsOffered: Rail[] = terms.checkout ? ["card"] : cardAllowed ? ["card", "wallet"] : ["wallet"];
    const rails = railsOffered.map((rail) => challenges.offer(realm, rail, terms));
    const card = rails.find((i) => i.rail === "card")?.challenge;
    if (terms.checkout && card) await this.o.checkout.open(card, input.seller.sellerId, terms, micros, input.client);
    const standard = terms.checkout ? null : await this.o.settlement.standardOffer(
      this.#requestFor(input, terms),
      input.seller,
      terms,
      micros,
    );
    return {
      kind: "challenge",
      seller: input.seller,
      terms,
      plan,
      rails,
      cardMinimumMicros: CARD_MINIMUM_MICROS,
      standard,
    };
  }

  async #receipt(
    p: PaymentRecord,
    plan: CreditPlan,
    seller: Seller,
    agent: AuthenticatedAgent,
    receiptHeaders?: [string, string][],
  ): Promise<KeptResult> {
    // The entitlement the credit landed on (the agent may also see older ones of the same plan).
    const ent = (await this.o.ledger.grantTarget(agent, p.sellerId, plan.id))?.value;
    const at = this.o.clock.now();
    return {
      body: {
        status: "succeeded",
        action: p.terms.action,
        reference: p.reference,
        rail: p.rail,
        amountUsd: formatUsd(p.amountMicros),
        plan: planView(plan, this.o.storefrontUrl(seller)),
        entitlement: ent ? entitlementView(ent, plan) : null,
      },
      receipts: receiptHeaders ??
        [["payment-receipt", await receiptHeader(p.rail, p.reference, p.processorRef ?? p.reference, at)]],
    };
  }
}

/** Where an agent polls a seller's reference and where a human pays its checkout. */
export interface PaymentUrls {
  statusUrl(seller: Seller, reference: string): string;
  checkoutUrl(seller: Seller, reference: string): string;
}

/** The JSON body of a purchase challenge: the terms, one entry per rail, the card lane, mppx's methods. */
export function challengeView(ch: PurchaseChallenge, urls: PaymentUrls): Record<string, unknown> {
  const { terms } = ch;
  const railView = (i: { rail: Rail; challenge: StorefrontChallenge }) => ({
    method: i.rail,
    intent: "charge",
    challengeId: i.challenge.id,
    expires: i.challenge.expires,
  });
  const card = ch.rails.find((i) => i.rail === "card")?.challenge;
  const cardMinimumUsd = formatUsd(ch.cardMinimumMicros);
  const body: Record<string, unknown> = {
    error: "payment_required",
    detail:
      "answer one challenge with Authorization: Payment <credential> and your agent token in ZC-Agent-Authorization",
    action: terms.action,
    planId: ch.plan.id,
    amountUsd: terms.amountUsd,
    currency: "usd",
    rails: ch.rails.map(railView),
    card: card
      ? {
        ...railView({ rail: "card", challenge: card }),
        statusUrl: urls.statusUrl(ch.seller, card.id),
        cardMinimumUsd,
        sharedPaymentToken: {
          header: "Authorization: Payment <credential>",
          payload: { token: "<shared payment token>" },
        },
        checkout: terms.checkout
          ? {
            url: urls.checkoutUrl(ch.seller, card.id),
            expiresInSeconds: CHECKOUT_TTL_MS / 1000,
            credentialPayload: { checkout: true },
          }
          : { available: true, how: 'repeat this request with {"checkout": true} to get a hosted checkout page' },
      }
      : { available: false, reason: "amount_below_card_minimum", cardMinimumUsd },
  };
  if (ch.standard) body.standard = standardOfferView(ch.standard);
  return body;
}

/**
 * Every challenge a purchase challenge carries, as mppx challenges: ours first, then mppx's methods
 * (the MCP binding's `challenges`).
 */
export function challengeList(ch: PurchaseChallenge): Challenge.Challenge[] {
  const ours: Challenge.Challenge[] = ch.rails.map((i) => i.challenge);
  return ch.standard ? [...ours, ...ch.standard.challenges] : ours;
}

function termsOf(
  action: "purchase" | "extend",
  seller: Seller,
  plan: CreditPlan,
  agent: AuthenticatedAgent,
  micros: number,
  checkout: boolean,
): PaymentTerms {
  return {
    action,
    sellerId: seller.sellerId,
    planId: plan.id,
    amountUsd: formatUsd(micros),
    currency: "usd",
    agent: agent.credentialId,
    ...(checkout ? { checkout: true } : {}),
  };
}

const replay = (kept: KeptResult): PaidPurchase => ({ kind: "paid", ...kept, replayed: true });
