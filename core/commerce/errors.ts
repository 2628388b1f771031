/**
 * The commerce room's errors, each declared once (code, public message, kind; the storefront note
 * where it is always the same). Storefront bodies render `{error: code, reason?, detail?, ...extra}`;
 * the MCP tools show the message. Sites add only what they know: a varying note, `extra`, headers.
 */
import { declareErrors } from "../errors.ts";

const FRESH_402 = "request a fresh 402 challenge";
const IN_USE_NOTE = "retry shortly: the first request's result is then replayed";

export const commerceErrors = declareErrors({
  // The seller's setup.
  entitlements_not_available: { kind: "not_implemented", message: "This storefront sells no plans or top-ups" },
  signing_secret_required: { kind: "conflict", message: "Seller setup unfinished: no signing secret is set" },

  // What a purchase asks for.
  body_malformed: { kind: "bad_request", code: "invalid_request", message: "Body malformed" },
  body_not_object: {
    kind: "bad_request",
    code: "invalid_request",
    message: "Body must be a JSON object",
    detail: 'send {"amountUsd": "5.000000"}',
  },
  checkout_not_boolean: {
    kind: "bad_request",
    code: "invalid_request",
    message: "checkout must be a boolean",
    detail: "checkout must be true or false",
  },
  plan_id_not_string: { kind: "bad_request", code: "invalid_request", message: "planId must be a string" },
  plan_not_found: {
    kind: "not_found",
    message: "Unknown plan id",
    // Never the id asked for: the caller's text stays out of bodies.
    detail: "GET /services lists this seller's plans",
  },
  payg_not_purchasable: {
    kind: "bad_request",
    message: "Pay-as-you-go plans cannot be bought",
    detail: "call the service and pay each request through its 402 challenge",
  },
  payg_not_extendable: {
    kind: "bad_request",
    code: "payg_not_purchasable",
    message: "Pay-as-you-go plans cannot be topped up",
  },
  nothing_to_extend: {
    kind: "not_found",
    code: "access_not_found",
    message: "No plan to extend at this seller",
    detail: "check existing and pending purchases, or purchase a plan first",
  },
  // Amounts: the note repeats the message.
  amount_required: { kind: "bad_request", message: "amountUsd is required", detail: true },
  amount_not_string: {
    kind: "bad_request",
    code: "invalid_request",
    message: 'amountUsd must be a string such as "5.000000"',
    detail: true,
  },
  amount_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: 'amountUsd must be a decimal string such as "5.000000"',
    detail: true,
  },
  amount_not_cent_increment: {
    kind: "bad_request",
    message: "amountUsd must be a whole number of cents",
    detail: true,
  },
  amount_below_minimum: {
    kind: "bad_request",
    message: (p: { minimumUsd: string }) => `amountUsd must be at least ${p.minimumUsd}`,
    detail: true,
  },
  amount_above_maximum: {
    kind: "bad_request",
    message: (p: { maximumUsd: string }) => `amountUsd must be at most ${p.maximumUsd}`,
    detail: true,
  },
  amount_below_card_minimum: {
    kind: "bad_request",
    message: (p: { cardMinimumUsd: string }) =>
      `card payments must be at least ${p.cardMinimumUsd}; use the wallet rail for smaller amounts`,
    detail: true,
  },

  // Idempotency-Key.
  idempotency_key_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: "Idempotency-Key must be 1 to 255 visible ASCII characters",
  },
  idempotency_key_reused: {
    kind: "unprocessable",
    message: "Idempotency-Key was used for a different request",
    detail: "use a new Idempotency-Key for a different body",
  },
  idempotency_key_in_use: {
    kind: "conflict",
    message: "A request with this Idempotency-Key is still running",
    detail: IN_USE_NOTE,
  },

  // Payment credentials and references.
  credential_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: "Malformed Payment credential",
    detail: "Authorization must be `Payment <base64url credential>` answering one of our challenges",
  },
  x402_payload_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: "Malformed x402 payment",
    detail: "PAYMENT-SIGNATURE must be the base64 JSON of an x402 payment payload answering our 402",
  },
  token_required: {
    kind: "bad_request",
    code: "invalid_request",
    message: "The Payment credential payload needs a token",
  },
  payment_unknown: { kind: "not_found", message: "Payment reference matches no payment at this seller" },
  challenge_expired: {
    kind: "not_found",
    code: "payment_unknown",
    message: "Payment challenge expired",
    detail: FRESH_402,
  },
  checkout_unknown: { kind: "not_found", code: "payment_unknown", message: "Unknown checkout" },
  payment_method_unknown: { kind: "not_found", code: "payment_unknown", message: "Unknown payment method" },
  payment_request_mismatch: {
    kind: "conflict",
    message: "Payment was issued for a different request",
    detail: "this payment answers another plan, action or agent; request a fresh 402",
  },
  /** Raised with `Retry-After` and `extra.retry_after`. */
  checkout_opens_exhausted: {
    kind: "rate_limited",
    code: "rate_limit_exceeded",
    message: "Too many hosted checkouts opened from this address: retry later",
  },
  /** Raised with `Retry-After` and `extra.retry_after` (payment status, catalog documents). */
  public_reads_exhausted: {
    kind: "rate_limited",
    code: "rate_limit_exceeded",
    message: "Too many requests from this address: retry later",
  },
  /** Raised with `Retry-After` and `extra.retry_after` (the paid proxy, per agent credential). */
  paid_calls_exhausted: {
    kind: "rate_limited",
    code: "rate_limit_exceeded",
    message: "Too many paid calls for this agent credential: retry later",
  },
  checkout_exists: { kind: "conflict", code: "payment_request_mismatch", message: "This checkout already exists" },
  payment_amount_mismatch: { kind: "conflict", message: "amountUsd differs from the paid challenge" },

  // Settlement.
  payment_provider_unavailable: {
    kind: "unavailable",
    message: "Payment provider unavailable; retry unchanged",
  },
  payment_incomplete: { kind: "payment_required", message: "Payment unfinished" },
  settlement_failed: {
    kind: "payment_required",
    message: "Payment did not settle",
    detail: "retry from the start for a fresh challenge",
  },
  payment_consumed: { kind: "conflict", message: "Payment already settled; it cannot be spent again" },
  payment_failed: { kind: "conflict", message: "Payment failed; this reference is terminal" },
  payment_refunded: { kind: "conflict", message: "Payment was refunded; this reference is terminal" },
  payment_released: { kind: "conflict", message: "Payment was released; this reference is terminal" },

  // The paid proxy.
  service_not_found: {
    kind: "not_found",
    code: "access_not_found",
    message: "No such service at this seller",
    detail: "see GET /services for the services sold here",
  },
  request_id_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: "zc-request-id must be 8 to 128 characters of A-Z a-z 0-9 . _ : -",
  },
  request_id_reused: {
    kind: "conflict",
    code: "invalid_request",
    message: "zc-request-id was already used",
    detail: "send a fresh zc-request-id for each call",
  },
  usage_exhausted: { kind: "payment_required", message: "Plan credit ran out" },
  full_text_not_in_plan: {
    kind: "forbidden",
    code: "plan_required",
    reason: "not_included_in_plan",
    message: "Your plans do not include full text for this service",
  },
  service_not_in_plan: {
    kind: "forbidden",
    code: "plan_required",
    reason: "not_included_in_plan",
    message: "Your plans do not include this service",
  },
  plan_required: {
    kind: "forbidden",
    reason: "access_not_found",
    message: "A plan is required for this service",
  },
  call_payment_required: {
    kind: "payment_required",
    code: "payment_required",
    message: "This call is paid per request",
    detail: "answer a challenge with Authorization: Payment <credential> (agent token in ZC-Agent-Authorization)",
  },
  upstream_unavailable: { kind: "upstream_failed", message: "The seller's service did not answer" },
  // A purchase credential sent through MCP that bought nothing: the purchase answered its 402 again.
  purchase_not_made: {
    kind: "payment_required",
    code: "payment_required",
    message: "The purchase did not go through",
  },

  // The payment layer's allowance endpoint (the payproxy routes ask it before billable work).
  allowance_body_shape: {
    kind: "bad_request",
    code: "invalid_request",
    message: "Body must be {agentId, serviceSlug, usage}",
  },
  allowance_agent_mismatch: {
    kind: "bad_request",
    code: "invalid_request",
    message: "agentId differs from zc-agent-id",
  },
});

/** Notes the storefront bodies repeat in several places. */
export const NOTES = { FRESH_402, IN_USE_NOTE } as const;
