/**
 * Settlement, written once for every lane that moves money: plan purchases and top-ups, and the
 * paid proxy's pay-as-you-go calls. A reference is claimed (`processing`) before funds move, so
 * concurrent retries charge once; the processor's outcome maps to one state and one error; a
 * consumed reference never settles again. Standard methods (mppx's `evm`/`stripe`, x402) settle
 * here too, claiming the reference just before mppx moves the funds.
 */
import { retryWrite } from "../store/mod.ts";
import type { Challenge } from "mppx";
import type { Clock } from "../clock.ts";
import { AppError } from "../errors.ts";
import { type PaymentTerms, receiptHeader, termsDiffer } from "./challenges.ts";
import { type EntitlementLedger, STALE_RESERVATION_MS } from "./entitlements.ts";
import { commerceErrors as errors } from "./errors.ts";
import { loadMppx } from "./mppx.ts";
import {
  type AnswerClaim,
  effectiveState,
  type PaymentRecord,
  type PaymentState,
  type PaymentStore,
  STANDARD_PRESENTABLE_MAX_MS,
  terminalError,
} from "./payments.ts";
import { type PaymentProcessor, PaymentProviderUnavailable } from "./processor.ts";
import {
  carriesStandardCredential,
  type SettlementRecheck,
  SettlementUnconfirmed,
  type StandardMethods,
  x402PayloadOf,
} from "./standard_methods.ts";
import { type AuthenticatedAgent, type Rail, realmOf, type Seller } from "./types.ts";

/** How many of an agent's unconfirmed purchases one entitlements read looks at. */
const UNCONFIRMED_PER_READ = 5;

/** A charge `processing` for longer than this is taken to have been abandoned by a dead process. */
export const STALE_PROCESSING_MS = 30_000;

/**
 * How long an `evm` settlement may stay `processing` before the settlement sweep asks the chain about
 * it: its agent's own retries (told 503, retry unchanged) and entitlements reads come first.
 */
export const SETTLE_RECHECK_GRACE_MS = 5 * 60_000;

/** A charge left `processing` past {@link STALE_PROCESSING_MS}: its submit may be made again. */
export function staleProcessing(p: PaymentRecord, clock: Clock): boolean {
  return p.state === "processing" && clock.now().getTime() - Date.parse(p.updatedAt) > STALE_PROCESSING_MS;
}

/** A token charge that succeeded: the reference is still `processing` until the caller consumes it. */
export interface Charged {
  entry: Deno.KvEntry<PaymentRecord>;
  processorRef: string;
}

/** A standard-method payment that settled, claimed under its reference and not yet consumed. */
export type StandardSettled = {
  status: 200;
  entry: Deno.KvEntry<PaymentRecord>;
  externalId: string;
  receiptHeaders: [string, string][];
  /** A call's owed answer given by this request: its claim, ended by the consume ({@link Settlement.consumeCall}). */
  answer?: AnswerClaim;
};

/** What a 402 of the standard methods offers: mppx's `WWW-Authenticate` list and x402's `PAYMENT-REQUIRED`. */
export interface StandardOffer {
  /** The `WWW-Authenticate` value (one or more challenges), or null when none is offered. */
  www: string | null;
  /** The x402 `PAYMENT-REQUIRED` value, or null. */
  x402: string | null;
  /** The challenges of `www` as values, in its order (the MCP binding's `challenges`). */
  challenges: Challenge.Challenge[];
}

export class Settlement {
  constructor(
    private readonly o: {
      clock: Clock;
      payments: PaymentStore;
      ledger: EntitlementLedger;
      processor: PaymentProcessor;
      /** Where an agent polls a reference of this seller. */
      statusUrl: (reference: string, seller: Seller) => string;
      standard?: StandardMethods;
    },
  ) {}

  /** The payment record of a reference, or null. */
  async payment(sellerId: string, reference: string): Promise<PaymentRecord | null> {
    return (await this.o.payments.get(sellerId, reference)).value;
  }

