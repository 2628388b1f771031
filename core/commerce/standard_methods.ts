/**
 * The storefront's standard payment methods, spoken by stock clients: mppx's own server methods
 * (`evm` charge with EIP-3009 `transferWithAuthorization`, answering x402 v2 on the same 402 through
 * an x402 facilitator; `stripe` charge with shared payment tokens), composed by mppx itself.
 *
 * mppx checks the challenge (HMAC over realm, request, expiry and the storefront's terms in `opaque`),
 * the credential and its signature; the storefront owns what happens around the money:
 * {@link SettlementGate} runs just before funds move (the facilitator's `/settle`, Stripe's
 * PaymentIntent), so the payment reference is claimed atomically first, and a pay-as-you-go call is
 * answered by the upstream before it is settled (an upstream error is never charged).
 *
 * mppx, viem and the x402 helpers are loaded on first use only.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { PaymentTerms } from "./challenges.ts";
import { CARD_MINIMUM_MICROS, formatUsd } from "./money.ts";
import type { StandardMethodsConfig } from "../payment_config.ts";

export type { StandardMethodsConfig };

/** What is about to be settled: the reference the storefront keys the payment by. */
export interface PendingSettlement {
  method: "evm" | "stripe";
  /** Unique per settlement: the EIP-3009 authorization (chain, payer, nonce) or the Stripe idempotency key. */
  reference: string;
  /** `evm`: the authorization about to be submitted, kept so the chain can be asked about it later. */
  authorization?: EvmAuthorization;
}

/** The parts of an EIP-3009 authorization the chain can be asked about (addresses and nonce as hex, numbers as decimal). */
export interface EvmAuthorization {
  from: string;
  nonce: string;
  /** Atomic units of the token. */
  value: string;
  /** Unix seconds: no block at or after it can use the authorization. */
  validBefore: string;
}

/**
 * What the chain says of a settlement whose answer was lost: `confirmed` with the transfer it made,
 * `refused` with why (the authorization can no longer be used, or was cancelled), or `unconfirmed`.
 */
export type SettlementRecheck =
  | { check: "confirmed"; transfer: ChainTransfer }
  | { check: "refused"; reason: "transfer_not_on_chain" | "authorization_expired" | "authorization_canceled" }
  | {
    check: "unconfirmed";
    /**
     * Where the next look for the authorization's logs starts (a block number): the first look's
     * window, kept so a later one still finds a use however many blocks passed; moved on as far as
     * a look got, so each searches a bounded stretch.
     */
    logsFromBlock?: number;
  };

/**
 * Runs just before funds move. Throwing stops the settlement (nothing is charged); the error is
 * kept and rethrown to the caller of {@link StandardMethods.handle} instead of mppx's 402.
 */
export type SettlementGate = (p: PendingSettlement) => Promise<void>;

/** The outcome of one request through the standard methods. */
export type StandardOutcome =
  | { status: 402; response: Response }
  | {
    status: 200;
    /** The settled payment's reference as the gate saw it. */
    reference: string;
    method: "evm" | "stripe";
    /** On-chain transaction hash or PaymentIntent id. */
    externalId: string;
    /** `Payment-Receipt` (and x402 `PAYMENT-RESPONSE`) headers for the answer. */
    receiptHeaders: [string, string][];
  };

/** The EIP-3009 transfer a settlement moved: what the storefront's node must show before it counts. */
export interface ChainTransfer {
  /** The settlement's transaction hash, as the facilitator named it. */
  transaction: string;
  payer: string;
  /** Atomic units of the token. */
  value: string;
}

/**
 * The money may have moved, but the storefront cannot tell: a facilitator settled and the storefront's
 * node could not say whether the transfer is on chain (unreachable, or behind), with that `transfer`;
 * or the facilitator's or Stripe's answer never came (a network error, a 5xx: "the request may have
 * run"), with none. The payment is neither refused nor credited.
 */
export class SettlementUnconfirmed extends Error {
  constructor(readonly transfer: ChainTransfer | null) {
    super("settlement outcome not known yet");
  }
}

/** What the storefront's node says of a settlement's transfer. */
export type TransferCheck = "confirmed" | "unconfirmed" | "refused";

interface GateContext {
  gate: SettlementGate;
  pending?: PendingSettlement;
  /** Why the gate refused, rethrown after mppx turned it into a 402. */
  refused?: unknown;
  /** A settlement whose outcome is not known, rethrown as {@link SettlementUnconfirmed}. */
  unconfirmed?: { transfer: ChainTransfer | null };
}

