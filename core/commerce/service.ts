/**
 * Plan purchase and top-up over the `Payment` scheme, the checkout lane, and the entitlement views.
 * HTTP-free: routes pass headers and the parsed body and write back the {@link CommerceResponse}.
 */
import type { Clock } from "../clock.ts";
import { sha256Hex } from "../crypto.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { Catalog, planCovers, planView } from "./catalog.ts";
import {
  Challenges,
  loadChallengeKey,
  matchTerms,
  type PaymentTerms,
  receiptHeader,
  type StorefrontChallenge,
} from "./challenges.ts";
import { type CredentialsOfHuman, type Entitlement, EntitlementLedger, primaryHolder } from "./entitlements.ts";
import { CARD_MINIMUM_MICROS, checkAmount, formatUsd, parseAmountUsd } from "./money.ts";
import {
  effectiveState,
  paymentKey,
  type PaymentRecord,
  type PaymentState,
  PaymentStore,
  terminalError,
} from "./payments.ts";
import { type PaymentProcessor, PaymentProviderUnavailable } from "./processor.ts";
import type { SigningSecrets } from "./signing.ts";
import { type AuthenticatedAgent, type CreditPlan, type Plan, type Rail, realmOf, type Seller } from "./types.ts";
import { boundedCache } from "../bounded_cache.ts";
import { Challenge, Credential } from "mppx";
import { carriesStandardCredential, type StandardMethods } from "./standard_methods.ts";

/** A response the route writes as is. */
export interface CommerceResponse {
  status: number;
  body: Record<string, unknown>;
  /** Header pairs; `WWW-Authenticate` repeats, one challenge per rail. */
  headers: [string, string][];
}

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
}

export interface CommerceOptions {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  catalog: Catalog;
  processor: PaymentProcessor;
  secrets: SigningSecrets;
  agentAuthUrl: string;
  /** Every credential a human claimed (entitlements are shared across them). */
  credentialsOfHuman?: CredentialsOfHuman;
  /** mppx's own methods (evm with x402, stripe); absent or not enabled: only the card and wallet rails. */
  standard?: StandardMethods;
}

/** A standard-method payment that settled, claimed under its reference and not yet consumed. */
export type StandardSettled = {
  status: 200;
  entry: Deno.KvEntry<PaymentRecord>;
  externalId: string;
  receiptHeaders: [string, string][];
};

/** How long a hosted checkout waits for its human. */
export const CHECKOUT_TTL_MS = 30 * 60_000;
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** A charge `processing` for longer than this is taken to have been abandoned by a dead process. */
/** Cards a human may have declined on one hosted checkout before it ends as `failed`. */
export const MAX_CHECKOUT_DECLINES = 5;
const STALE_PROCESSING_MS = 30_000;
const IDEMPOTENCY_RE = /^[\x21-\x7e]{1,255}$/;
const NO_STORE: [string, string] = ["cache-control", "no-store"];

/** An Idempotency-Key's record: claimed while its request runs, then the response to replay. */
type StoredResponse =
  | { hash: string; state: "running"; startedAt: string }
  | { hash: string; state?: "done"; status: number; body: Record<string, unknown>; headers: [string, string][] };

// A request that held a key this long without finishing died with its process: the key is taken over.
const IDEMPOTENCY_STALE_MS = 60_000;

export class CommerceService {
  readonly catalog: Catalog;
  readonly ledger: EntitlementLedger;
  readonly payments: PaymentStore;
  readonly processor: PaymentProcessor;
  readonly secrets: SigningSecrets;
  /** Agents seen on the storefront, so the allowance check (which only gets an id) finds the human. */
  readonly agents: AgentIndex;
  #challenges?: Challenges;

  constructor(private readonly o: CommerceOptions) {
    this.catalog = o.catalog;
    this.processor = o.processor;
    this.secrets = o.secrets;
    this.ledger = new EntitlementLedger(o.kv, o.clock, o.credentialsOfHuman);
    this.payments = new PaymentStore(o.kv, o.clock);
    this.agents = new AgentIndex(o.kv, o.clock);
  }

  /** The KV store commerce state lives in. */
  get kv(): Deno.Kv {
    return this.o.kv;
  }

  /** Challenge issuer; its key is loaded from KV (made on first use). */
  async challenges(): Promise<Challenges> {
    this.#challenges ??= new Challenges(await loadChallengeKey(this.o.kv), this.o.clock);
    return this.#challenges;
  }

  /** Where an agent polls a payment reference. */
  statusUrl(reference: string): string {
    return `${this.o.agentAuthUrl}/payments/${reference}`;
  }

  /** Where a human pays a checkout. */
  checkoutUrl(reference: string): string {
    return `${this.o.agentAuthUrl}/checkout/${reference}`;
  }