  /** The error for a reference that cannot be spent in its current state. */
  stateError(p: PaymentRecord, seller: Seller): AppError {
    const state: PaymentState = effectiveState(p, this.o.clock);
    const terminal = terminalError(p, state);
    if (terminal) return terminal;
    return errors.payment_incomplete({
      detail: p.rail === "card"
        ? "poll statusUrl until complete, then retry"
        : "a charge is in progress; retry shortly",
      extra: { statusUrl: this.o.statusUrl(p.reference, seller) },
    });
  }

  /**
   * The token of a card (shared payment token) or wallet credential's payload.
   * @throws {AppError} `invalid_request` when there is none, or it is empty or longer than 512
   */
  tokenOf(payload: Record<string, unknown>): string {
    const token = payload.token;
    if (typeof token !== "string" || token.length === 0 || token.length > 512) {
      throw errors.token_required({ detail: 'payload must be {"token": "<payment token>"}' });
    }
    return token;
  }

  /**
   * Charges a token once per reference: claims the reference, charges, and maps the outcome.
   * A claim left `processing` by a process that died mid-way is taken over after a grace period;
   * the processor dedupes by reference, so the retry never charges twice.
   * @returns the `processing` entry and the processor's id: the caller consumes it
   * @throws {AppError} the reference's state error when it is taken, `payment_provider_unavailable`
   *   (the claim is released), `payment_incomplete` (released), `settlement_failed` (now `failed`)
   */
  async chargeToken(
    input: { rail: Rail; reference: string; seller: Seller; terms: PaymentTerms; micros: number; token: string },
    description: string,
  ): Promise<Charged> {
    const { payments, clock } = this.o;
    const sellerId = input.seller.sellerId;
    const existing = await payments.get(sellerId, input.reference);
    const stale = existing.value !== null && staleProcessing(existing.value, clock);
    if (existing.value && !stale) throw this.stateError(existing.value, input.seller);
    const now = clock.now().toISOString();
    const claimed = await payments.claim(
      {
        reference: input.reference,
        sellerId,
        rail: input.rail,
        state: "processing",
        terms: input.terms,
        amountMicros: input.micros,
        createdAt: existing.value?.createdAt ?? now,
        updatedAt: now,
      },
      stale ? existing as Deno.KvEntry<PaymentRecord> : undefined,
    );
    if (!claimed) throw this.stateError((await payments.get(sellerId, input.reference)).value!, input.seller);

    let outcome;
    try {
      outcome = await this.o.processor.charge({
        rail: input.rail,
        token: input.token,
        amountMicros: input.micros,
        reference: input.reference,
        description,
      });
    } catch (err) {
      await payments.release(claimed);
      if (err instanceof PaymentProviderUnavailable) {
        throw errors.payment_provider_unavailable({ headers: { "retry-after": "2" }, cause: err });
      }
      throw err;
    }
    if (outcome.status === "incomplete") {
      await payments.release(claimed);
      throw errors.payment_incomplete({
        detail: "the payment needs a further step; poll statusUrl until complete, then retry",
        extra: { statusUrl: this.o.statusUrl(input.reference, input.seller) },
      });
    }
    if (outcome.status === "failed") {
      await payments.move(claimed, { state: "failed", settlementReason: outcome.settlementReason });
      throw errors.settlement_failed({ extra: { settlementReason: outcome.settlementReason } });
    }
    return { entry: claimed, processorRef: outcome.processorRef };
  }

