/** The identity room's face: what other rooms and the routes may use. */

export type { ClaimPageState } from "./claims.ts";
export { timeLeftText } from "./claims.ts";
export { sfError } from "./errors.ts";
export { ID_JAG_TOKEN_TYPE } from "./id_jag.ts";
export { claimBlock, identityBody } from "./identity_body.ts";
export { SIGNING_ALG } from "./keys.ts";
export { OutboxMailer } from "./mailer.ts";
export type { Mailer } from "./mailer.ts";
export { redirectsUnasked, registrationBody } from "./oauth_clients.ts";
export type { OAuthTokens } from "./oauth.ts";
export { oauthErrors } from "./oauth_errors.ts";
export { normalizeHost, sellerBaseUrl } from "./sellers.ts";
export type { SellerRegistry } from "./sellers.ts";
export { createMailer, createStorefront, mcpResource } from "./service.ts";
export type { Storefront } from "./service.ts";
export type { AgentPrincipal, TokenService } from "./tokens.ts";
export type { AuthorizationRequest, Seller } from "./types.ts";
