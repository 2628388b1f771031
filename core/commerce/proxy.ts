/**
 * The paid proxy: agents call a seller's paid routes through the storefront. The storefront checks
 * the agent's coverage, reserves the price of the call against its entitlement (atomically, so
 * parallel calls never overspend), signs the request with the seller's secret, forwards it to the
 * upstream `/payproxy/...` route, and then bills the `zc-usage` the upstream reports. The upstream
 * status and body go back unchanged.
 */
import type { Challenge } from "mppx";
import type { Clock } from "../clock.ts";
import { AppError } from "../errors.ts";
import { commerceErrors as errors } from "./errors.ts";
import { describeError, type Logger } from "../log.ts";
import { FULL_TEXT_METER, planCovers, planMeters, planView } from "./catalog.ts";
import { matchTerms, type PaymentTerms, receiptHeader, type RefundNote } from "./challenges.ts";
import { CARD_MINIMUM_MICROS, formatUsd } from "./money.ts";
import type { OpenCall, PaymentRecord } from "./payments.ts";
import { STALE_RESERVATION_MS } from "./entitlements.ts";
import type { CommerceService } from "./service.ts";
import { settlementRefused } from "./settlement.ts";
import { unixSeconds } from "../clock.ts";
import { nestsAtMost } from "../json_depth.ts";
import { signRequest } from "../payproxy/mod.ts";
import { SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS } from "../search/mod.ts";
import { type AuthenticatedAgent, type PaygPlan, type Rail, realmOf, type Seller, type Service } from "./types.ts";

/**
 * The paid proxy's pay-per-call refusal (402 `payment_required`): the error REST renders (one
 * `WWW-Authenticate` field listing every challenge) with the same challenges as values, in the same
 * order, which MCP answers as JSON-RPC -32042.
 */
export class CallPaymentRequired extends AppError {
  constructor(refusal: AppError, readonly challenges: Challenge.Challenge[]) {
    super(refusal.kind, refusal.code, refusal.message, {
      reason: refusal.reason,
      detail: refusal.detail,
      extra: refusal.extra,
      headers: refusal.headers,
      cause: refusal.cause,
    });
  }
}

/** Sends a request to the upstream payproxy routes (HTTP, or in-process when it is this process). */
export type Upstream = (req: Request) => Promise<Response>;