  /**
   * The seller's plans, refusing sellers that sell none (501 `entitlements_not_available`) or whose
   * setup is unfinished (409 `signing_secret_required`).
   */
  async sellingPlans(seller: Seller): Promise<Plan[]> {
    const plans = await this.catalog.listPlans(seller.sellerId);
    if (plans.length === 0) {
      throw new AppError(501, "entitlements_not_available", "This storefront sells no plans or top-ups");
    }
    if (!(await this.secrets.current(seller.sellerId))) {
      throw new AppError(409, "signing_secret_required", "Seller setup unfinished: no signing secret is set");
    }
    return plans;
  }

  /** POST /plans/{planId}/purchase and POST /extend. */
  async purchase(input: PurchaseInput): Promise<CommerceResponse> {
    const { seller, agent } = input;
    const plans = await this.sellingPlans(seller);
    const body = input.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new AppError(400, "invalid_request", "Body must be a JSON object", {
        detail: 'send {"amountUsd": "5.000000"}',
      });
    }
    const fields = body as Record<string, unknown>;
    const plan = await this.#planFor(input, plans, fields);
    if (fields.checkout !== undefined && typeof fields.checkout !== "boolean") {
      throw new AppError(400, "invalid_request", "checkout must be a boolean", {
        detail: "checkout must be true or false",
      });
    }
    const checkout = fields.checkout === true;
    const micros = parseAmountUsd(fields.amountUsd);
    const limits = {
      minimumMicros: plan.minimumMicros,
      maximumMicros: plan.maximumMicros,
      cardMinimumMicros: CARD_MINIMUM_MICROS,
    };
    checkAmount(micros, limits, checkout ? "card" : "any");
    const terms: PaymentTerms = {
      action: input.action,
      sellerId: seller.sellerId,
      planId: plan.id,
      amountUsd: formatUsd(micros),
      currency: "usd",
      agent: agent.credentialId,
      ...(checkout ? { checkout: true } : {}),
    };

    const idem = await this.#idempotency(input, terms);
    if (idem?.stored) return idem.stored as CommerceResponse;

    if (!checkout && this.standardCredential(input.headers)) {
      return await this.#purchaseStandard(input, plan, terms, micros, idem);
    }
    const challenges = await this.challenges();
    const presented = challenges.read(input.headers, realmOf(seller));
    if (!presented) {
      return await this.#paymentRequired(seller, plan, terms, micros, limits.cardMinimumMicros, input);
    }

