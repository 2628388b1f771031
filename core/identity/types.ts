/**
 * Storefront records kept in Deno KV. Keys (all arrays):
 * - `["seller", sellerId]` -> {@link Seller}; `["seller_by_host", host]` -> sellerId
 * - `["account", accountId]` -> {@link Account}; `["account_by_email", email]` -> accountId;
 *   `["account_credential", accountId, credentialId]` -> credentialId
 * - `["credential", credentialId]` -> {@link Credential}
 * - `["claim", sha256(claimToken)]` -> {@link Claim}; `["claim_link", sha256(linkToken)]` -> claim key hash
 * - `["refresh_token", sha256(token)]` -> {@link RefreshTokenRecord}; `["refresh_family", familyId]` -> {@link RefreshFamily}
 * - `["id_jag_jti", issuer, jti]` -> expiry (ms), kept until the ID-JAG's `exp`
 * - `["oauth_client", clientId]` -> {@link OAuthClient}; `["oauth_request", sha256(id)]` -> {@link AuthorizationRequest};
 *   `["oauth_code", sha256(code)]` -> {@link AuthorizationCodeRecord}
 */

/** A seller: one storefront, owned by a tenant, answering on its hosts. Its plans and payments live in core/commerce/. */
export interface Seller {
  sellerId: string;
  tenantId: string;
  name: string;
  /** Host header values (`host[:port]`, lowercase) this seller answers on. */
  hosts: string[];
  createdAt: string;
  [extra: string]: unknown;
}

/** A human, known by a verified e-mail address. */
export interface Account {
  accountId: string;
  /** Lowercased address. */
  email: string;
  createdAt: string;
  /**
   * Set when a claim (or a born-claimed identity) first verified this human: the free included
   * units of plans unlock from then on (core/commerce/ reads this).
   */
  includedUnitsUnlockedAt?: string;
}

/** How a credential was registered. */
export type CredentialType = "anonymous" | "service_auth" | "identity_assertion";

/** An agent credential. Network-wide: not bound to the seller it registered at. */
export interface Credential {
  credentialId: string;
  type: CredentialType;
  /** `unclaimed` (anonymous only) or `claimed` (bound to an account). */
  state: "unclaimed" | "claimed";
  accountId?: string;
  /** Seller whose host it registered on (informational). */
  sellerId: string;
  createdAt: string;
  claimedAt?: string;
  /** Unclaimed anonymous credentials expire (ISO time); claimed ones do not. */
  expiresAt?: string;
  revokedAt?: string;
}

/** One e-mailed verification attempt of a claim. */
export interface ClaimAttempt {
  /** sha256 of the secret in the verification link. */
  linkHash: string;
  email: string;
  sentAt: string;
  /** The link dies at this time unless the human confirmed before. */
  expiresAt: string;
  status: "sent" | "confirmed" | "denied";
  /** sha256 of the one-time code sent only in the e-mail: the proof of mailbox control. */
  mailCodeHash: string;
  /** Wrong mail codes entered on the page for this attempt. */
  wrongMailCodes: number;
  /** When the mail code was entered correctly (it is single-use). */
  mailProvenAt?: string;
  /** sha256 of the page-session proof handed to the browser that entered the mail code. */
  proofHash?: string;
  decidedAt?: string;
  /** sha256 of the normalized user code, set when the human confirmed. */
  userCodeHash?: string;
  userCodeExpiresAt?: string;
  wrongCodes: number;
}

/** A claim: the way an unclaimed credential (or a pending service_auth registration) gets a human. */
export interface Claim {
  claimId: string;
  /** What the claim was opened by. `interaction` comes from an identity_assertion for a known e-mail. */
  origin: "service_auth" | "anonymous" | "interaction";
  /** The address the claim is bound to (service_auth and interaction); anonymous claims take any. */
  email?: string;
  /** The anonymous credential being claimed. */
  credentialId?: string;
  sellerId: string;
  createdAt: string;
  expiresAt: string;
  attempt?: ClaimAttempt;
  /** Verification e-mails sent for this claim (bounded: each one allows a few code guesses). */
  emailsSent?: number;
  completedAt?: string;
  /** The credential the completed claim produced or upgraded. */
  completedCredentialId?: string;
}

/** A refresh token (stored by hash). */
export interface RefreshTokenRecord {
  familyId: string;
  credentialId: string;
  status: "active" | "rotated";
  createdAt: string;
  expiresAt: string;
  /** When it was rotated (set with `rotated`). */
  rotatedAt?: string;
  /** Its successor, sealed under a key only this token gives (a rotation with a reuse grace). */
  successorSealed?: string;
}

/** A rotation family: every refresh token descending from one issuance. */
export interface RefreshFamily {
  familyId: string;
  credentialId: string;
  createdAt: string;
  revokedAt?: string;
  /** Set when an OAuth client got the family (authorization code grant): only it may refresh, for that resource. */
  oauth?: OAuthBinding;
}

/** Who an OAuth grant was made to, and for which resource (RFC 8707). */
export interface OAuthBinding {
  clientId: string;
  resource: string;
}

/** A client registered by RFC 7591 dynamic registration. Public: no secret, PKCE proves possession. */
export interface OAuthClient {
  clientId: string;
  clientName?: string;
  /** Exact redirect URIs; an authorization request must name one of them. */
  redirectUris: string[];
  createdAt: string;
  /** The last grant that renewed the registration (a registration lives `CLIENT_TTL_S` from it). */
  renewedAt?: string;
}

/** A validated authorization request, kept while the human is on the consent page. */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  /** S256 code challenge. */
  codeChallenge: string;
  state?: string;
  /** The resource the tokens will be bound to. */
  resource: string;
  /** The claimed-identity path: the claim opened for the address the human typed. */
  claim?: { token: string; link: string; email: string };
  expiresAt: string;
}

/** An authorization code (stored by SHA-256): single-use, short-lived. */
export interface AuthorizationCodeRecord {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  credentialId: string;
  expiresAt: string;
  /** Set when the code was exchanged; a second exchange revokes the family it produced. */
  usedFamilyId?: string;
}