/** One proxied call. */
export interface ProxyCall {
  seller: Seller;
  agent: AuthenticatedAgent;
  kind: Service["kind"];
  modelId: string;
  /** Upstream path plus query string, e.g. `/payproxy/v2/search?data_model_id=dm_...`. */
  pathAndQuery: string;
  body: Uint8Array;
  headers: Headers;
  /** The agent's HTTP request (x402 binds a payment to its URL); absent on the MCP path. */
  request?: Request;
  /** The public path of the call (for a synthetic request on the MCP path), e.g. `/v2/search?...`. */
  publicPath?: string;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{8,128}$/;
// Hop-by-hop headers (RFC 9110 7.6.1) describe one connection, not the answer: never relayed.
const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer"];

/** The upstream's headers as the agent should see them. */
function relayHeaders(res: Response, requestId: string): Headers {
  const headers = new Headers(res.headers);
  for (const h of HOP_BY_HOP) headers.delete(h);
  headers.set("zc-request-id", requestId);
  return headers;
}

/** One priced usage line of a `zc-usage` header. */
interface UsageLine {
  serviceSlug: string;
  meterSlug: string;
  quantity: number;
}

/**
 * Parses a `zc-usage` header value: a JSON array of `{serviceSlug, meterSlug, quantity}` with a
 * whole, non-negative quantity. Null when it is not that.
 */
export function parseUsageHeader(value: string | null): UsageLine[] | null {
  if (value === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return null;
  const out: UsageLine[] = [];
  for (const item of parsed) {
    if (typeof item !== "object" || item === null) return null;
    const { serviceSlug, meterSlug, quantity } = item as Record<string, unknown>;
    if (typeof serviceSlug !== "string" || typeof meterSlug !== "string") return null;
    if (typeof quantity !== "number" || !Number.isSafeInteger(quantity) || quantity < 0) return null;
    out.push({ serviceSlug, meterSlug, quantity });
  }
  return out;
}

// Abandoned pay-as-you-go calls refunded per paid call: bounded work on the request path.
const ABANDONED_CALLS_PER_CALL = 5;
/**
 * How long after its call opened a charge whose refund keeps failing is tried again (each a stale
 * mark's wait apart); past it, it is the operator's (`payment refund`), logged as an error.
 */
export const REFUND_RETRY_MAX_MS = 24 * 60 * 60_000;

export class PaidProxy {
  constructor(
    private readonly o: {
      commerce: CommerceService;
      clock: Clock;
      log: Logger;
      baseUrl: string;
      /** A seller's storefront base URL: plan URLs and the request a payment binds to are on it. */
      storefrontUrl: (seller: Seller) => string;
      upstream: Upstream;
    },
  ) {}

  /** Runs one paid call end to end; returns the upstream response (plus billing headers). */
  async call(c: ProxyCall): Promise<Response> {
    const { commerce } = this.o;
    const plans = await commerce.sellingPlans(c.seller);
    const services = await commerce.catalog.services(c.seller);
    const service = services.find((s) => s.modelId === c.modelId && s.kind === c.kind);
    if (!service) {
      throw errors.service_not_found();
    }
    const requestId = this.#requestId(c.headers);
    let covering = plans.filter((p) => planCovers(p, service.slug));
    // Full text is its own meter: only plans that name it pay for it, and the reservation holds the
    // most texts the call can return (it is settled at the texts actually served).
    const search = c.kind === "search" ? searchBodyOf(c.body) : null;
    const texts = fullTextsAsked(search);
    if (c.kind === "search" && texts === 0) c = { ...c, body: passagesCapped(c.body, search) };
    if (texts > 0) {
      covering = service.meters.full_text === undefined
        ? []
        : covering.filter((p) => planMeters(p).includes(FULL_TEXT_METER));
      const heldIds = new Set((await commerce.ledger.entries(c.agent, c.seller.sellerId)).map((e) => e.value.planId));
      if (!covering.some((p) => heldIds.has(p.id))) {
        throw errors.full_text_not_in_plan({
          detail: service.meters.full_text === undefined
            ? "the publisher licenses summaries only for this service"
            : "buy a plan whose meters include full_text",
          extra: {
            meters: [{ serviceSlug: service.slug, meterSlug: FULL_TEXT_METER }],
            plans: covering.map((p) => planView(p, this.o.storefrontUrl(c.seller))),
          },
        });
      }
    }
    const creditIds = new Set(covering.filter((p) => p.kind === "credit").map((p) => p.id));
    const price = service.meters.query + texts * (service.meters.full_text ?? 0);
    const views = () => covering.map((p) => planView(p, this.o.storefrontUrl(c.seller)));

    if (creditIds.size > 0) {
      const r = await commerce.ledger.reserve(c.agent, c.seller.sellerId, creditIds, price, requestId);
      if (r.ok) return await this.#forwardAndBill(c, service, requestId);
      if (r.why === "duplicate") {
        throw errors.request_id_reused();
      }
      if (r.why === "exhausted") {
        throw errors.usage_exhausted({
          detail: `a query of ${service.slug} costs ${
            formatUsd(price)
          } USD; top up with POST /extend or purchase again`,
          extra: { plans: views() },
        });
      }
    }
    const payg = covering.find((p): p is PaygPlan => p.kind === "payg");
    if (payg) return await this.#payPerCall(c, service, payg, requestId);

    const held = await commerce.ledger.entries(c.agent, c.seller.sellerId);
    const meters = [{ serviceSlug: service.slug, meterSlug: "query" }];
    if (held.length > 0) {
      throw errors.service_not_in_plan({ extra: { meters, plans: views() } });
    }
    throw errors.plan_required({ extra: { meters, plans: views() } });
  }

  #requestId(headers: Headers): string {
    const given = headers.get("zc-request-id");
    if (given === null) return crypto.randomUUID();
    if (!REQUEST_ID_RE.test(given)) {
      throw errors.request_id_malformed();
    }
    return given;
  }

  /** Pay as you go: answer the call's own challenge with a token, or get one. */
  async #payPerCall(c: ProxyCall, service: Service, plan: PaygPlan, requestId: string): Promise<Response> {
    const { commerce } = this.o;
    const challenges = await commerce.challenges();
    const terms: PaymentTerms = {
      action: "call",
      sellerId: c.seller.sellerId,
      planId: plan.id,
      amountUsd: formatUsd(plan.pricePerRequestMicros),
      currency: "usd",
      agent: c.agent.credentialId,
      service: service.slug,
    };
    if (await commerce.standardCredential(c.headers)) {
      return await this.#payPerCallStandard(c, service, plan, terms, requestId);
    }
    const presented = challenges.read(c.headers, realmOf(c.seller));
    if (!presented) {
      const standard = await commerce.settlement.standardOffer(
        this.#requestOf(c),
        c.seller,
        terms,
        plan.pricePerRequestMicros,
      );
      const rails: Rail[] = plan.pricePerRequestMicros >= CARD_MINIMUM_MICROS ? ["card", "wallet"] : ["wallet"];
      const issued = rails.map((rail) => challenges.offer(realmOf(c.seller), rail, terms));
      const refusal = errors.call_payment_required({
        extra: {
          payment: {
            planId: plan.id,
            serviceSlug: service.slug,
            amountUsd: terms.amountUsd,
            currency: "usd",
            rails: issued.map((i) => ({
              method: i.rail,
              intent: "charge",
              challengeId: i.challenge.id,
              expires: i.challenge.expires,
            })),
          },
        },
        headers: {
          "cache-control": "no-store",
          // Several challenges in one field, comma-separated (RFC 9110 list syntax).
          "www-authenticate": [
            ...issued.map((i) => i.header),
            ...(standard?.www ? [standard.www] : []),
          ].join(", "),
          ...(standard?.x402 ? { "payment-required": standard.x402 } : {}),
        },
      });
      throw new CallPaymentRequired(refusal, [...issued.map((i) => i.challenge), ...(standard?.challenges ?? [])]);
    }
    const { challenge, payload } = presented;
    const rail = challenge.method;
    if (rail !== "card" && rail !== "wallet") throw errors.payment_method_unknown();
    matchTerms(challenge, terms);
    const { settlement } = commerce;
    await this.refundAbandonedCalls();
    const charged = await settlement.chargeToken({
      rail,
      reference: challenge.id,
      seller: c.seller,
      terms,
      micros: plan.pricePerRequestMicros,
      token: settlement.tokenOf(payload),
    }, `${service.slug} query`);
    const processorRef = charged.processorRef;
    // Consumed with the mark of a call in flight: a process killed before the call ends leaves the
    // mark, and the charge is refunded once it is stale (refundAbandonedCalls).
    const open: OpenCall = {
      sellerId: c.seller.sellerId,
      reference: challenge.id,
      rail,
      processorRef,
      amountMicros: plan.pricePerRequestMicros,
      requestId,
      at: this.o.clock.now().toISOString(),
    };
    await settlement.consumeCall(charged.entry, processorRef, c.seller, commerce.payments.callOpened(open));
    const ended = () =>
      commerce.payments.callEnded(open).catch((err) =>
        this.o.log.warn("paid call mark not removed", { request_id: requestId, error: describeError(err) })
      );
    // From here the call is paid for: whatever fails before the upstream answers (the hold's write
    // too) is refunded below, never left charged for a call that was not made.
    const { ledger } = commerce;
    let res: Response | null = null;
    let failure: unknown = null;
    try {
      // The paid call is in flight: the allowance check the upstream makes sees it through this hold.
      await ledger.holdCall(c.seller.sellerId, c.agent.credentialId, requestId, plan.pricePerRequestMicros);
      try {
        res = await this.#forward(c, requestId);
      } finally {
        await this.#endCall(c, requestId);
      }
    } catch (err) {
      failure = err;
    }
    const charge = { rail: rail as Rail, reference: challenge.id, processorRef };
    if (res?.ok) {
      await ended();
      const headers = relayHeaders(res, requestId);
      headers.set("payment-receipt", await receiptHeader(rail, challenge.id, processorRef, this.o.clock.now()));
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    }
    // Errors are not charged, as on credit (whose reservation goes back): the charge is refunded
    // and the receipt says so. Refunded by whoever takes the call's mark: this call, or the sweep
    // (refundAbandonedCalls) when it outlived its hold, never both.
    const mine = await commerce.payments.takeCall(open).catch((err) => {
      // The mark stays: the sweep refunds it once it is stale.
      this.o.log.warn("paid call mark not taken", { request_id: requestId, error: describeError(err) });
      return undefined;
    });
    const refund: RefundNote = mine
      ? await this.#refundTaken(
        mine,
        () => this.#refund(c.seller.sellerId, charge, plan.pricePerRequestMicros, requestId),
      )
      : mine === undefined
      ? { status: "pending", reason: "upstream_error" }
      : await this.#refundedBySweep(c.seller.sellerId, challenge.id);
    const receipt = await receiptHeader(rail, challenge.id, processorRef, this.o.clock.now(), refund);
    if (!res) {
      const err = failure instanceof AppError ? failure : errors.upstream_unavailable({ cause: failure });
      throw err.withHeaders({ "payment-receipt": receipt });
    }
    const headers = relayHeaders(res, requestId);
    headers.set("payment-receipt", receipt);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }

  /**
   * Gives back a pay-as-you-go charge whose call failed upstream and marks its reference
   * `refunded`. A processor that cannot refund, or fails to, leaves it `pending`, logged with the
   * reference: its call's mark is left for a later sweep to try again ({@link #refundTaken}).
   */
  async #refund(
    sellerId: string,
    charged: { rail: Rail; reference: string; processorRef: string },
    amountMicros: number,
    requestId: string,
    reason = "upstream_error",
  ): Promise<RefundNote> {
    const { commerce } = this.o;
    try {
      const processor = commerce.processor;
      if (!processor.refund) throw new Error(`processor ${processor.name} cannot refund`);
      const { refundRef } = await processor.refund({ ...charged, amountMicros, reason });
      const entry = await commerce.payments.get(sellerId, charged.reference);
      const patch = { state: "refunded" as const, refundReason: reason, refundRef };
      if (!entry.value || !(await commerce.payments.move(entry as Deno.KvEntry<PaymentRecord>, patch))) {
        throw new Error("payment record changed during the refund");
      }
      return { status: "refunded", reason, refundRef };
    } catch (err) {
      this.o.log.error("pay-as-you-go refund not made", {
        request_id: requestId,
        seller: sellerId,
        reference: charged.reference,
        error: describeError(err),
      });
      return { status: "pending", reason };
    }
  }

  /** What became of a charge whose mark the sweep took first: refunded, or on its way. */
  async #refundedBySweep(sellerId: string, reference: string): Promise<RefundNote> {
    const p = (await this.o.commerce.payments.get(sellerId, reference).catch(() => null))?.value;
    const reason = p?.refundReason ?? "call_not_finished";
    return p?.state === "refunded"
      ? { status: "refunded", reason, refundRef: p.refundRef }
      : { status: "pending", reason };
  }

  /**
   * Refunds pay-as-you-go charges whose call never ended: consumed, then the process died before the
   * upstream answered or the refund was made. A mark older than {@link STALE_RESERVATION_MS} (the life
   * of a call's hold) is one; the commerce sweep (settle_sweep.ts) takes `limit` each run, and each
   * card or wallet paid call a few, so a quiet storefront refunds them too. A mark is taken
   * atomically ({@link PaymentStore.takeStaleCalls}), so each charge is refunded by one taker; one
   * still `consumed` is refunded (`call_not_finished`), one that moved on is left.
   * @returns how many were refunded
   */
  async refundAbandonedCalls(limit = ABANDONED_CALLS_PER_CALL): Promise<number> {
    const { payments } = this.o.commerce;
    const before = new Date(this.o.clock.now().getTime() - STALE_RESERVATION_MS).toISOString();
    let refunded = 0;
    for (const call of await payments.takeStaleCalls(before, limit)) {
      const note = await this.#refundTaken(call, async () => {
        const p = (await payments.get(call.sellerId, call.reference)).value;
        if (p?.state !== "consumed") return null;
        return await this.#refund(call.sellerId, call, call.amountMicros, call.requestId, "call_not_finished");
      });
      if (note?.status === "refunded") refunded++;
    }
    return refunded;
  }

  /**
   * Runs the refund of a call whose mark was taken, then ends the mark once it is done (refunded, or
   * nothing to refund: null). A refund that did not end (the process died) or failed (`pending`)
   * leaves the taken mark, stale again {@link STALE_RESERVATION_MS} on, for a later sweep to try
   * again (the processor refunds once per reference); one still failing {@link REFUND_RETRY_MAX_MS}
   * after its call opened is left to the operator, logged as an error.
   */
  async #refundTaken<T extends RefundNote | null>(taken: OpenCall, refund: () => Promise<T>): Promise<T> {
    const out = await refund();
    // A processor that cannot refund at all will not on a later try: the operator's at once.
    if (out?.status === "pending" && this.o.commerce.processor.refund) {
      const opened = Date.parse(taken.openedAt ?? taken.at);
      if (this.o.clock.now().getTime() - opened < REFUND_RETRY_MAX_MS) return out;
      this.o.log.error("pay-as-you-go refund given up: refund it by hand", {
        request_id: taken.requestId,
        seller: taken.sellerId,
        reference: taken.reference,
      });
    }
    await this.o.commerce.payments.callEnded(taken).catch((err) =>
      this.o.log.warn("paid call mark not removed", { request_id: taken.requestId, error: describeError(err) })
    );
    return out;
  }

  /** The request mppx binds a payment to: the agent's own (x402 echoes its URL), or a synthetic one. */
  #requestOf(c: ProxyCall): Request {
    return c.request ??
      new Request(`${this.o.storefrontUrl(c.seller)}${c.publicPath ?? "/"}`, { method: "POST", headers: c.headers });
  }

  /**
   * Pay as you go with a standard method: mppx verifies the credential, the reference is claimed,
   * the call is forwarded, and only an upstream success is settled; an upstream error goes back as
   * is, uncharged, and the credential stays unspent.
   */
  async #payPerCallStandard(
    c: ProxyCall,
    service: Service,
    plan: PaygPlan,
    terms: PaymentTerms,
    requestId: string,
  ): Promise<Response> {
    const { commerce } = this.o;
    const { ledger, settlement } = commerce;
    let upstream: Response | null = null;
    const refused = new Error("upstream answered an error");
    let out;
    try {
      out = await settlement.standardPayment(
        this.#requestOf(c),
        c.seller,
        terms,
        plan.pricePerRequestMicros,
        async () => {
          // The paid call is in flight: the allowance check the upstream makes sees it through this hold.
          await ledger.holdCall(c.seller.sellerId, c.agent.credentialId, requestId, plan.pricePerRequestMicros);
          try {
            // Read whole (#forward): the answer must be complete before the payment for it settles.
            upstream = await this.#forward(c, requestId).catch((err) => {
              if (err instanceof AppError) throw err;
              throw errors.upstream_unavailable({ cause: err });
            });
          } finally {
            await this.#endCall(c, requestId);
          }
          if (!upstream.ok) throw refused;
        },
      );
    } catch (err) {
      if (err === refused && upstream) {
        const res = upstream as Response;
        return new Response(res.body, {
          status: res.status,
          statusText: res.statusText,
          headers: relayHeaders(res, requestId),
        });
      }
      throw err;
    }
    if (out.status === 402) throw await settlementRefused(out.response);
    // Settled and answered: the reference is `paid`, which spends it for good. A consume that fails to
    // commit (a KV error) must not turn the answer the agent paid for into an error.
    // An owed answer given here ends its claim in the same commit (another copy may then find it spent).
    await settlement.consumeCall(out.entry, out.externalId, c.seller, undefined, out.answer).catch((err) => {
      if (err instanceof AppError) throw err;
      this.o.log.error("pay-per-call consume not recorded", {
        request_id: requestId,
        reference: out.entry.value.reference,
        error: describeError(err),
      });
    });
    const res = upstream as Response | null;
    if (!res) throw new Error("standard payment settled without forwarding the call");
    const headers = relayHeaders(res, requestId);
    for (const [k, v] of out.receiptHeaders) headers.set(k, v);
    this.o.log.debug("pay-per-call settled", { service: service.slug, method: out.entry.value.rail });
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }

  /**
   * Removes a paid call's hold. The hold lapses on its own (10 minutes), so a failed removal is
   * logged, never thrown: it must not turn an answer the agent paid for into an error.
   */
  async #endCall(c: ProxyCall, requestId: string): Promise<void> {
    await this.o.commerce.ledger.endCall(c.seller.sellerId, c.agent.credentialId, requestId).catch((err) =>
      this.o.log.warn("paid call hold not removed", { request_id: requestId, error: describeError(err) })
    );
  }

  async #forward(c: ProxyCall, requestId: string): Promise<Response> {
    const key = await this.o.commerce.secrets.current(c.seller.sellerId);
    if (!key) throw errors.signing_secret_required();
    const signed = await signRequest({
      secret: key.secret,
      kid: key.kid,
      t: unixSeconds(this.o.clock),
      method: "POST",
      url: c.pathAndQuery,
      body: c.body,
      requestId,
      agentId: c.agent.credentialId,
    });
    const headers = new Headers({
      ...signed.headers,
      "content-type": c.headers.get("content-type") ?? "application/json",
    });
    const res = await this.o.upstream(
      new Request(`${this.o.baseUrl}${c.pathAndQuery}`, { method: "POST", headers, body: c.body as BodyInit }),
    );
    // Read whole before anything is billed: an answer that breaks off after its usage was reported
    // fails here, as an upstream that did not answer, and is not charged.
    const body = res.body === null ? null : await res.arrayBuffer();
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }

  async #forwardAndBill(c: ProxyCall, service: Service, requestId: string): Promise<Response> {
    const { ledger } = this.o.commerce;
    let res: Response;
    try {
      res = await this.#forward(c, requestId);
    } catch (err) {
      await ledger.settle(c.seller.sellerId, requestId, 0);
      if (err instanceof AppError) throw err;
      throw errors.upstream_unavailable({ cause: err });
    }
    const headers = relayHeaders(res, requestId);
    if (!res.ok) {
      // Errors are not billed: the reservation goes back.
      await ledger.settle(c.seller.sellerId, requestId, 0);
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    }
    const usage = parseUsageHeader(res.headers.get("zc-usage"));
    let problem: string | null = null;
    let cost = 0;
    if (!usage) {
      problem = "invalid_usage_header";
    } else {
      for (const line of usage) {
        // Priced at the service called, never at another of the same slug (two data models may share
        // a tool name) nor at one the upstream names instead.
        const meters = line.serviceSlug === service.slug ? service.meters : undefined;
        const unit = line.meterSlug === "query"
          ? meters?.query
          : line.meterSlug === FULL_TEXT_METER
          ? meters?.full_text
          : undefined;
        if (unit === undefined) {
          problem = "usage_not_priced";
          break;
        }
        cost += unit * line.quantity;
      }
    }
    if (problem) {
      // Unbillable: the call is not charged, the problem is named, and nobody retries.
      await ledger.settle(c.seller.sellerId, requestId, 0);
      headers.set("zc-usage-error", problem);
      this.o.log.warn("usage not billed", {
        request_id: requestId,
        seller: c.seller.sellerId,
        service: service.slug,
        problem,
      });
    } else {
      try {
        await ledger.settle(c.seller.sellerId, requestId, cost);
      } catch (err) {
        this.o.log.error("usage billing failed", { request_id: requestId, error: describeError(err) });
      }
    }
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}

