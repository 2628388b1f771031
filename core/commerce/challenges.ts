/**
 * HTTP `Payment` scheme challenges and credentials, built on the `mppx` core (Challenge, Credential,
 * Receipt): the challenge id is an HMAC over realm, method, intent, request and expiry, and
 * `request` travels as base64url of canonical JSON. Challenges are stateless: a 402 writes nothing.
 */
import type { Challenge, Credential, Receipt } from "mppx";
import type { Clock } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";
import { commerceErrors as errors, NOTES } from "./errors.ts";
import { loadMppx, type Mppx } from "./mppx.ts";
import type { Rail } from "./types.ts";

/** How long a challenge can be answered. */
export const CHALLENGE_TTL_MS = 10 * 60_000;

/** What a storefront challenge asks to be paid; every field is bound into the challenge id. */
export interface PaymentTerms {
  /** `purchase`, `extend`, or `call` (one pay-as-you-go request). */
  action: "purchase" | "extend" | "call";
  sellerId: string;
  planId: string;
  /** The six-decimal amount, e.g. `"5.000000"`. */
  amountUsd: string;
  currency: "usd";
  /** The agent credential the payment is for. */
  agent: string;
  /** The card checkout lane (a human pays on a hosted page). */
  checkout?: boolean;
  /** Pay-as-you-go: the service the call is for. */
  service?: string;
}

export type StorefrontChallenge = Challenge.Challenge<Record<string, unknown>>;

/** A challenge of one of our rails, as a value and as its `WWW-Authenticate` value (rendered without mppx). */
export interface IssuedChallenge {
  rail: Rail;
  challenge: StorefrontChallenge;
  header: string;
}

/** The storefront-wide key the challenge ids are bound with, made once and kept in KV. */
export async function loadChallengeKey(kv: Deno.Kv): Promise<string> {
  const key = ["commerce_challenge_key"];
  const got = await kv.get<string>(key);
  if (got.value) return got.value;
  const fresh = base64url(randomBytes(32));
  const res = await kv.atomic().check({ key, versionstamp: null }).set(key, fresh).commit();
  return res.ok ? fresh : (await kv.get<string>(key)).value!;
}

/** Issues and checks challenges for one realm key, with `mppx` already loaded (see {@link Challenges.load}). */
export class Challenges {
  constructor(private readonly secretKey: string, private readonly clock: Clock, private readonly mppx: Mppx) {}

  /** The issuer for a key, once `mppx` is loaded. */
  static async load(secretKey: string, clock: Clock): Promise<Challenges> {
    return new Challenges(secretKey, clock, await loadMppx());
  }

  /** A challenge for a rail; `realm` is the seller's host. */
  issue(realm: string, rail: Rail, terms: PaymentTerms): StorefrontChallenge {
    // A nonce keeps two identical requests in the same instant from sharing one reference.
    const request: Record<string, unknown> = { ...terms, amount: terms.amountUsd, nonce: base64url(randomBytes(12)) };
    if (request.checkout === undefined) delete request.checkout;
    if (request.service === undefined) delete request.service;
    return this.mppx.Challenge.from({
      secretKey: this.secretKey,
      realm,
      method: rail,
      intent: "charge",
      request,
      expires: new Date(this.clock.now().getTime() + CHALLENGE_TTL_MS).toISOString(),
      description: `${terms.action} ${terms.planId} for ${terms.amountUsd} USD`,
    }) as StorefrontChallenge;
  }

  /** The `WWW-Authenticate` value of a challenge. */
  header(challenge: StorefrontChallenge): string {
    return this.mppx.Challenge.serialize(challenge);
  }

  /** {@link issue}, with the challenge's `WWW-Authenticate` value, so the edge renders it without mppx. */
  offer(realm: string, rail: Rail, terms: PaymentTerms): IssuedChallenge {
    const challenge = this.issue(realm, rail, terms);
    return { rail, challenge, header: this.header(challenge) };
  }

