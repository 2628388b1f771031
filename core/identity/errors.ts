import { AppError, declareErrors, type ErrorDeclaration, type ErrorKind } from "../errors.ts";

/**
 * A storefront error: `{error: code, reason?, detail}` where `detail` repeats the public message,
 * so an agent reading the body learns what to do next (spec 7.3). For the routes' one-off
 * refusals; the identity room raises the errors of {@link identityErrors}.
 */
export function sfError(
  kind: ErrorKind,
  code: string,
  message: string,
  options: { reason?: string; extra?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
): AppError {
  return new AppError(kind, code, message, { ...options, detail: message });
}

// Every storefront error repeats its message as `detail`.
const sf = <const D extends Omit<ErrorDeclaration, "detail">>(d: D) => ({ ...d, detail: true as const });

/**
 * The identity room's storefront errors (`{error, reason?, detail}`), declared once: agent
 * registration, claims, refresh tokens, access tokens and ID-JAG assertions. The OAuth errors of
 * the same room are in oauth_errors.ts. Messages never quote a token, an address or jose's text.
 */
export const identityErrors = declareErrors({
  // Registration.
  anonymous_registration_disabled: sf({ kind: "forbidden", message: "Anonymous registration is disabled here" }),
  service_auth_registration_disabled: sf({
    kind: "forbidden",
    message: "service_auth registration is disabled here",
  }),
  invalid_login_hint: sf({ kind: "bad_request", message: "login_hint must be an e-mail address" }),
  /** Raised with the claim to open as `extra.claim`. */
  interaction_required: sf({
    kind: "unauthenticated",
    message: "This e-mail already has an account: its human must claim this agent",
  }),

  // Claims.
  login_hint_plus_alias: sf({
    kind: "bad_request",
    code: "invalid_login_hint",
    message: "Plus-aliased addresses cannot claim: use the address without +tag",
  }),
  login_hint_other_address: sf({
    kind: "bad_request",
    code: "invalid_login_hint",
    message: "login_hint must be the address this claim was opened for",
  }),
  claim_mails_exhausted: sf({
    kind: "forbidden",
    code: "too_many_attempts",
    message: "Too many verification e-mails for this claim: register again",
  }),
  /** Raised with `Retry-After` and `extra.retry_after`. */
  claim_mails_to_address: sf({
    kind: "rate_limited",
    code: "rate_limit_exceeded",
    message: "Too many verification e-mails to this address: retry later",
  }),
  /** Raised with `Retry-After` and `extra.retry_after`. */
  claim_mails_from_storefront: sf({
    kind: "rate_limited",
    code: "rate_limit_exceeded",
    message: "Too many verification e-mails from this storefront: retry later",
  }),
  mail_unavailable: sf({ kind: "unavailable", message: "The verification e-mail could not be sent; retry" }),
  claim_not_requested: sf({
    kind: "conflict",
    code: "claim_not_confirmed",
    message: "No verification e-mail was requested: call POST /agent/identity/claim",
  }),
  claim_denied: sf({ kind: "forbidden", message: "The human denied this claim" }),
  claim_link_expired: sf({
    kind: "gone",
    code: "claim_expired",
    message: "The claim link expired: request a new one",
  }),
  claim_not_confirmed: sf({ kind: "conflict", message: "The human has not confirmed on the claim page yet" }),
  user_code_attempts_exhausted: sf({
    kind: "forbidden",
    code: "too_many_attempts",
    message: "Too many wrong codes: request a new claim e-mail",
  }),
  user_code_expired: sf({ kind: "gone", message: "The user code expired: request a new claim e-mail" }),
  invalid_user_code: sf({ kind: "bad_request", message: "The user code is wrong" }),
  invalid_claim_token: sf({ kind: "unauthenticated", message: "Unknown claim token" }),
  claim_other_storefront: sf({
    kind: "unauthenticated",
    code: "invalid_claim_token",
    message: "This claim token belongs to another storefront: request the e-mail where the claim was opened",
  }),
  claim_credential_gone: sf({
    kind: "unauthenticated",
    code: "invalid_claim_token",
    message: "The credential of this claim is gone",
  }),
  already_claimed: sf({ kind: "conflict", message: "This claim was already completed" }),
  credential_already_claimed: sf({
    kind: "conflict",
    code: "already_claimed",
    message: "This credential is already claimed",
  }),
  claim_expired: sf({ kind: "gone", message: "The claim expired: register again" }),

  // Refresh tokens.
  invalid_refresh_token: sf({ kind: "unauthenticated", message: "Unknown refresh token" }),
  refresh_token_revoked: sf({
    kind: "unauthenticated",
    code: "invalid_refresh_token",
    message: "This refresh token was revoked",
  }),
  refresh_token_reused: sf({
    kind: "unauthenticated",
    code: "invalid_refresh_token",
    message: "This refresh token was already used; its family is revoked",
  }),
  refresh_token_expired: sf({
    kind: "unauthenticated",
    code: "invalid_refresh_token",
    message: "The refresh token has expired",
  }),
  refresh_credential_gone: sf({
    kind: "unauthenticated",
    code: "invalid_refresh_token",
    message: "The credential of this refresh token is gone",
  }),

  // Access tokens.
  access_token_expired: sf({
    kind: "unauthenticated",
    code: "invalid_token",
    reason: "token_expired",
    message: "The access token has expired: exchange the assertion again",
  }),
  access_token_invalid: sf({
    kind: "unauthenticated",
    code: "invalid_token",
    reason: "token_invalid",
    message: "The access token did not verify: exchange the assertion again",
  }),
  not_an_access_token: sf({
    kind: "unauthenticated",
    code: "invalid_token",
    reason: "unrecognized_agent_credential",
    message: "The credential is not an access token issued here",
  }),

  // ID-JAG assertions (spec 5.3.3).
  jag_not_jwt: sf({ kind: "bad_request", code: "invalid_request", message: "The assertion is not a JWT" }),
  jag_wrong_typ: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: (p: { typ: string }) => `The assertion must have typ ${p.typ}`,
  }),
  jag_symmetric_alg: sf({
    kind: "unauthenticated",
    code: "invalid_signature",
    message: "The assertion must be signed with an asymmetric algorithm",
  }),
  issuer_not_enabled: sf({ kind: "forbidden", message: "The assertion's issuer is not trusted here" }),
  invalid_audience: sf({
    kind: "unauthenticated",
    message: "The assertion's aud must be this authorization server alone",
  }),
  jag_exp_too_far: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: "The assertion's exp must be at most 10 minutes ahead",
  }),
  login_required: sf({
    kind: "unauthenticated",
    message: "The user must sign in again: auth_time is missing or older than 30 days",
  }),
  jag_auth_time_future: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: "The assertion's auth_time is in the future",
  }),
  missing_verified_email: sf({
    kind: "forbidden",
    message: "The assertion must carry an email with email_verified true",
  }),
  jag_jti_invalid: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: "The assertion's jti must be a string of 1 to 256 characters",
  }),
  replay_detected: sf({ kind: "unauthenticated", message: "This assertion was already used" }),
  jag_expired: sf({ kind: "unauthenticated", code: "expired", message: "The assertion has expired" }),
  invalid_signature: sf({ kind: "unauthenticated", message: "The assertion's signature did not verify" }),
  /** `claim` is our phrase for a claim jose names ("the exp claim", or "a claim"), never jose's text. */
  jag_claim_invalid: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: (p: { claim: string; problem: "is missing" | "failed its check" }) =>
      `The assertion is invalid: ${p.claim} ${p.problem}`,
  }),
  jag_malformed: sf({
    kind: "bad_request",
    code: "invalid_request",
    message: "The assertion is invalid: not a well-formed JWT",
  }),
  identity_provider_unavailable: sf({
    kind: "unavailable",
    message: "The identity provider's keys could not be fetched; retry",
  }),
});