/** A paid search's body as a JSON object ({@link searchBodyOf}), read once per call. */
export type SearchBody = Record<string, unknown>;

/**
 * A search body that pays for no full text, with its highlight budget cut to the summary
 * licence's: highlights of a large budget are the article body itself, and the `full_text` meter
 * bills texts, not passages. Other bodies are returned as they are.
 * @param parsed `body` as {@link searchBodyOf} read it
 */
export function passagesCapped(body: Uint8Array, parsed: SearchBody | null): Uint8Array {
  const highlights = parsed?.highlights as { max_characters?: unknown } | undefined;
  if (!highlights || typeof highlights !== "object" || typeof highlights.max_characters !== "number") return body;
  if (highlights.max_characters <= SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS) return body;
  const capped = { ...parsed, highlights: { ...highlights, max_characters: SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS } };
  return new TextEncoder().encode(JSON.stringify(capped));
}

/**
 * A search body as a JSON object, or null when it is not one or nests deeper than request bodies may
 * (the upstream then refuses it). Any agent reaches this before paying: `JSON.parse` of 1 MB of `[`
 * held the event loop 250 ms, so a call parses its body once and hands the result on.
 */
export function searchBodyOf(body: Uint8Array): SearchBody | null {
  let parsed: unknown;
  try {
    const text = new TextDecoder().decode(body);
    parsed = nestsAtMost(text) ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed as SearchBody : null;
}

/**
 * How many full texts a search body may return (`contents: {text: true}`): its page size, at most
 * its `similarity_top_k`; 0 when it asks for none or is unreadable (the upstream then answers it).
 */
export function fullTextsAsked(body: SearchBody | null): number {
  const b = body as { contents?: { text?: unknown }; num_results?: unknown; similarity_top_k?: unknown } | null;
  if (!b || b.contents?.text !== true) return 0;
  const count = (v: unknown, fallback: number) =>
    Number.isSafeInteger(v) && (v as number) >= 1 ? Math.min(v as number, 1000) : fallback;
  return Math.min(count(b.num_results, 10), count(b.similarity_top_k, 9));
}