  /**
   * Reads the `Authorization: Payment <credential>` of a request and checks its challenge was issued
   * here for this realm and has not expired.
   * @returns null when `Authorization` does not carry the Payment scheme.
   * @throws {AppError} `invalid_request` for an undecodable credential, `payment_unknown` for a
   *   challenge not issued here (or for another seller) or past its expiry (a checkout's: see below).
   */
  read(headers: Headers, realm: string): { challenge: StorefrontChallenge; payload: Record<string, unknown> } | null {
    const auth = headers.get("authorization");
    if (!auth || !/^payment\s/i.test(auth.trim())) return null;
    let cred: Credential.Credential;
    try {
      cred = this.mppx.Credential.deserialize(auth.trim());
    } catch (err) {
      throw errors.credential_malformed({ cause: err });
    }
    const challenge = cred.challenge as StorefrontChallenge;
    const payload = (cred.payload && typeof cred.payload === "object" ? cred.payload : {}) as Record<string, unknown>;
    let ours = false;
    try {
      ours = this.mppx.Challenge.verify(challenge, { secretKey: this.secretKey }) && challenge.realm === realm;
    } catch {
      ours = false;
    }
    if (!ours) {
      throw errors.payment_unknown({ detail: NOTES.FRESH_402 });
    }
    // A checkout's challenge lives as long as its checkout record, which outlasts the challenge's
    // ten minutes: the human may pay late on the page, and a paid checkout stays redeemable until
    // consumed (an expired unpaid one reads `released` there).
    const checkout = challenge.request.checkout === true;
    if (!checkout && challenge.expires && Date.parse(challenge.expires) <= this.clock.now().getTime()) {
      throw errors.challenge_expired();
    }
    return { challenge, payload };
  }
}

/** The `Payment-Receipt` header value for a settled payment. */
export async function receiptHeader(
  method: string,
  reference: string,
  externalId: string,
  at: Date,
  refund?: RefundNote,
): Promise<string> {
  const { Receipt } = await loadMppx();
  return Receipt.serialize(
    Receipt.from({
      method,
      reference,
      externalId,
      status: "success",
      timestamp: at.toISOString(),
      // A method-specific extension field (receipts keep unknown fields): the charge was given back.
      ...(refund ? { refund } : {}),
    } as Receipt.Receipt),
  );
}

/** What a receipt says about a charge given back: `refunded`, or `pending` when the operator must finish it. */
export interface RefundNote {
  status: "refunded" | "pending";
  reason: string;
  refundRef?: string;
}

/**
 * Compares the terms a credential's challenge carries with the terms of the request it is
 * presented on.
 * @throws {AppError} 409 `payment_amount_mismatch` when only the amount differs,
 *   409 `payment_request_mismatch` when anything else does.
 */
export function matchTerms(challenge: StorefrontChallenge, expected: PaymentTerms): void {
  const got = challenge.request as Partial<Record<keyof PaymentTerms, unknown>>;
  const differs = termsDiffer(got, expected);
  if (differs === "request") throw errors.payment_request_mismatch();
  if (differs === "amount") {
    throw errors.payment_amount_mismatch({ detail: `the challenge was for ${String(got.amountUsd)} USD` });
  }
}

/** What binds a payment to what it pays for, beside its amount. */
const BOUND_FIELDS: readonly (keyof PaymentTerms)[] = ["action", "sellerId", "planId", "currency", "agent", "service"];

/**
 * How the terms a payment was made for (`got`) differ from those a request asks for: `"request"`
 * (another action, seller, plan, currency, agent, service or checkout), `"amount"`, or null.
 */
export function termsDiffer(
  got: Partial<Record<keyof PaymentTerms, unknown>>,
  expected: PaymentTerms,
): "request" | "amount" | null {
  const differs = (k: keyof PaymentTerms) => (got[k] ?? undefined) !== (expected[k] ?? undefined);
  if (BOUND_FIELDS.some(differs) || Boolean(got.checkout) !== Boolean(expected.checkout)) return "request";
  return got.amountUsd !== expected.amountUsd ? "amount" : null;
}