  /**
   * Marks the reference consumed and grants the credit it bought in one atomic commit (retried on
   * conflict), with `also` (see {@link PaymentStore.consume}) in it.
   * @throws {AppError} the state error when the reference moved meanwhile, `payment_unknown` when it went
   */
  async consumeAndGrant(
    entry: Deno.KvEntry<PaymentRecord>,
    agent: AuthenticatedAgent,
    patch: Partial<PaymentRecord>,
    seller: Seller,
    also?: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
  ): Promise<PaymentRecord> {
    const { payments, ledger } = this.o;
    let current = entry;
    for (let attempt = 0; attempt < 100; attempt++) {
      const p = current.value;
      const grant = await ledger.prepareGrant(agent, p.sellerId, p.terms.planId, p.amountMicros);
      const done = await payments.consume(current, patch, grant, also);
      if (done) return done;
      const again = await payments.get(p.sellerId, p.reference);
      if (!again.value) throw errors.payment_unknown();
      if (again.value.state !== p.state) throw this.stateError(again.value, seller);
      current = again as Deno.KvEntry<PaymentRecord>;
    }
    throw new Error("payment consumption did not commit after many attempts");
  }

  /**
   * Marks a pay-as-you-go call's reference consumed (it buys the call, no credit). Only the request
   * whose claim still stands consumes it: a claim taken over after a stall lost the reference to
   * the request that took it, which is the one served. An owed answer's claim (`answer`) ends in
   * the same commit.
   * @throws {AppError} the reference's state error when it moved meanwhile
   */
  async consumeCall(
    entry: Deno.KvEntry<PaymentRecord>,
    processorRef: string,
    seller: Seller,
    also: (op: Deno.AtomicOperation) => Deno.AtomicOperation = (op) => op,
    answer?: AnswerClaim,
  ): Promise<void> {
    const { payments } = this.o;
    const ops = answer ? (op: Deno.AtomicOperation) => payments.answerGiven(answer)(also(op)) : also;
    if (await payments.move(entry, { state: "consumed", processorRef }, ops)) return;
    const now = await payments.get(entry.value.sellerId, entry.value.reference);
    if (!now.value) throw errors.payment_unknown();
    // The sweep confirmed this settlement while its owed answer was being given (`processing` ->
    // `paid`, owed): the answer given is that one.
    const owed = answer && now.value.state === "paid" && now.value.answerOwed;
    if (owed && await payments.move(now as Deno.KvEntry<PaymentRecord>, { state: "consumed", processorRef }, ops)) {
      return;
    }
    throw this.stateError(now.value, seller);
  }

  /** Whether mppx's standard methods are offered. */
  get standardEnabled(): boolean {
    return this.o.standard?.enabled ?? false;
  }

  /**
   * Whether the request answers a standard method (mppx `evm`/`stripe` credential, or x402).
   * @throws {AppError} `invalid_request` for a `PAYMENT-SIGNATURE` that is no x402 payload (mppx
   *   would take it for its own internal failure).
   */
  async standardCredential(headers: Headers): Promise<boolean> {
    if (!this.o.standard?.enabled) return false;
    const x402 = headers.get("payment-signature");
    if (x402 !== null && this.o.standard.evmEnabled && !x402PayloadOf(x402)) throw errors.x402_payload_malformed();
    const { Credential } = await loadMppx();
    return carriesStandardCredential(headers, this.o.standard.evmEnabled, (auth) => {
      try {
        return Credential.deserialize(auth.trim()).challenge.method;
      } catch {
        return null;
      }
    });
  }