const FACILITATOR_TIMEOUT_MS = 30_000;
const RECEIPT_POLL_MS = 250;
/** A later look at a pending settlement (a retry, an entitlements read) asks the node once, briefly. */
const RECHECK_TIMEOUT_MS = 5_000;
const REALM_CACHE_MAX = 256;
/**
 * How far back (blocks) from the first look the token's `AuthorizationUsed` log of a settlement whose
 * answer was lost is looked for: hours to a day of blocks on common chains. The sweep first looks
 * within minutes of the claim; later looks start where the first did ({@link SettlementRecheck}).
 */
const AUTHORIZATION_LOG_LOOKBACK_BLOCKS = 10_000n;
/** Blocks per `eth_getLogs`: a range RPC providers serve (several refuse 10,000). */
const AUTHORIZATION_LOG_RANGE_BLOCKS = 2_000n;
/** `eth_getLogs` ranges one look searches at most (two calls each): bounded work per settlement. */
const AUTHORIZATION_LOG_RANGES_PER_LOOK = 5;
/**
 * How far past an authorization's `validBefore` (seconds) the latest block must be before its being
 * unused is final: a block just past it may be reorganised away for one that used it in time.
 */
const AUTHORIZATION_EXPIRY_MARGIN_S = 15n * 60n;

// deno-lint-ignore no-explicit-any
type AnyMppx = any;

/** The names of the storefront's terms in a standard challenge's `opaque` (`meta`). */
export function termsMeta(terms: PaymentTerms): Record<string, string> {
  const meta: Record<string, string> = {
    action: terms.action,
    sellerId: terms.sellerId,
    planId: terms.planId,
    amountUsd: terms.amountUsd,
    agent: terms.agent,
  };
  if (terms.service) meta.service = terms.service;
  return meta;
}

/**
 * True when the request carries a credential for a standard method: MPP `evm`/`stripe`, or (when
 * `x402` is offered) an x402 `PAYMENT-SIGNATURE`.
 */
export function carriesStandardCredential(
  headers: Headers,
  x402: boolean,
  methodOf: (auth: string) => string | null,
): boolean {
  if (x402 && headers.has("payment-signature")) return true;
  const auth = headers.get("authorization");
  if (!auth || !/^payment\s/i.test(auth.trim())) return false;
  const m = methodOf(auth);
  return m === "evm" || m === "stripe";
}

export class StandardMethods {
  readonly #als = new AsyncLocalStorage<GateContext>();
  readonly #byRealm = new Map<string, Promise<AnyMppx>>();

  constructor(private readonly config: StandardMethodsConfig, private readonly secretKey: () => Promise<string>) {}

  /** Whether any standard method is offered. */
  get enabled(): boolean {
    return this.config.evm !== null || this.config.stripe !== null;
  }

  /**
   * The reference a presented credential would settle under (as {@link PendingSettlement}), read
   * before anything is verified, so a spent credential is named as spent; null when there is none.
   */
  async referenceOf(headers: Headers): Promise<string | null> {
    const evm = this.config.evm;
    const x402 = headers.get("payment-signature");
    if (x402 && evm) {
      try {
        const payload = JSON.parse(new TextDecoder().decode(base64Bytes(x402)));
        const auth = payload?.payload?.authorization;
        return await evmReference(evm.chainId, auth?.from, auth?.nonce);
      } catch {
        return null;
      }
    }
    const header = headers.get("authorization");
    if (!header) return null;
    const { Credential } = await import("mppx");
    try {
      const cred = Credential.deserialize(header.trim());
      const payload = cred.payload as Record<string, unknown>;
      if (cred.challenge.method === "evm" && evm) return await evmReference(evm.chainId, payload.from, payload.nonce);
      if (cred.challenge.method === "stripe" && typeof payload.spt === "string") {
        return `stripe_${await sha256Short(`mpp_${cred.challenge.id}_${payload.spt}`)}`;
      }
    } catch { /* not a credential: mppx answers it */ }
    return null;
  }

