import type { Seller } from "../identity/mod.ts";

/**
 * Shapes shared by the commerce modules (plans, payments, entitlements, paid proxy), and the seams
 * to the identity room (core/identity/): the agent ({@link AuthenticatedAgent}) and the seller registry.
 */

/** A seller: one storefront, declared once in the identity room (its registry owns the records). */
export type { Seller };

/** A seller's prices (`["commerce_pricing", sellerId]`); absent means the defaults. */
export interface SellerPricing {
  /** Price of one `query` for services without their own price (micro-USD). */
  defaultQueryPriceMicros: number;
  /** Per-service `query` price overrides (micro-USD), by service slug. */
  servicePrices?: Record<string, number>;
  /** Price of one `full_text` (an article's licensed full text) where licensed (micro-USD). */
  fullTextPriceMicros?: number;
}

/** Where sellers are found (the identity room's `SellerRegistry` answers the same questions). */
export interface SellerDirectory {
  get(sellerId: string): Promise<Seller | null>;
  /** The seller for a Host header, else the default seller, else null. */
  resolve(host: string | undefined, defaultSellerId: string | null): Promise<Seller | null>;
}

/** The `Payment` challenge realm of a seller: its first host, else its id. */
export const realmOf = (s: Seller): string => s.hosts[0] ?? s.sellerId;

/** A credit plan: prepaid credit in USD, spent per query at the services' prices. */
export interface CreditPlan {
  id: string;
  sellerId: string;
  kind: "credit";
  name: string;
  /** Service slugs covered, or `["*"]` for every service of the seller. */
  services: string[];
  /** Meters the credit pays for: absent means `query` only; `full_text` must be named. */
  meters?: string[];
  minimumMicros: number;
  maximumMicros: number;
  createdAt: string;
}

/** Pay as you go: each call is paid on its own through a `Payment` challenge; not purchasable. */
export interface PaygPlan {
  id: string;
  sellerId: string;
  kind: "payg";
  name: string;
  services: string[];
  /** Price per request (micro-USD). */
  pricePerRequestMicros: number;
  createdAt: string;
}

export type Plan = CreditPlan | PaygPlan;

/** A paid service derived from a marketplace-enabled model of the seller's tenant. */
export interface Service {
  slug: string;
  kind: "search" | "aimodel";
  /** `dm_...` or `am_...`. */
  modelId: string;
  name: string;
  /** Meter prices (micro-USD per unit): `query`, and `full_text` where the data model licenses it. */
  meters: { query: number; full_text?: number };
}

/**
 * The agent behind a request, from the identity room's access token (`humanId` is its account when
 * the token says claimed) and, for unclaimed credentials, the credential's expiry.
 */
export interface AuthenticatedAgent {
  credentialId: string;
  claimed: boolean;
  humanId?: string;
  /** When an unclaimed (anonymous) credential dies; its plans die with it. ISO 8601. */
  expiresAt?: string;
}

/** The storefront's own payment rails offered in a 402 (the sandbox processor's). */
export type Rail = "card" | "wallet";

/** Every payment method a payment record can come from: the own rails, and mppx's `evm` and `stripe`. */
export type PaymentMethodName = Rail | "evm" | "stripe";
