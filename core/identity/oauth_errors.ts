import { type AppError, declareErrors } from "../errors.ts";

/** The longest redirect URI (or client ID metadata document URL) a client may use. */
export const MAX_URI_CHARS = 2000;

/** What can be wrong with one redirect URI: the names of its errors below. */
export type RedirectUriProblem =
  | "redirect_uri_empty"
  | "redirect_uri_too_long"
  | "redirect_uri_not_absolute"
  | "redirect_uri_fragment"
  | "redirect_uri_credentials"
  | "redirect_uri_http_not_loopback"
  | "redirect_uri_scheme";

/**
 * The OAuth 2.1 errors of the authorization code flow and the token endpoint, declared once
 * (RFC 6749 section 5.2, RFC 7591 section 3.2.2, RFC 8707 section 2). Rendered as
 * `{error, error_description}` by the `/oauth2` family; the authorization endpoint sends the code
 * back to the client's redirect URI. Descriptions never quote what the client sent.
 */
export const oauthErrors = declareErrors({
  // The authorization request.
  state_too_long: {
    kind: "bad_request",
    code: "invalid_request",
    message: (p: { max: number }) => `state must be at most ${p.max} characters`,
  },
  unsupported_response_type: { kind: "bad_request", message: "response_type must be code" },
  challenge_method_not_s256: {
    kind: "bad_request",
    code: "invalid_request",
    message: "code_challenge_method must be S256",
  },
  challenge_malformed: {
    kind: "bad_request",
    code: "invalid_request",
    message: "code_challenge must be an S256 challenge (43 base64url characters)",
  },
  resource_not_served: {
    kind: "bad_request",
    code: "invalid_target",
    message: "resource must be the MCP endpoint or the storefront",
  },
  access_denied: { kind: "forbidden", message: "The human denied the request" },

  // The token endpoint.
  invalid_client: {
    kind: "unauthenticated",
    message: "Unknown client: register again at the registration endpoint",
  },
  code_required: { kind: "bad_request", code: "invalid_request", message: "code is required" },
  code_verifier_required: { kind: "bad_request", code: "invalid_request", message: "code_verifier is required" },
  redirect_uri_required: { kind: "bad_request", code: "invalid_request", message: "redirect_uri is required" },
  refresh_token_required: { kind: "bad_request", code: "invalid_request", message: "refresh_token is required" },
  code_unknown: { kind: "bad_request", code: "invalid_grant", message: "Unknown authorization code" },
  code_reused: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "This authorization code was already used; its tokens are revoked",
  },
  code_expired: { kind: "bad_request", code: "invalid_grant", message: "The authorization code has expired" },
  code_other_client: { kind: "bad_request", code: "invalid_grant", message: "The code was issued to another client" },
  redirect_uri_mismatch: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "redirect_uri does not match the request",
  },
  resource_mismatch_request: {
    kind: "bad_request",
    code: "invalid_target",
    message: "resource does not match the authorization request",
  },
  code_verifier_mismatch: { kind: "bad_request", code: "invalid_grant", message: "The code_verifier does not match" },
  code_identity_gone: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The agent identity of this code is gone",
  },
  code_used: { kind: "bad_request", code: "invalid_grant", message: "This authorization code was already used" },
  refresh_other_client: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The refresh token was not issued to this client",
  },
  resource_mismatch_grant: {
    kind: "bad_request",
    code: "invalid_target",
    message: "resource does not match the grant",
  },
  grant_identity_gone: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The agent identity of this grant is gone",
  },
  /** The refresh-token store's own refusal (unknown, expired, reused, revoked), in its words. */
  refresh_token_refused: {
    kind: "bad_request",
    code: "invalid_grant",
    message: (p: { refusal: AppError }) => p.refusal.message,
  },
  assertion_expired: { kind: "bad_request", code: "invalid_grant", message: "The assertion has expired" },
  assertion_unverified: { kind: "bad_request", code: "invalid_grant", message: "The assertion did not verify" },
  assertion_not_ours: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The assertion is not an identity assertion issued here",
  },
  assertion_no_subject: { kind: "bad_request", code: "invalid_grant", message: "The assertion names no credential" },
  assertion_credential_gone: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The credential of this assertion is revoked or expired",
  },
  assertion_family_revoked: {
    kind: "bad_request",
    code: "invalid_grant",
    message: "The refresh family of this assertion is revoked",
  },

  // Dynamic client registration.
  redirect_uris_empty: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "redirect_uris must list at least one URI",
  },
  redirect_uris_too_many: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: (p: { max: number }) => `redirect_uris may list at most ${p.max} URIs`,
  },
  // What redirectUriProblem() (oauth_clients.ts) finds wrong with one URI; never the URI itself.
  redirect_uri_empty: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "each redirect URI must be a non-empty string",
  },
  redirect_uri_too_long: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: `a redirect URI is longer than ${MAX_URI_CHARS} characters`,
  },
  redirect_uri_not_absolute: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "a redirect URI is not an absolute URL",
  },
  redirect_uri_fragment: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "a redirect URI must not have a fragment",
  },
  redirect_uri_credentials: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "a redirect URI must not carry credentials",
  },
  redirect_uri_http_not_loopback: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "an http redirect URI must point at a loopback host",
  },
  redirect_uri_scheme: {
    kind: "bad_request",
    code: "invalid_redirect_uri",
    message: "a redirect URI must use https, loopback http or app scheme",
  },
  client_name_invalid: {
    kind: "bad_request",
    code: "invalid_client_metadata",
    message: (p: { max: number }) => `client_name must be a string of at most ${p.max} characters`,
  },
  grant_types_invalid: {
    kind: "bad_request",
    code: "invalid_client_metadata",
    message: "grant_types may hold only authorization_code and refresh_token",
  },
  response_types_invalid: {
    kind: "bad_request",
    code: "invalid_client_metadata",
    message: "response_types may hold only code",
  },
  registration_media_type: {
    kind: "bad_request",
    code: "invalid_client_metadata",
    message: "Content-Type must be application/json",
  },
  registration_not_object: {
    kind: "bad_request",
    code: "invalid_client_metadata",
    message: "The body must be a JSON object",
  },
});