  /**
   * The last moment (epoch ms) the presented credential can be presented at all, as mppx enforces
   * it: an MPP credential's challenge `expires` (mppx refuses one without), an x402 authorization's
   * EIP-3009 `validBefore` (x402 answers a challenge mppx makes afresh for each request); null when
   * there is none to read (mppx then refuses the credential before anything is claimed).
   */
  async presentableUntil(headers: Headers): Promise<number | null> {
    const x402 = headers.get("payment-signature");
    if (x402 && this.config.evm) {
      const validBefore = (x402PayloadOf(x402)?.payload as { authorization?: { validBefore?: unknown } } | undefined)
        ?.authorization?.validBefore;
      return typeof validBefore === "string" && /^[0-9]{1,78}$/.test(validBefore) ? Number(validBefore) * 1000 : null;
    }
    const header = headers.get("authorization");
    if (!header) return null;
    const { Credential } = await import("mppx");
    try {
      const expires = Date.parse(Credential.deserialize(header.trim()).challenge.expires ?? "");
      return Number.isFinite(expires) ? expires : null;
    } catch {
      return null;
    }
  }

  /** Whether the `evm` method, and with it x402, is offered. */
  get evmEnabled(): boolean {
    return this.config.evm !== null;
  }

  /** Whether the `stripe` method can take this amount: Stripe's card minimum, and whole cents. */
  stripeOffered(micros: number): boolean {
    return this.config.stripe !== null && micros >= CARD_MINIMUM_MICROS && micros % 10_000 === 0;
  }

  /**
   * Issues the 402 (no credential) or verifies and settles the credential the request carries,
   * for a payment of `micros` on `terms`. `gate` runs just before funds move.
   * @throws whatever `gate` threw, when it refused
   */
  async handle(
    input: Request,
    realm: string,
    terms: PaymentTerms,
    micros: number,
    gate: SettlementGate,
  ): Promise<StandardOutcome> {
    const mppx = await this.#forRealm(realm);
    const meta = termsMeta(terms);
    const description = `${terms.action} ${terms.planId} for ${terms.amountUsd} USD`;
    const entries: unknown[] = [];
    if (this.config.evm) entries.push(["evm/charge", { amount: formatUsd(micros), description, meta }]);
    if (this.stripeOffered(micros)) {
      entries.push(["stripe/charge", { amount: (micros / 1_000_000).toFixed(2), description, meta }]);
    }
    // No method takes this payment (a card-only setup under the card minimum): nothing to offer.
    if (entries.length === 0) return { status: 402, response: new Response(null, { status: 402 }) };
    const ctx: GateContext = { gate };
    const result = await this.#als.run(ctx, () => mppx.compose(...entries)(input));
    if (ctx.refused !== undefined) throw ctx.refused;
    if (ctx.unconfirmed) throw new SettlementUnconfirmed(ctx.unconfirmed.transfer);
    if (result.status === 402) return { status: 402, response: result.challenge as Response };
    const receipted: Response = result.withReceipt(new Response(null));
    const receiptHeaders: [string, string][] = [];
    for (const name of ["payment-receipt", "payment-response"]) {
      const v = receipted.headers.get(name);
      if (v) receiptHeaders.push([name, v]);
    }
    const { Receipt } = await import("mppx");
    const receipt = Receipt.deserialize(receipted.headers.get("payment-receipt")!);
    const pending = ctx.pending!;
    return {
      status: 200,
      reference: pending.reference,
      method: pending.method,
      externalId: receipt.reference,
      receiptHeaders,
    };
  }