  /**
   * What the standard methods offer for a payment (their 402, no state written); null when they are
   * not offered.
   */
  async standardOffer(request: Request, seller: Seller, terms: PaymentTerms, micros: number) {
    if (!this.standardEnabled) return null;
    const out = await this.standardPayment(request, seller, terms, micros);
    return out.status === 402 ? await standardOfferOf(out.response) : null;
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
    const { payments, clock } = this.o;
    const standard = this.o.standard!;
    // A credential already spent (or in flight) is named as such before mppx looks at it again; one
    // that settled but was never consumed (its credit failed to commit) is handed back to be.
    const known = await standard.referenceOf(request.headers);
    if (known) {
      const seen = await payments.get(seller.sellerId, known);
      // Settled before, its transfer not confirmed then (or the facilitator's answer lost): the retry
      // asks the chain again.
      if (seen.value?.state === "processing" && (seen.value.pendingTransfer || seen.value.answerLost)) {
        return await this.#resumeUnconfirmed(seen as Deno.KvEntry<PaymentRecord>, seller, terms, beforeSettle);
      }
      // Settled and recorded paid, its credit never committed (or, a call confirmed by the sweep, its
      // answer never delivered): the same terms take it now, a call forwarded once more.
      const owed = terms.action !== "call" || seen.value?.answerOwed === true;
      if (seen.value?.state === "paid" && sameTerms(seen.value.terms, terms) && owed) {
        const entry = seen as Deno.KvEntry<PaymentRecord>;
        const externalId = seen.value.processorRef ?? "";
        if (terms.action !== "call") return { status: 200, entry, externalId, receiptHeaders: [] };
        const answer = await this.#claimAnswer(entry, seller);
        await this.#releasedOnError(answer, async () => await beforeSettle?.());
        const receipt = await receiptHeader(entry.value.rail, entry.value.reference, externalId, clock.now());
        return { status: 200, entry, externalId, receiptHeaders: [["payment-receipt", receipt]], answer };
      }
      if (seen.value) throw this.stateError(seen.value, seller);
    }
    // A record that moved no money is kept only while its credential can be presented again.
    const until = await standard.presentableUntil(request.headers);
    const presentableUntil = until === null
      ? undefined
      : new Date(Math.min(until, clock.now().getTime() + STANDARD_PRESENTABLE_MAX_MS)).toISOString();
    let claimed: Deno.KvEntry<PaymentRecord> | null = null;
    const settle = () =>
      standard.handle(request, realmOf(seller), terms, micros, async (pending) => {
        const now = clock.now().toISOString();
        const entry = await payments.claim({
          reference: pending.reference,
          sellerId: seller.sellerId,
          rail: pending.method,
          state: "processing",
          terms,
          amountMicros: micros,
          createdAt: now,
          updatedAt: now,
          ...(presentableUntil ? { presentableUntil } : {}),
          // An evm settlement can be asked about on chain later: the sweep resolves it if nobody else does.
          ...(pending.authorization
            ? { authorization: pending.authorization, recheckAt: clock.now().getTime() + SETTLE_RECHECK_GRACE_MS }
            : {}),
        });
        if (!entry) throw this.stateError((await payments.get(seller.sellerId, pending.reference)).value!, seller);
        claimed = entry;
        if (!beforeSettle) return;
        try {
          await beforeSettle();
        } catch (err) {
          await payments.release(entry);
          claimed = null;
          throw err;
        }
      });
    let out;
    try {
      out = await settle();
    } catch (err) {
      const left = claimed as Deno.KvEntry<PaymentRecord> | null;
      if (!(err instanceof SettlementUnconfirmed) || !left) throw err;
      // The money may have moved: the reference stays claimed, neither refused (a stock client
      // would pay again) nor credited (the facilitator's word alone grants nothing). An evm transfer
      // is looked for again later; a Stripe charge of unknown outcome is the operator's to reconcile.
      if (err.transfer) await payments.awaitTransfer(left, err.transfer);
      // No transaction named (the facilitator's answer lost): a retry asks the chain by the authorization.
      else if (left.value.authorization) await payments.move(left, { answerLost: true }).catch(() => false);
      throw this.#unconfirmed(left.value, seller, err);
    }
    if (out.status === 402) {
      const left = claimed as Deno.KvEntry<PaymentRecord> | null;
      if (left) await payments.move(left, { state: "failed", settlementReason: "settlement_failed" });
      return out;
    }
    if (!claimed) throw new Error("standard payment settled without a claimed reference");
    const settled = await this.#recordSettled(claimed, out.externalId);
    return { status: 200, entry: settled, externalId: out.externalId, receiptHeaders: out.receiptHeaders };
  }

