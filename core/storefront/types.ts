/**
 * Storefront records kept in Deno KV. Keys (all arrays):
 * - `["seller", sellerId]` -> {@link Seller}; `["seller_by_host", host]` -> sellerId
 * - `["account", accountId]` -> {@link Account}; `["account_by_email", email]` -> accountId;
 *   `["account_credential", accountId, credentialId]` -> credentialId
 * - `["credential", credentialId]` -> {@link Credential}
 * - `["claim", sha256(claimToken)]` -> {@link Claim}; `["claim_link", sha256(linkToken)]` -> claim key hash
 * - `["refresh_token", sha256(token)]` -> {@link RefreshTokenRecord}; `["refresh_family", familyId]` -> {@link RefreshFamily}
 * - `["id_jag_jti", issuer, jti]` -> expiry (ms), kept until the ID-JAG's `exp`
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
}

/** A rotation family: every refresh token descending from one issuance. */
export interface RefreshFamily {
  familyId: string;
  credentialId: string;
  createdAt: string;
  revokedAt?: string;
}