  /** One mppx instance per realm (the seller's host), made on first use. */
  #forRealm(realm: string): Promise<AnyMppx> {
    let got = this.#byRealm.get(realm);
    if (!got) {
      if (this.#byRealm.size >= REALM_CACHE_MAX) this.#byRealm.delete(this.#byRealm.keys().next().value!);
      got = this.#create(realm);
      got.catch(() => this.#byRealm.delete(realm));
      this.#byRealm.set(realm, got);
    }
    return got;
  }

  async #create(realm: string): Promise<AnyMppx> {
    const { Mppx } = await import("mppx/server");
    const methods: unknown[] = [];
    const evm = this.config.evm;
    if (evm) {
      const { charge } = await import("mppx/evm/server");
      methods.push(charge({
        chainId: evm.chainId,
        currency: evm.token,
        decimals: evm.decimals,
        authorization: { name: evm.tokenName, version: evm.tokenVersion },
        recipient: evm.recipient,
        x402: { facilitator: evm.facilitatorUrl, fetch: this.#facilitatorFetch(evm) },
      }));
    }
    const stripe = this.config.stripe;
    if (stripe) {
      const { charge } = await import("mppx/stripe/server");
      methods.push(charge({
        client: this.#stripeClient(stripe),
        currency: "usd",
        decimals: 2,
        networkId: stripe.networkId,
        paymentMethodTypes: ["card"],
      }));
    }
    return Mppx.create({
      // deno-lint-ignore no-explicit-any
      methods: methods as any,
      secretKey: await this.secretKey(),
      realm,
    });
  }

  /**
   * The fetch mppx's evm method calls the facilitator with: a `/settle` first passes the gate, and
   * a settled transaction is confirmed on chain (when an RPC URL is set) before it counts.
   */
  #facilitatorFetch(evm: NonNullable<StandardMethodsConfig["evm"]>): typeof fetch {
    return async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const signal = AbortSignal.timeout(FACILITATOR_TIMEOUT_MS);
      if (!url.pathname.endsWith("/settle")) return await fetch(input, { ...init, signal });
      const body = JSON.parse(String(init?.body ?? "{}"));
      const auth = body?.paymentPayload?.payload?.authorization;
      if (typeof auth?.from !== "string" || typeof auth?.nonce !== "string") {
        throw new Error("facilitator settle without an EIP-3009 authorization");
      }
      const pending: PendingSettlement = {
        method: "evm",
        reference: (await evmReference(evm.chainId, auth.from, auth.nonce))!,
        authorization: {
          from: auth.from,
          nonce: auth.nonce,
          value: String(auth.value),
          validBefore: String(auth.validBefore),
        },
      };
      await this.#pass(pending);
      // No answer, or a 5xx: the facilitator may have broadcast the transfer, so the payment is
      // neither refused (a stock client would pay again) nor credited.
      const lost = async () => {
        const ctx = this.#als.getStore();
        if (ctx) ctx.unconfirmed = { transfer: null };
        // A payment error to mppx (it logs anything else as an internal failure); the caller answers 503.
        const { Errors } = await import("mppx");
        return new Errors.VerificationFailedError({ reason: "facilitator answer lost" });
      };
      const res = await fetch(input, { ...init, signal }).catch(async () => {
        throw await lost();
      });
      if (res.status >= 500) {
        await res.body?.cancel();
        throw await lost();
      }
      if (evm.rpcUrl && res.ok) {
        const settled = await res.clone().json().catch(() => null);
        if (settled?.success === true) {
          try {
            await confirmTransfer(evm, settled.transaction, auth.from, BigInt(auth.value));
          } catch (err) {
            // The node cannot tell yet: the money may have moved, so the payment is kept pending.
            const ctx = this.#als.getStore();
            if (err instanceof ReceiptUnavailable && ctx) {
              ctx.unconfirmed = {
                transfer: { transaction: settled.transaction, payer: auth.from, value: String(auth.value) },
              };
            }
            const { Errors } = await import("mppx");
            throw new Errors.VerificationFailedError({ reason: "settlement transaction not confirmed on chain" });
          }
        }
      }
      return res;
    };
  }

  /**
   * Asks the storefront's node, once, whether a settlement left pending ({@link SettlementUnconfirmed})
   * is on chain: `confirmed`, `refused` (mined without the transfer, or unknown to a node that is in
   * sync), or still `unconfirmed`.
   */
  async checkTransfer(transfer: ChainTransfer): Promise<TransferCheck> {
    const evm = this.config.evm;
    if (!evm?.rpcUrl) return "unconfirmed";
    try {
      // No waiting and no transport retries: a recheck runs on a read of the agent's entitlements,
      // and the next read asks again.
      await confirmTransfer(evm, transfer.transaction, transfer.payer, BigInt(transfer.value), {
        waitMs: 0,
        timeoutMs: RECHECK_TIMEOUT_MS,
        retryCount: 0,
      });
      return "confirmed";
    } catch (err) {
      return err instanceof ReceiptUnavailable ? "unconfirmed" : "refused";
    }
  }

  /**
   * Asks the storefront's node, once, what became of an `evm` settlement left `processing`: by its
   * transaction when the facilitator named one, else by the authorization itself (the facilitator's
   * answer was lost, or the process died before recording it). The token's `AuthorizationUsed` log
   * names the transaction that used it, whose Transfer is then confirmed as any settlement's; an
   * authorization unused once the chain's time is well past its `validBefore` can never move money.
   * Without `PAY_EVM_RPC_URL` nothing can be told.
   */
  async recheckSettlement(
    p: { pendingTransfer?: ChainTransfer; authorization?: EvmAuthorization; logsFromBlock?: number },
  ): Promise<SettlementRecheck> {
    const evm = this.config.evm;
    if (!evm?.rpcUrl) return { check: "unconfirmed" };
    if (p.pendingTransfer) return await this.#recheckTransfer(p.pendingTransfer);
    const auth = p.authorization;
    if (!auth) return { check: "unconfirmed" };
    let found: AuthorizationUse;
    try {
      found = await findAuthorizationUse(evm, auth, p.logsFromBlock);
    } catch {
      return { check: "unconfirmed" };
    }
    if (found === "expired") return { check: "refused", reason: "authorization_expired" };
    if (found === "canceled") return { check: "refused", reason: "authorization_canceled" };
    if ("logsFromBlock" in found) return { check: "unconfirmed", logsFromBlock: found.logsFromBlock };
    return await this.#recheckTransfer({ transaction: found.transaction, payer: auth.from, value: auth.value });
  }

  /** What the chain says of a settlement's transfer, as a {@link SettlementRecheck}. */
  async #recheckTransfer(transfer: ChainTransfer): Promise<SettlementRecheck> {
    const check = await this.checkTransfer(transfer);
    if (check === "confirmed") return { check, transfer };
    return check === "refused" ? { check, reason: "transfer_not_on_chain" } : { check };
  }

  /** Stripe's PaymentIntents over fetch (mppx's duck-typed client), passing the gate first. */
  #stripeClient(stripe: NonNullable<StandardMethodsConfig["stripe"]>) {
    return {
      paymentIntents: {
        create: async (params: Record<string, unknown>, options: { idempotencyKey?: string; apiVersion?: string }) => {
          const key = options?.idempotencyKey;
          if (!key) throw new Error("stripe charge without an idempotency key");
          await this.#pass({ method: "stripe", reference: `stripe_${await sha256Short(key)}` });
          const form = new URLSearchParams();
          for (const [k, v] of Object.entries(params)) appendForm(form, k, v);
          // No answer, a 5xx, or a charge still `processing`: the card may be charged, so the payment
          // is neither refused (a stock client would pay again) nor credited.
          const unknown = () => {
            const ctx = this.#als.getStore();
            if (ctx) ctx.unconfirmed = { transfer: null };
            return new Error("Stripe's outcome is not known");
          };
          const res = await fetch(`${stripe.apiUrl}/v1/payment_intents`, {
            method: "POST",
            headers: {
              authorization: `Basic ${btoa(`${stripe.secretKey}:`)}`,
              "content-type": "application/x-www-form-urlencoded",
              "idempotency-key": key,
              ...(options.apiVersion ? { "stripe-version": options.apiVersion } : {}),
            },
            body: form,
            signal: AbortSignal.timeout(FACILITATOR_TIMEOUT_MS),
          }).catch(() => {
            throw unknown();
          });
          if (res.status >= 500) {
            await res.body?.cancel();
            throw unknown();
          }
          const json = await res.json().catch(() => ({}));
          if (!res.ok) throw new Error(json?.error?.message ?? `Stripe answered ${res.status}`);
          if (json?.status === "processing") throw unknown();
          return { ...json, lastResponse: { headers: Object.fromEntries(res.headers) } };
        },
      },
    };
  }

  async #pass(pending: PendingSettlement): Promise<void> {
    const ctx = this.#als.getStore();
    if (!ctx) throw new Error("settlement outside a storefront request");
    ctx.pending = pending;
    try {
      await ctx.gate(pending);
    } catch (err) {
      ctx.refused = err;
      // A payment error to mppx (it logs anything else as an internal failure); the caller rethrows ours.
      const { Errors } = await import("mppx");
      throw new Errors.VerificationFailedError({ reason: "refused by the storefront" });
    }
  }
}

