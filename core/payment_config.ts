/**
 * The environment variables and settings of mppx's standard payment methods (used by
 * core/commerce/standard_methods.ts), kept apart so core/config.ts only spreads them in. The `evm`
 * method is offered when its chain, token, recipient and facilitator are all set; `stripe` when its
 * secret key is.
 */
import { z } from "zod";
import { trustedUrl } from "./trusted_url.ts";

/** How often the commerce sweep runs (`PAY_SETTLE_SWEEP_INTERVAL_S`'s default), in seconds. */
export const DEFAULT_SETTLE_SWEEP_INTERVAL_S = 60;

const address = (name: string) =>
  z.string().regex(/^0x[0-9a-fA-F]{40}$/, { error: `${name} must be a 0x-prefixed 20-byte hex address` })
    .transform((v) => v as `0x${string}`);

const whole = (name: string, min: number, max: number) =>
  z.string().regex(/^\d+$/, { error: `${name} must be a whole number from ${min} to ${max}` }).transform(Number)
    .refine((n) => n >= min && n <= max, { error: `${name} must be a whole number from ${min} to ${max}` });

/** Settings of the standard methods (core/config.ts `payments`). */
export interface StandardMethodsConfig {
  /** The `evm` charge: a USD stablecoin with EIP-3009 on one chain; null when not offered. */
  evm: {
    chainId: number;
    /** Token contract address. */
    token: `0x${string}`;
    /** EIP-712 domain of the token's authorizations. */
    tokenName: string;
    tokenVersion: string;
    decimals: number;
    /** The seller's receiving address. */
    recipient: `0x${string}`;
    /** The x402 facilitator (`/verify`, `/settle`) that submits the authorization on chain. */
    facilitatorUrl: string;
    /** JSON-RPC of the chain: each settlement's Transfer is confirmed there before credit is granted. */
    rpcUrl: string | null;
    /** How long a receipt that node does not know yet is asked for again before the settlement is left unconfirmed. */
    receiptWaitMs: number;
  } | null;
  /** The `stripe` charge with shared payment tokens; null when not offered. */
  stripe: {
    secretKey: string;
    /** Stripe's API base (a local stand-in in tests). */
    apiUrl: string;
    networkId: string;
  } | null;
  /**
   * How often the commerce sweep (core/commerce/settle_sweep.ts) runs: stale reservations, abandoned
   * pay-per-call charges, settlements left `processing` or `paid` past their grace period.
   */
  settleSweepIntervalMs: number;
}

/** Spread into core/config.ts's environment schema. */
export const paymentEnv = {
  PAY_EVM_CHAIN_ID: whole("PAY_EVM_CHAIN_ID", 1, 2 ** 48).optional(),
  PAY_EVM_TOKEN: address("PAY_EVM_TOKEN").optional(),
  PAY_EVM_TOKEN_NAME: z.string().min(1).max(64).default("USD Coin"),
  PAY_EVM_TOKEN_VERSION: z.string().min(1).max(16).default("2"),
  PAY_EVM_DECIMALS: whole("PAY_EVM_DECIMALS", 0, 36).default(6),
  PAY_EVM_RECIPIENT: address("PAY_EVM_RECIPIENT").optional(),
  PAY_EVM_RPC_URL: trustedUrl("PAY_EVM_RPC_URL").optional(),
  PAY_EVM_RECEIPT_WAIT_MS: whole("PAY_EVM_RECEIPT_WAIT_MS", 0, 120_000).default(10_000),
  PAY_SETTLE_SWEEP_INTERVAL_S: whole("PAY_SETTLE_SWEEP_INTERVAL_S", 1, 86_400).default(DEFAULT_SETTLE_SWEEP_INTERVAL_S),
  PAY_X402_FACILITATOR_URL: trustedUrl("PAY_X402_FACILITATOR_URL").optional(),
  PAY_STRIPE_SECRET_KEY: z.string().min(1).optional(),
  PAY_STRIPE_API_URL: trustedUrl("PAY_STRIPE_API_URL").default("https://api.stripe.com"),
  PAY_STRIPE_NETWORK_ID: z.string().min(1).max(64).default("internal"),
};

type PaymentEnv = z.output<z.ZodObject<typeof paymentEnv>>;

/** The standard methods' settings from the parsed environment. */
export function paymentsConfig(e: PaymentEnv): StandardMethodsConfig {
  const evmReady = e.PAY_EVM_CHAIN_ID !== undefined && e.PAY_EVM_TOKEN !== undefined &&
    e.PAY_EVM_RECIPIENT !== undefined && e.PAY_X402_FACILITATOR_URL !== undefined;
  return {
    evm: evmReady
      ? {
        chainId: e.PAY_EVM_CHAIN_ID!,
        token: e.PAY_EVM_TOKEN!,
        tokenName: e.PAY_EVM_TOKEN_NAME,
        tokenVersion: e.PAY_EVM_TOKEN_VERSION,
        decimals: e.PAY_EVM_DECIMALS,
        recipient: e.PAY_EVM_RECIPIENT!,
        facilitatorUrl: e.PAY_X402_FACILITATOR_URL!,
        rpcUrl: e.PAY_EVM_RPC_URL ?? null,
        receiptWaitMs: e.PAY_EVM_RECEIPT_WAIT_MS,
      }
      : null,
    stripe: e.PAY_STRIPE_SECRET_KEY
      ? { secretKey: e.PAY_STRIPE_SECRET_KEY, apiUrl: e.PAY_STRIPE_API_URL, networkId: e.PAY_STRIPE_NETWORK_ID }
      : null,
    settleSweepIntervalMs: e.PAY_SETTLE_SWEEP_INTERVAL_S * 1000,
  };
}