  /**
   * Grants the credit of this agent's purchases whose settlement the storefront's node could not
   * confirm at the time, once it does (an agent that stopped retrying still gets its credit); a
   * transfer the chain refutes leaves its reference `failed`. Errors leave them for the next read.
   */
  async settleUnconfirmed(seller: Seller, agent: AuthenticatedAgent): Promise<void> {
    const { payments, standard } = this.o;
    if (!standard) return;
    const references = await payments.unconfirmed(seller.sellerId, agent.credentialId, UNCONFIRMED_PER_READ);
    // At once, not one after another: the read waits for the slowest node answer, not their sum.
    await Promise.all(references.map(async (reference) => {
      const entry = await payments.get(seller.sellerId, reference);
      const p = entry.value;
      if (!p?.pendingTransfer || p.state !== "processing") return;
      const check = await standard.checkTransfer(p.pendingTransfer);
      const current = entry as Deno.KvEntry<PaymentRecord>;
      if (check === "refused") {
        await payments.move(current, { state: "failed", settlementReason: "transfer_not_on_chain" });
      }
      if (check !== "confirmed") return;
      // A retry of the agent's may consume it at the same moment: one of the two commits wins.
      await this.consumeAndGrant(current, agent, { processorRef: p.pendingTransfer.transaction }, seller).catch(
        () => {},
      );
    }));
  }

  /**
   * Moves a settlement the sweep rechecked (or found `paid` and never consumed) to its final state,
   * once: a confirmed purchase is consumed with its credit granted (one atomic commit), a confirmed
   * pay-as-you-go call becomes `paid` with its answer owed (the agent was told 503: the same
   * credential sent again is served), or `consumed` when it was `paid` (served), a refused one
   * `failed` (no money moved; a call's hold ended with its request). A concurrent retry, read or
   * sweep that moved it first wins, and this one does nothing.
   * @returns whether this call moved it
   */
  async settleRechecked(
    entry: Deno.KvEntry<PaymentRecord>,
    recheck: SettledOutcome,
    agent: AuthenticatedAgent,
    seller: Seller,
  ): Promise<boolean> {
    const { payments } = this.o;
    if (recheck.check === "refused") {
      return await payments.move(entry, { state: "failed", settlementReason: recheck.reason });
    }
    const processorRef = recheck.processorRef;
    if (entry.value.terms.action === "call") {
      // Recorded `paid` already, the call was served (its consume failed to commit): spent now.
      if (entry.value.state === "paid") return await payments.move(entry, { state: "consumed" });
      return await payments.move(entry, { state: "paid", processorRef, answerOwed: true });
    }
    try {
      await this.consumeAndGrant(entry, agent, { processorRef }, seller);
      return true;
    } catch (err) {
      // Moved meanwhile (its agent's retry or read consumed it): the state error says so.
      if (err instanceof AppError) return false;
      throw err;
    }
  }