/**
 * The reference of an EIP-3009 authorization: a digest of chain, payer and nonce (unique on chain),
 * in the storefront's reference alphabet so `GET /payments/{reference}` finds it.
 */
async function evmReference(chainId: number, from: unknown, nonce: unknown): Promise<string | null> {
  if (typeof from !== "string" || typeof nonce !== "string") return null;
  if (!/^0x[0-9a-fA-F]{40}$/.test(from) || !/^0x[0-9a-fA-F]{64}$/.test(nonce)) return null;
  return `evm_${await sha256Short(`${chainId}:${from.toLowerCase()}:${nonce.toLowerCase()}`)}`;
}

/**
 * The x402 payment payload a `PAYMENT-SIGNATURE` header carries (base64 JSON with a numeric
 * `x402Version` and a `payload` object), or null when the header is not one.
 */
export function x402PayloadOf(header: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(new TextDecoder().decode(base64Bytes(header)));
    const ok = typeof value === "object" && value !== null && !Array.isArray(value) &&
      typeof value.x402Version === "number" && typeof value.payload === "object" && value.payload !== null;
    return ok ? value : null;
  } catch {
    return null;
  }
}

/** Standard or URL-safe base64, padded or not. */
function base64Bytes(s: string): Uint8Array {
  const std = s.trim().replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(std + "=".repeat((4 - (std.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** Form-encodes Stripe parameters, nested objects as `a[b]`. */
function appendForm(form: URLSearchParams, key: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (typeof value === "object") {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) appendForm(form, `${key}[${k}]`, v);
    return;
  }
  form.append(key, String(value));
}

async function sha256Short(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  return Array.from(d.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * What the token says of an EIP-3009 authorization: the transaction whose `AuthorizationUsed` log
 * names it; `canceled` (`AuthorizationCanceled`); `expired` (unused, and the latest block's time is
 * {@link AUTHORIZATION_EXPIRY_MARGIN_S} past its `validBefore`, so no block, nor a reorg, can use it);
 * or not known yet, with where the next look for its logs starts (unused so far, or marked used with
 * no log found yet, or a provider refusing the range).
 */
type AuthorizationUse = { transaction: string } | "canceled" | "expired" | { logsFromBlock: number };

/**
 * Asks the token about an authorization ({@link AuthorizationUse}). Its logs are searched from
 * `logsFromBlock` (a first look: {@link AUTHORIZATION_LOG_LOOKBACK_BLOCKS} back from the latest block)
 * in ranges a provider serves, at most {@link AUTHORIZATION_LOG_RANGES_PER_LOOK} of them.
 * @throws when the node cannot answer the block or the state
 */
async function findAuthorizationUse(
  evm: NonNullable<StandardMethodsConfig["evm"]>,
  auth: EvmAuthorization,
  logsFromBlock?: number,
): Promise<AuthorizationUse> {
  const { createPublicClient, http, parseAbi } = await import("viem");
  if (!/^0x[0-9a-fA-F]{40}$/.test(auth.from) || !/^0x[0-9a-fA-F]{64}$/.test(auth.nonce)) return { logsFromBlock: 0 };
  if (!/^[0-9]{1,78}$/.test(auth.validBefore)) return { logsFromBlock: 0 };
  const client = createPublicClient({
    transport: http(evm.rpcUrl!, { timeout: RECHECK_TIMEOUT_MS, retryCount: 0 }),
  });
  const abi = parseAbi([
    "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
    "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
    "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
  ]);
  const from = auth.from as `0x${string}`;
  const nonce = auth.nonce as `0x${string}`;
  // Read at one block, so "unused" and the block's time agree.
  const latest = await client.getBlock({ blockTag: "latest" });
  const start = logsFromBlock !== undefined && Number.isSafeInteger(logsFromBlock) && logsFromBlock >= 0
    ? BigInt(logsFromBlock)
    : latest.number > AUTHORIZATION_LOG_LOOKBACK_BLOCKS
    ? latest.number - AUTHORIZATION_LOG_LOOKBACK_BLOCKS
    : 0n;
  const used = await client.readContract({
    address: evm.token,
    abi,
    functionName: "authorizationState",
    args: [from, nonce],
    blockNumber: latest.number,
  });
  if (!used) {
    if (latest.timestamp >= BigInt(auth.validBefore) + AUTHORIZATION_EXPIRY_MARGIN_S) return "expired";
    return { logsFromBlock: Number(start) };
  }
  let next = start;
  // The ranges of one look together take at most about two node calls' time: a slow node that still
  // answers holds neither a shutdown nor an agent's retry for ten of them. The next look goes on.
  const lookUntil = performance.now() + 2 * RECHECK_TIMEOUT_MS;
  for (let i = 0; i < AUTHORIZATION_LOG_RANGES_PER_LOOK && next <= latest.number; i++) {
    if (i > 0 && performance.now() > lookUntil) return { logsFromBlock: Number(next) };
    const toBlock = next + AUTHORIZATION_LOG_RANGE_BLOCKS - 1n < latest.number
      ? next + AUTHORIZATION_LOG_RANGE_BLOCKS - 1n
      : latest.number;
    const range = { address: evm.token, args: { authorizer: from, nonce }, fromBlock: next, toBlock };
    try {
      const [use] = await client.getLogs({ ...range, event: abi[1] });
      if (use?.transactionHash) return { transaction: use.transactionHash };
      if ((await client.getLogs({ ...range, event: abi[2] })).length > 0) return "canceled";
    } catch {
      // The provider refused or failed: the next look goes on from this range.
      return { logsFromBlock: Number(next) };
    }
    next = toBlock + 1n;
  }
  // Searched to the latest block without the log: looked for again from the start (a provider's log
  // index may lag its state); the sweep gives up on it in time.
  return { logsFromBlock: Number(next > latest.number ? start : next) };
}

/** The storefront's node cannot say whether a transaction is on chain (unreachable, erring, or behind). */
class ReceiptUnavailable extends Error {}

/**
 * Confirms on chain that a settlement transaction succeeded and moved `value` of the token from the
 * payer to the recipient: the facilitator's word alone never grants credit.
 * @throws {ReceiptUnavailable} when the node cannot tell (unreachable, behind, the transaction still
 *   pending there); any other error is a refusal
 */
async function confirmTransfer(
  evm: NonNullable<StandardMethodsConfig["evm"]>,
  tx: unknown,
  from: string,
  value: bigint,
  // How long the storefront's node may lag the facilitator's (`PAY_EVM_RECEIPT_WAIT_MS`): a receipt
  // not found at once is asked for again, since a settlement refused with a 402 is paid again by
  // mppx's client, with new money.
  wait: { waitMs: number; timeoutMs: number; retryCount?: number } = {
    waitMs: evm.receiptWaitMs,
    timeoutMs: FACILITATOR_TIMEOUT_MS,
  },
): Promise<void> {
  const { createPublicClient, http, parseEventLogs, isAddressEqual, TransactionReceiptNotFoundError } = await import(
    "viem"
  );
  if (typeof tx !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(tx)) throw new Error("no transaction hash");
  const hash = tx as `0x${string}`;
  const client = createPublicClient({
    transport: http(evm.rpcUrl!, { timeout: wait.timeoutMs, retryCount: wait.retryCount }),
  });
  // Elapsed time on the monotonic clock: a timeout, not a date.
  const deadline = performance.now() + wait.waitMs;
  let receipt;
  try {
    for (;;) {
      try {
        receipt = await client.getTransactionReceipt({ hash });
        break;
      } catch (err) {
        if (!(err instanceof TransactionReceiptNotFoundError)) throw new ReceiptUnavailable("node unavailable");
        if (performance.now() + RECEIPT_POLL_MS > deadline) {
          // Not mined as far as this node knows: pending there, or the node is catching up, may
          // still become a transfer; a node in sync that never heard of it says it is not one.
          const known = await client.getTransaction({ hash }).then(() => true, () => false);
          // `eth_syncing` is standard JSON-RPC that viem's public schema leaves out.
          const ask = client.request as (call: { method: string }) => Promise<unknown>;
          if (known || await ask({ method: "eth_syncing" }).then((s) => s !== false)) {
            throw new ReceiptUnavailable("transaction not mined on this node yet");
          }
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, RECEIPT_POLL_MS));
      }
    }
  } catch (err) {
    if (err instanceof TransactionReceiptNotFoundError) throw err;
    if (err instanceof ReceiptUnavailable) throw err;
    throw new ReceiptUnavailable("node unavailable", { cause: err });
  }
  const transferAbi = [{
    type: "event",
    name: "Transfer",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  }] as const;
  const logs = parseEventLogs({
    abi: transferAbi,
    logs: receipt.logs.filter((l) => isAddressEqual(l.address, evm.token)),
  });
  const ok = receipt.status === "success" &&
    logs.some((l) =>
      isAddressEqual(l.args.from, from as `0x${string}`) && isAddressEqual(l.args.to, evm.recipient) &&
      l.args.value === value
    );
  if (!ok) throw new Error("no matching Transfer");
}
