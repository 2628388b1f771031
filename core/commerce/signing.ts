/**
 * The storefront's view of the sellers' payproxy signing secrets. The payproxy room owns the store
 * (`core/payproxy/secrets.ts`, `deps.payproxy.secrets`), the signer and the verifier; the paid proxy
 * signs with the seller's current secret and `/internal/allowance` verifies with the payproxy
 * verifier.
 */

/** A seller's current signing key. */
export interface SigningKey {
  kid: string;
  secret: string;
}

/** The questions the storefront asks of the secret store. */
export interface SigningSecrets {
  /** The key new signatures for this seller use, or null while the seller has none. */
  current(sellerId: string): Promise<SigningKey | null>;
}