  /**
   * A retry of a settlement left unconfirmed: granted once the node shows its transfer (the
   * facilitator's, or the one the authorization's log names when its answer was lost; the paid
   * proxy's call is forwarded then), `failed` when the chain refutes it, else 503 again.
   */
  async #resumeUnconfirmed(
    entry: Deno.KvEntry<PaymentRecord>,
    seller: Seller,
    terms: PaymentTerms,
    beforeSettle?: () => Promise<void>,
  ): Promise<StandardSettled> {
    // mppx bound the credential to its terms when it settled; the retry does not pass mppx again,
    // so it must ask for exactly those terms (another agent, amount or plan buys nothing with it).
    const paid = entry.value.terms;
    const differs = termsDiffer(paid, terms);
    if (differs === "request") throw errors.payment_request_mismatch();
    if (differs === "amount") {
      throw errors.payment_amount_mismatch({ detail: `the payment was for ${paid.amountUsd} USD` });
    }
    // A call's answer, once confirmed, is owed: one copy of the credential asks and answers it.
    const answer = terms.action === "call" ? await this.#claimAnswer(entry, seller) : undefined;
    const transfer = await this.#releasedOnError(answer, async () => {
      const recheck = await this.o.standard!.recheckSettlement(entry.value);
      if (recheck.check === "unconfirmed") throw this.#unconfirmed(entry.value, seller);
      if (recheck.check === "refused") {
        await this.o.payments.move(entry, { state: "failed", settlementReason: recheck.reason });
        throw errors.settlement_failed({ extra: { settlementReason: recheck.reason } });
      }
      // Paid, so an upstream error here leaves the reference as it is, for the next retry.
      await beforeSettle?.();
      return recheck.transfer;
    });
    const at = this.o.clock.now();
    return {
      status: 200,
      entry,
      externalId: transfer.transaction,
      receiptHeaders: [[
        "payment-receipt",
        await receiptHeader(entry.value.rail, entry.value.reference, transfer.transaction, at),
      ]],
      ...(answer ? { answer } : {}),
    };
  }

  /**
   * Claims the giving of a call's owed answer ({@link PaymentStore.claimAnswer}) for the life of a
   * paid call's hold: concurrent copies of the credential would each run the seller's upstream
   * (each run may cost the seller a model call) for one payment.
   * @throws {AppError} the reference's state error when it moved on (served meanwhile), else 503
   *   `payment_provider_unavailable` (another copy is answering; retry unchanged: if its upstream
   *   fails, the answer is still owed)
   */
  async #claimAnswer(entry: Deno.KvEntry<PaymentRecord>, seller: Seller): Promise<AnswerClaim> {
    const { payments, clock } = this.o;
    const claim = await payments.claimAnswer(entry, STALE_RESERVATION_MS);
    if (claim) return claim;
    const now = (await payments.get(entry.value.sellerId, entry.value.reference)).value;
    if (!now) throw errors.payment_unknown();
    const terminal = terminalError(now, effectiveState(now, clock));
    if (terminal) throw terminal;
    throw errors.payment_provider_unavailable({
      detail: "another request with this credential is being answered; retry unchanged",
      extra: { statusUrl: this.o.statusUrl(now.reference, seller) },
      headers: { "retry-after": "5" },
    });
  }

  /** Runs `work` under an owed answer's claim, which is released when it throws (the answer stays owed). */
  async #releasedOnError<T>(answer: AnswerClaim | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (answer) await this.o.payments.releaseAnswer(answer).catch(() => {});
      throw err;
    }
  }

  /** The answer to a settlement of unknown outcome: the spec's one payment error to retry unchanged. */
  #unconfirmed(p: PaymentRecord, seller: Seller, cause?: unknown): AppError {
    return errors.payment_provider_unavailable({
      detail: "the payment's outcome is not known yet; retry unchanged (the same credential is never charged twice)",
      extra: { statusUrl: this.o.statusUrl(p.reference, seller) },
      headers: { "retry-after": "5" },
      cause,
    });
  }

  /**
   * Records a standard payment that settled (`processing` -> `paid`, with its external id) before
   * anything else may fail: money moved, so a credit that then fails to commit is still owed, and
   * the same credential sent again redeems it instead of reading "in progress" for good. A failed
   * commit (a KV error) is made again a few times.
   * @returns the `paid` entry, which the caller consumes
   */
  async #recordSettled(claimed: Deno.KvEntry<PaymentRecord>, externalId: string): Promise<Deno.KvEntry<PaymentRecord>> {
    const { payments } = this.o;
    const { sellerId, reference } = claimed.value;
    const moved = await retryWrite(
      // Listed for the settlement sweep: a credit that fails to commit below is granted by it if the
      // agent never sends the credential again. Due a grace period from now, never at the claim's due
      // time (a slow settlement may have passed it): the sweep must not consume what this request is
      // about to.
      () =>
        payments.move(claimed, {
          state: "paid",
          processorRef: externalId,
          recheckAt: this.o.clock.now().getTime() + SETTLE_RECHECK_GRACE_MS,
        }),
      RECORD_SETTLED_TRIES,
    );
    if (!moved) throw new Error("a settled payment's claim changed before it was recorded");
    return (await payments.get(sellerId, reference)) as Deno.KvEntry<PaymentRecord>;
  }
}