    const { challenge, payload } = presented;
    const rail = challenge.method;
    if (rail !== "card" && rail !== "wallet") {
      throw new AppError(404, "payment_unknown", "Payment reference matches no payment at this seller");
    }
    matchTerms(challenge, terms);
    if (rail === "card") checkAmount(micros, limits, "card");
    // Only a request that can charge holds its key: concurrent ones replay it or get 409.
    const held = idem ? await this.#holdKey(idem.key, idem.hash) : null;
    if (held && "stored" in held) return held.stored;
    let response: CommerceResponse;
    try {
      const settled = checkout
        ? await this.#settleCheckout(challenge, agent)
        : await this.#settleToken(challenge, rail, payload, micros, agent, plan);
      response = await this.#success(settled, plan, agent);
    } catch (err) {
      // Nothing to replay (a decline, a checkout not paid yet): the key is free for the retry.
      if (held) await this.#releaseKey(held.key, held.versionstamp);
      throw err;
    }
    if (held) await this.#remember(held.key, held.hash, response);
    return response;
  }

  /** Whether mppx's standard methods are offered. */
  get standardEnabled(): boolean {
    return this.o.standard?.enabled ?? false;
  }

  /** Whether the request answers a standard method (mppx `evm`/`stripe` credential, or x402). */
  standardCredential(headers: Headers): boolean {
    if (!this.o.standard?.enabled) return false;
    return carriesStandardCredential(headers, this.o.standard.evmEnabled, (auth) => {
      try {
        return Credential.deserialize(auth.trim()).challenge.method;
      } catch {
        return null;
      }
    });
  }

  /** The request mppx sees: the route's own, or (MCP) one naming the purchase route. */
  #requestFor(input: PurchaseInput, terms: PaymentTerms): Request {
    if (input.request) return input.request;
    const path = terms.action === "purchase" ? `/plans/${encodeURIComponent(terms.planId)}/purchase` : "/extend";
    return new Request(`${this.o.agentAuthUrl}${path}`, { method: "POST", headers: input.headers });
  }

  /** Purchase or top-up paid with a standard method: settle once, then consume and grant atomically. */
  async #purchaseStandard(
    input: PurchaseInput,
    plan: CreditPlan,
    terms: PaymentTerms,
    micros: number,
    idem: { key: Deno.KvKey; hash: string } | null,
  ): Promise<CommerceResponse> {
    const held = idem ? await this.#holdKey(idem.key, idem.hash) : null;
    if (held && "stored" in held) return held.stored;
    let response: CommerceResponse;
    try {
      const out = await this.standardPayment(this.#requestFor(input, terms), input.seller, terms, micros);
      if (out.status === 402) throw await settlementRefused(out.response);
      const record = await this.#consume(out.entry, input.agent, { processorRef: out.externalId });
      response = await this.#success(record, plan, input.agent, out.receiptHeaders);
    } catch (err) {
      if (held) await this.#releaseKey(held.key, held.versionstamp);
      throw err;
    }
    if (held) await this.#remember(held.key, held.hash, response);
    return response;
  }

  /**
   * One payment through the standard methods: without a credential, their 402; with one, mppx
   * verifies it and, just before funds move, the reference is claimed (`processing`) atomically and
   * `beforeSettle` runs (the paid proxy forwards the call there: an upstream error is never settled).
   * A settlement that fails after the claim leaves the reference `failed`.
   * @throws {AppError} the claimed reference's state error (already consumed, in flight), or what
   *   `beforeSettle` threw (the claim is then released)
   */
  async standardPayment(
    request: Request,
    seller: Seller,
    terms: PaymentTerms,
    micros: number,
    beforeSettle?: () => Promise<void>,
  ): Promise<{ status: 402; response: Response } | StandardSettled> {
    const standard = this.o.standard!;
    // A credential already spent (or in flight) is named as such before mppx looks at it again.
    const known = await standard.referenceOf(request.headers);
    if (known) {
      const seen = (await this.payments.get(seller.sellerId, known)).value;
      if (seen) throw this.stateError(seen);
    }
    let claimed: Deno.KvEntry<PaymentRecord> | null = null;
    const out = await standard.handle(request, realmOf(seller), terms, micros, async (pending) => {
      const key = paymentKey(seller.sellerId, pending.reference);
      const now = this.o.clock.now().toISOString();
      const record: PaymentRecord = {
        reference: pending.reference,
        sellerId: seller.sellerId,
        rail: pending.method,
        state: "processing",
        terms,
        amountMicros: micros,
        createdAt: now,
        updatedAt: now,
      };
      const res = await this.o.kv.atomic().check({ key, versionstamp: null }).set(key, record).commit();
      if (!res.ok) throw this.stateError((await this.payments.get(seller.sellerId, pending.reference)).value!);
      claimed = (await this.payments.get(seller.sellerId, pending.reference)) as Deno.KvEntry<PaymentRecord>;
      if (!beforeSettle) return;
      try {
        await beforeSettle();
      } catch (err) {
        await this.o.kv.atomic().check(claimed).delete(key).commit();
        claimed = null;
        throw err;
      }
    });
    if (out.status === 402) {
      const left = claimed as Deno.KvEntry<PaymentRecord> | null;
      if (left) await this.payments.move(left, { state: "failed", settlementReason: "settlement_failed" });
      return out;
    }
    if (!claimed) throw new Error("standard payment settled without a claimed reference");
    return { status: 200, entry: claimed, externalId: out.externalId, receiptHeaders: out.receiptHeaders };
  }

  async #planFor(input: PurchaseInput, plans: Plan[], fields: Record<string, unknown>): Promise<CreditPlan> {
    if (input.action === "purchase") {
      const plan = plans.find((p) => p.id === input.planId);
      if (!plan) {
        throw new AppError(404, "plan_not_found", "Unknown plan id", { detail: `no plan ${input.planId} here` });
      }
      if (plan.kind === "payg") {
        throw new AppError(400, "payg_not_purchasable", "Pay-as-you-go plans cannot be bought", {
          detail: "call the service and pay each request through its 402 challenge",
        });
      }
      return plan;
    }
    // extend: an explicit planId, else the credit plan the agent holds here (newest first).
    if (fields.planId !== undefined) {
      if (typeof fields.planId !== "string") throw new AppError(400, "invalid_request", "planId must be a string");
      const plan = plans.find((p) => p.id === fields.planId);
      if (!plan) {
        throw new AppError(404, "plan_not_found", "Unknown plan id", { detail: `no plan ${fields.planId} here` });
      }
      if (plan.kind === "payg") {
        throw new AppError(400, "payg_not_purchasable", "Pay-as-you-go plans cannot be topped up");
      }
      return plan;
    }
    const held = (await this.ledger.entries(input.agent, input.seller.sellerId)).map((e) => e.value.planId);
    const plan = [...held].reverse().map((id) => plans.find((p) => p.id === id)).find((p) => p?.kind === "credit");
    if (!plan || plan.kind !== "credit") {
      throw new AppError(404, "access_not_found", "No plan to extend at this seller", {
        detail: "check existing and pending purchases, or purchase a plan first",
        extra: { plans: plans.map((p) => planView(p, this.o.agentAuthUrl)) },
      });
    }
    return plan;
  }

  async #idempotency(input: PurchaseInput, terms: PaymentTerms) {
    const raw = input.headers.get("idempotency-key");
    if (raw === null) return null;
    if (!IDEMPOTENCY_RE.test(raw)) {
      throw new AppError(400, "invalid_request", "Idempotency-Key must be 1 to 255 visible ASCII characters");
    }
    const hash = await sha256Hex(JSON.stringify(terms));
    const key: Deno.KvKey = ["commerce_idem", terms.sellerId, terms.agent, raw];
    const got = await this.o.kv.get<StoredResponse>(key);
    return { key, hash, stored: got.value ? this.#replayOrRefuse(got.value, hash) : null };
  }

  /** What a request finds under its key: the response to replay, or 422 / 409 thrown. */
  #replayOrRefuse(got: StoredResponse, hash: string): CommerceResponse | null {
    if (got.hash !== hash) {
      throw new AppError(422, "idempotency_key_reused", "Idempotency-Key was used for a different request", {
        detail: "use a new Idempotency-Key for a different body",
      });
    }
    if (got.state === "running") {
      if (this.o.clock.now().getTime() - Date.parse(got.startedAt) > IDEMPOTENCY_STALE_MS) return null;
      throw new AppError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is still running", {
        detail: "retry shortly: the first request's result is then replayed",
        headers: { "retry-after": "1" },
      });
    }
    return { status: got.status, body: got.body, headers: [...got.headers, ["idempotent-replayed", "true"]] };
  }

  /**
   * Claims the key for this request, atomically: exactly one of concurrent requests gets it; the
   * others replay its result (done) or get 409 (running). A stale claim is taken over.
   */
  async #holdKey(
    key: Deno.KvKey,
    hash: string,
  ): Promise<{ stored: CommerceResponse } | { key: Deno.KvKey; hash: string; versionstamp: string }> {
    for (let i = 0; i < 8; i++) {
      const got = await this.o.kv.get<StoredResponse>(key);
      if (got.value) {
        const stored = this.#replayOrRefuse(got.value, hash);
        if (stored) return { stored };
      }
      const running: StoredResponse = { hash, state: "running", startedAt: this.o.clock.now().toISOString() };
      const res = await this.o.kv.atomic().check(got).set(key, running, { expireIn: IDEMPOTENCY_TTL_MS }).commit();
      if (res.ok) return { key, hash, versionstamp: res.versionstamp };
    }
    throw new AppError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is still running", {
      detail: "retry shortly: the first request's result is then replayed",
      headers: { "retry-after": "1" },
    });
  }

  async #releaseKey(key: Deno.KvKey, versionstamp: string): Promise<void> {
    await this.o.kv.atomic().check({ key, versionstamp }).delete(key).commit();
  }

  async #remember(key: Deno.KvKey, hash: string, r: CommerceResponse): Promise<void> {
    await this.o.kv.set(key, { hash, state: "done", ...r } satisfies StoredResponse, { expireIn: IDEMPOTENCY_TTL_MS });
  }

  /** The 402: one challenge per rail, a JSON body naming them, no state written (except a checkout). */
  async #paymentRequired(
    seller: Seller,
    plan: CreditPlan,
    terms: PaymentTerms,
    micros: number,
    cardMinimum: number,
    input: PurchaseInput,
  ): Promise<CommerceResponse> {
    const challenges = await this.challenges();
    const cardAllowed = micros >= cardMinimum;
    const rails: Rail[] = terms.checkout ? ["card"] : cardAllowed ? ["card", "wallet"] : ["wallet"];
    const issued = rails.map((rail) => ({ rail, challenge: challenges.issue(realmOf(seller), rail, terms) }));
    const card = issued.find((i) => i.rail === "card")?.challenge;
    if (terms.checkout && card) {
      const now = this.o.clock.now();
      await this.payments.openCheckout({
        reference: card.id,
        sellerId: seller.sellerId,
        rail: "card",
        state: "open",
        terms,
        amountMicros: micros,
        createdAt: now.toISOString(),
        updatedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + CHECKOUT_TTL_MS).toISOString(),
      });
    }
    const railView = (i: { rail: Rail; challenge: StorefrontChallenge }) => ({
      method: i.rail,
      intent: "charge",
      challengeId: i.challenge.id,
      expires: i.challenge.expires,
    });
    const body: Record<string, unknown> = {
      error: "payment_required",
      detail:
        "answer one challenge with Authorization: Payment <credential> and your agent token in ZC-Agent-Authorization",
      action: terms.action,
      planId: plan.id,
      amountUsd: terms.amountUsd,
      currency: "usd",
      rails: issued.map(railView),
      card: card
        ? {
          ...railView({ rail: "card", challenge: card }),
          statusUrl: this.statusUrl(card.id),
          cardMinimumUsd: formatUsd(cardMinimum),
          sharedPaymentToken: {
            header: "Authorization: Payment <credential>",
            payload: { token: "<shared payment token>" },
          },
          checkout: terms.checkout
            ? {
              url: this.checkoutUrl(card.id),
              expiresInSeconds: CHECKOUT_TTL_MS / 1000,
              credentialPayload: { checkout: true },
            }
            : { available: true, how: 'repeat this request with {"checkout": true} to get a hosted checkout page' },
        }
        : { available: false, reason: "amount_below_card_minimum", cardMinimumUsd: formatUsd(cardMinimum) },
    };
    const headers: [string, string][] = [NO_STORE];
    for (const i of issued) headers.push(["www-authenticate", challenges.header(i.challenge)]);
    if (this.o.standard?.enabled && !terms.checkout) {
      const std = await this.standardPayment(this.#requestFor(input, terms), seller, terms, micros);
      if (std.status === 402) {
        const offered = standardOffers(std.response);
        headers.push(...offered.headers);
        body.standard = offered.view;
      }
    }
    return { status: 402, body, headers };
  }

  /** Shared payment token or wallet token: charge once per reference, then grant, atomically. */
  async #settleToken(
    challenge: StorefrontChallenge,
    rail: Rail,
    payload: Record<string, unknown>,
    micros: number,
    agent: AuthenticatedAgent,
    plan: CreditPlan,
  ): Promise<PaymentRecord> {
    const token = payload.token;
    if (typeof token !== "string" || token.length === 0 || token.length > 512) {
      throw new AppError(400, "invalid_request", "The Payment credential payload needs a token", {
        detail: 'payload must be {"token": "<payment token>"}',
      });
    }
    const sellerId = challenge.request.sellerId as string;
    const key = paymentKey(sellerId, challenge.id);
    const existing = await this.payments.get(sellerId, challenge.id);
    // A charge left `processing` by a process that died mid-way is taken over after a grace period;
    // the processor dedupes by reference, so the retry never charges twice.
    const stale = existing.value?.state === "processing" &&
      this.o.clock.now().getTime() - Date.parse(existing.value.updatedAt) > STALE_PROCESSING_MS;
    if (existing.value && !stale) throw this.stateError(existing.value);
    const now = this.o.clock.now().toISOString();
    const record: PaymentRecord = {
      reference: challenge.id,
      sellerId,
      rail,
      state: "processing",
      terms: challenge.request as unknown as PaymentTerms,
      amountMicros: micros,
      createdAt: existing.value?.createdAt ?? now,
      updatedAt: now,
    };
    // Claim the reference before charging: two concurrent retries never both charge.
    const claimed = await this.o.kv.atomic().check(stale ? existing : { key, versionstamp: null }).set(key, record)
      .commit();
    if (!claimed.ok) throw this.stateError((await this.payments.get(sellerId, challenge.id)).value!);

    let outcome;
    try {
      outcome = await this.processor.charge({
        rail,
        token,
        amountMicros: micros,
        reference: challenge.id,
        description: `${plan.name} (${plan.id})`,
      });
    } catch (err) {
      await this.o.kv.delete(key);
      if (err instanceof PaymentProviderUnavailable) {
        throw new AppError(503, "payment_provider_unavailable", "Payment provider unavailable; retry unchanged", {
          headers: { "retry-after": "2" },
          cause: err,
        });
      }
      throw err;
    }
    if (outcome.status === "incomplete") {
      await this.o.kv.delete(key);
      throw new AppError(402, "payment_incomplete", "Payment unfinished", {
        detail: "the payment needs a further step; poll statusUrl until complete, then retry",
        extra: { statusUrl: this.statusUrl(challenge.id) },
      });
    }
    const entry = (await this.payments.get(sellerId, challenge.id)) as Deno.KvEntry<PaymentRecord>;
    if (outcome.status === "failed") {
      await this.payments.move(entry, { state: "failed", settlementReason: outcome.settlementReason });
      throw new AppError(402, "settlement_failed", "Payment did not settle", {
        detail: "retry from the start for a fresh challenge",
        extra: { settlementReason: outcome.settlementReason },
      });
    }
    return await this.#consume(entry, agent, { processorRef: outcome.processorRef });
  }

  /** Checkout lane: the human paid on the hosted page (state `paid`); consume and grant. */
  async #settleCheckout(challenge: StorefrontChallenge, agent: AuthenticatedAgent): Promise<PaymentRecord> {
    const sellerId = challenge.request.sellerId as string;
    const entry = await this.payments.get(sellerId, challenge.id);
    if (!entry.value) {
      throw new AppError(404, "payment_unknown", "Payment reference matches no payment at this seller", {
        detail: 'request a fresh 402 with {"checkout": true}',
      });
    }
    const state = effectiveState(entry.value, this.o.clock);
    if (state !== "paid") throw this.stateError(entry.value);
    return await this.#consume(entry as Deno.KvEntry<PaymentRecord>, agent, {});
  }

  /** The error for a reference that cannot be consumed in its current state. */
  stateError(p: PaymentRecord): AppError {
    const state: PaymentState = effectiveState(p, this.o.clock);
    const terminal = terminalError(p, state);
    if (terminal) return terminal;
    return new AppError(402, "payment_incomplete", "Payment unfinished", {
      detail: p.rail === "card"
        ? "poll statusUrl until complete, then retry"
        : "a charge is in progress; retry shortly",
      extra: { statusUrl: this.statusUrl(p.reference) },
    });
  }

  /** Marks the reference consumed and grants the credit in one atomic commit (retried on conflict). */
  async #consume(
    entry: Deno.KvEntry<PaymentRecord>,
    agent: AuthenticatedAgent,
    patch: Partial<PaymentRecord>,
  ): Promise<PaymentRecord> {
    let current = entry;
    for (let attempt = 0; attempt < 100; attempt++) {
      const p = current.value;
      const grant = await this.ledger.prepareGrant(agent, p.sellerId, p.terms.planId, p.amountMicros);
      const next: PaymentRecord = { ...p, ...patch, state: "consumed", updatedAt: this.o.clock.now().toISOString() };
      const res = await this.o.kv.atomic().check(current).check(grant.current).set(current.key, next)
        .set(grant.key, grant.next).commit();
      if (res.ok) return next;
      const again = await this.payments.get(p.sellerId, p.reference);
      if (!again.value) {
        throw new AppError(404, "payment_unknown", "Payment reference matches no payment at this seller");
      }
      if (again.value.state !== p.state) throw this.stateError(again.value);
      current = again as Deno.KvEntry<PaymentRecord>;
    }
    throw new Error("payment consumption did not commit after many attempts");
  }

  async #success(
    p: PaymentRecord,
    plan: CreditPlan,
    agent: AuthenticatedAgent,
    receiptHeaders?: [string, string][],
  ): Promise<CommerceResponse> {
    const ent = (await this.ledger.entries(agent, p.sellerId)).find((e) => e.value.planId === plan.id)?.value;
    const at = this.o.clock.now();
    return {
      status: 200,
      body: {
        status: "succeeded",
        action: p.terms.action,
        reference: p.reference,
        rail: p.rail,
        amountUsd: formatUsd(p.amountMicros),
        plan: planView(plan, this.o.agentAuthUrl),
        entitlement: ent ? this.entitlementView(ent, plan) : null,
      },
      headers: [
        NO_STORE,
        ...(receiptHeaders ??
          [["payment-receipt", receiptHeader(p.rail, p.reference, p.processorRef ?? p.reference, at)] as [
            string,
            string,
          ]]),
      ],
    };
  }

  /** Public JSON of an entitlement. */
  entitlementView(e: Entitlement, plan: Plan | null, seller?: Seller): Record<string, unknown> {
    return {
      planId: e.planId,
      planName: plan?.name,
      kind: plan?.kind ?? "credit",
      services: plan?.services,
      sellerId: e.sellerId,
      ...(seller ? { seller: { id: seller.sellerId, name: seller.name, hosts: seller.hosts } } : {}),
      remainingUsd: formatUsd(e.creditMicros),
      purchasedUsd: formatUsd(e.purchasedMicros),
      sharedWithHuman: e.holder.startsWith("h:"),
      createdAt: e.createdAt,
      updatedAt: e.updatedAt,
      ...(e.expiresAt ? { expiresAt: e.expiresAt } : {}),
    };
  }

  /** GET /agent/entitlements: live plans at this seller with remaining credit. */
  async entitlementsHere(seller: Seller, agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    const plans = await this.sellingPlans(seller);
    const ents = await this.ledger.entries(agent, seller.sellerId);
    const byId = new Map(plans.map((p) => [p.id, p]));
    const active = ents.map((e) => e.value).filter((e) => e.creditMicros > 0);
    return {
      sellerId: seller.sellerId,
      holder: primaryHolder(agent).startsWith("h:") ? "human" : "credential",
      entitlements: active.map((e) => this.entitlementView(e, byId.get(e.planId) ?? null)),
      payAsYouGo: plans.filter((p) => p.kind === "payg").map((p) => planView(p, this.o.agentAuthUrl)),
    };
  }

  /** GET {network}/agent/entitlements: live plans at every seller. */
  async entitlementsEverywhere(agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    const ents = (await this.ledger.everywhere(agent)).filter((e) => e.creditMicros > 0);
    const sellers = new Map<string, Seller | null>();
    const out: Record<string, unknown>[] = [];
    for (const e of ents) {
      if (!sellers.has(e.sellerId)) sellers.set(e.sellerId, await this.catalog.getSeller(e.sellerId));
      const seller = sellers.get(e.sellerId);
      if (!seller) continue;
      out.push(this.entitlementView(e, await this.catalog.getPlan(e.sellerId, e.planId), seller));
    }
    return { entitlements: out };
  }

  /** GET /payments/{reference}: the state an agent polls. */
  async paymentStatus(seller: Seller, reference: string): Promise<Record<string, unknown>> {
    const p = (await this.payments.get(seller.sellerId, reference)).value;
    if (!p) {
      throw new AppError(404, "payment_unknown", "Payment reference matches no payment at this seller", {
        detail: "request a fresh 402",
      });
    }
    const state = effectiveState(p, this.o.clock);
    return {
      reference,
      status: state,
      complete: state === "paid" || state === "consumed",
      rail: p.rail,
      planId: p.terms.planId,
      amountUsd: formatUsd(p.amountMicros),
      ...(p.settlementReason ? { settlementReason: p.settlementReason } : {}),
      ...(state === "open" ? { checkoutUrl: this.checkoutUrl(reference), expiresAt: p.expiresAt } : {}),
      next: state === "paid"
        ? "retry the purchase with the same Payment credential"
        : state === "open"
        ? "waiting for the human to pay at checkoutUrl; poll again"
        : undefined,
    };
  }

  /** The checkout a human opens, or null for an unknown reference. */
  async checkout(seller: Seller, reference: string) {
    const e = await this.payments.get(seller.sellerId, reference);
    if (!e.value || e.value.terms.checkout !== true) return null;
    const plan = await this.catalog.getPlan(seller.sellerId, e.value.terms.planId);
    return { record: e.value, state: effectiveState(e.value, this.o.clock), plan };
  }

  /**
   * The human's answer on the hosted checkout page: pay with a card token, or cancel.
   * @returns the state the checkout is in afterwards and, for a decline, why.
   */
  async completeCheckout(
    seller: Seller,
    reference: string,
    action: "pay" | "cancel",
    cardToken: string,
  ): Promise<{ state: PaymentState; settlementReason?: string; retry?: boolean; triesLeft?: number }> {
    const e = await this.payments.get(seller.sellerId, reference);
    if (!e.value || e.value.terms.checkout !== true) throw new AppError(404, "payment_unknown", "Unknown checkout");
    const entry = e as Deno.KvEntry<PaymentRecord>;
    const state = effectiveState(entry.value, this.o.clock);
    // A submit abandoned mid-charge by a dead process may be submitted again after the grace period.
    const stale = state === "processing" &&
      this.o.clock.now().getTime() - Date.parse(entry.value.updatedAt) > STALE_PROCESSING_MS;
    if (state !== "open" && !stale) return { state, settlementReason: entry.value.settlementReason };
    if (action === "cancel") {
      await this.payments.move(entry, { state: "released" });
      return { state: "released" };
    }
    // Claim the checkout so a double submit charges once.
    if (!(await this.payments.move(entry, { state: "processing" }))) {
      return { state: (await this.payments.get(seller.sellerId, reference)).value!.state };
    }
    const processing = (await this.payments.get(seller.sellerId, reference)) as Deno.KvEntry<PaymentRecord>;
    try {
      const outcome = await this.processor.charge({
        rail: "card",
        token: cardToken,
        amountMicros: entry.value.amountMicros,
        reference,
        description: `checkout ${entry.value.terms.planId}`,
      });
      if (outcome.status === "succeeded") {
        // An earlier decline on this checkout is history once a card paid.
        await this.payments.move(processing, {
          state: "paid",
          processorRef: outcome.processorRef,
          settlementReason: undefined,
        });
        return { state: "paid" };
      }
      if (outcome.status === "failed") {
        // A decline leaves the checkout open for another card until it expires, up to a few tries
        // (more would let the page test stolen cards); the last decline ends it.
        const declines = (processing.value.declines ?? 0) + 1;
        const triesLeft = MAX_CHECKOUT_DECLINES - declines;
        const settlementReason = outcome.settlementReason;
        if (triesLeft <= 0) {
          await this.payments.move(processing, { state: "failed", settlementReason, declines });
          return { state: "failed", settlementReason };
        }
        await this.payments.move(processing, { state: "open", settlementReason, declines });
        return { state: "open", settlementReason, triesLeft };
      }
      await this.payments.move(processing, { state: "open" });
      return { state: "open", retry: true };
    } catch (err) {
      await this.payments.move(processing, { state: "open" });
      if (err instanceof PaymentProviderUnavailable) return { state: "open", retry: true };
      throw err;
    }
  }

  /**
   * The server side of the payproxy allowance contract: may this agent use one more `query` of this
   * service at this seller? Yes when a call of this agent is already paid for and in flight (the
   * paid proxy reserves credit, or collects the pay-as-you-go charge, before forwarding), or when a
   * live credit plan covering the service has the credit. Otherwise no, which the payproxy route
   * answers with its 402 (priced against the pay-as-you-go plan).
   */
  async allowance(sellerId: string, agentId: string, serviceSlug: string, quantity: number): Promise<boolean> {
    const seller = await this.catalog.getSeller(sellerId);
    if (!seller) return false;
    const service = (await this.catalog.services(seller)).find((s) => s.slug === serviceSlug);
    if (!service) return false;
    if (await this.ledger.hasHold(sellerId, agentId)) return true;
    const plans = await this.catalog.listPlans(sellerId);
    const covering = plans.filter((p) => planCovers(p, serviceSlug));
    const known = await this.agents.get(agentId);
    const agent: AuthenticatedAgent = known ?? { credentialId: agentId, claimed: false };
    const cost = service.meters.query * quantity;
    const ents = await this.ledger.entries(agent, sellerId);
    return ents.some((e) => covering.some((p) => p.id === e.value.planId) && e.value.creditMicros >= cost);
  }

  /**
   * {@link allowance} for the usage lines of an allowance request: only `query` meters with whole,
   * non-negative quantities are priced here, so any other line, like an empty agent id, is a no.
   */
  async allowUsage(sellerId: string, agentId: string, serviceSlug: string, usage: unknown[]): Promise<boolean> {
    let quantity = 0;
    for (const u of usage) {
      const line = u as { meterSlug?: unknown; quantity?: unknown } | null;
      if (line?.meterSlug !== "query" || !Number.isSafeInteger(line.quantity) || (line.quantity as number) < 0) {
        return false;
      }
      quantity += line.quantity as number;
    }
    return agentId !== "" && await this.allowance(sellerId, agentId, serviceSlug, quantity);
  }
}