/** A settlement's known outcome: money moved (with the settlement's id), or refused with why. */
export type SettledOutcome =
  | { check: "confirmed"; processorRef: string }
  | Extract<SettlementRecheck, { check: "refused" }>;

/** Commits of a settled standard payment's `paid` record tried before the error is given up. */
const RECORD_SETTLED_TRIES = 3;

/** Whether a stored payment's terms are the ones this request would pay for (same agent, plan, amount). */
function sameTerms(a: PaymentTerms, b: PaymentTerms): boolean {
  return termsDiffer(a, b) === null;
}

/** The challenges a standard-method 402 carries, as header values and as challenge values. */
export async function standardOfferOf(res: Response): Promise<StandardOffer> {
  const www = res.headers.get("www-authenticate");
  let challenges: Challenge.Challenge[] = [];
  if (www) {
    const { Challenge } = await loadMppx();
    try {
      challenges = Challenge.deserializeList(www);
    } catch { /* a header mppx wrote always parses */ }
  }
  return { www, x402: res.headers.get("payment-required"), challenges };
}

/** The view of a standard offer in a purchase 402's JSON body (`standard`). */
export function standardOfferView(offer: StandardOffer): Record<string, unknown> {
  const methods = offer.challenges.map((c) => ({
    method: c.method,
    intent: c.intent,
    challengeId: c.id,
    expires: c.expires,
  }));
  return {
    detail: "stock clients: answer an mppx challenge with Authorization: Payment, or x402 with PAYMENT-SIGNATURE",
    methods,
    x402: offer.x402 !== null,
  };
}

/** The headers of a standard offer, as a 402 passes them on. */
export function standardOfferHeaders(offer: StandardOffer): [string, string][] {
  const headers: [string, string][] = [];
  if (offer.www) headers.push(["www-authenticate", offer.www]);
  if (offer.x402) headers.push(["payment-required", offer.x402]);
  return headers;
}

/** The Payment auth scheme's problem types (RFC 9457 `type`), whose last segment names the reason. */
const PROBLEM_TYPE = /^https:\/\/paymentauth\.org\/problems\/(?:[a-z]+\/)?([a-z0-9-]{1,64})$/;

/**
 * The `settlementReason` of mppx's problem: its type as a code (`invalid_challenge`,
 * `verification_failed`, `malformed_credential`), like the card rail's `insufficient_funds`. Never
 * its `detail`, a sentence of mppx's that can quote the credential (`Challenge "<id>" is invalid`).
 */
export function settlementReasonOf(problem: unknown): string {
  const type = (problem as { type?: unknown } | null)?.type;
  const slug = typeof type === "string" ? PROBLEM_TYPE.exec(type)?.[1] : undefined;
  return slug ? slug.replaceAll("-", "_") : "payment_not_settled";
}

/**
 * A standard credential that did not settle, as the storefront's 402 `settlement_failed`, carrying
 * mppx's fresh challenges so the client can start again.
 */
export async function settlementRefused(res: Response): Promise<AppError> {
  const reason = settlementReasonOf(await res.json().catch(() => null));
  const headers: Record<string, string> = { "cache-control": "no-store" };
  for (const [k, v] of standardOfferHeaders(await standardOfferOf(res))) headers[k] = v;
  return errors.settlement_failed({ extra: { settlementReason: reason }, headers });
}