/**
 * Remembers the human behind each credential seen on the storefront
 * (`["commerce_agent", credentialId]`); written once per change, served from memory after.
 */
export class AgentIndex {
  // What was last written per credential; bounded, as every agent that ever called passes here.
  readonly #seen = boundedCache<string, string>({ max: 10_000 });
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  async note(a: AuthenticatedAgent): Promise<void> {
    const sig = `${a.claimed}|${a.humanId ?? ""}|${a.expiresAt ?? ""}`;
    if (this.#seen.get(a.credentialId) === sig) return;
    // Unclaimed credentials die; their index entry goes a day after them.
    const ttl = a.expiresAt && !a.claimed
      ? Date.parse(a.expiresAt) - this.clock.now().getTime() + 86400_000
      : undefined;
    await this.kv.set(["commerce_agent", a.credentialId], a, ttl && ttl > 0 ? { expireIn: ttl } : undefined);
    this.#seen.set(a.credentialId, sig);
  }

  async get(credentialId: string): Promise<AuthenticatedAgent | null> {
    return (await this.kv.get<AuthenticatedAgent>(["commerce_agent", credentialId])).value;
  }
}

/** The challenges a standard-method 402 carries: its headers to pass on and a view for the JSON body. */
export function standardOffers(res: Response): { headers: [string, string][]; view: Record<string, unknown> } {
  const headers: [string, string][] = [];
  const www = res.headers.get("www-authenticate");
  if (www) headers.push(["www-authenticate", www]);
  const x402 = res.headers.get("payment-required");
  if (x402) headers.push(["payment-required", x402]);
  let methods: Record<string, unknown>[] = [];
  try {
    methods = www
      ? Challenge.deserializeList(www).map((c) => ({
        method: c.method,
        intent: c.intent,
        challengeId: c.id,
        expires: c.expires,
      }))
      : [];
  } catch { /* a header mppx wrote always parses */ }
  return {
    headers,
    view: {
      detail: "stock clients: answer an mppx challenge with Authorization: Payment, or x402 with PAYMENT-SIGNATURE",
      methods,
      x402: x402 !== null,
    },
  };
}

/**
 * A standard credential that did not settle, as the storefront's 402 `settlement_failed`, carrying
 * mppx's fresh challenges so the client can start again.
 */
export async function settlementRefused(res: Response): Promise<AppError> {
  const problem = await res.json().catch(() => null) as { detail?: unknown; title?: unknown } | null;
  const reason = typeof problem?.detail === "string" ? problem.detail.slice(0, 200) : "payment_not_settled";
  const headers: Record<string, string> = { "cache-control": "no-store" };
  for (const [k, v] of standardOffers(res).headers) headers[k] = v;
  return new AppError(402, "settlement_failed", "Payment did not settle", {
    detail: "retry from the start for a fresh challenge",
    extra: { settlementReason: reason },
    headers,
  });
}
