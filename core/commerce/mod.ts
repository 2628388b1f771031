/**
 * The commerce room's public face: catalog, payments, entitlements and the paid proxy wiring.
 * Seams to other rooms: {@link SigningSecrets} and the payproxy signer (payproxy room),
 * {@link SellerDirectory} (the identity room's seller registry). Agents are authenticated by the
 * identity room's middleware at the HTTP edge (routes/storefront/commerce_agent.ts).
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { DEFAULT_SETTLE_SWEEP_INTERVAL_S } from "../payment_config.ts";
import type { Repos } from "../store/mod.ts";
import { Catalog } from "./catalog.ts";
import { PaidProxy, type Upstream } from "./proxy.ts";
import type { CredentialsOfHuman } from "./entitlements.ts";
import { type PaymentProcessor, SandboxProcessor } from "./processor.ts";
import { CommerceService } from "./service.ts";
import { loadChallengeKey } from "./challenges.ts";
import { StandardMethods } from "./standard_methods.ts";
import { SettlementSweep } from "./settle_sweep.ts";
import type { SigningSecrets } from "./signing.ts";
import type { Seller, SellerDirectory } from "./types.ts";
import { sellerBaseUrl } from "../identity/mod.ts";

export {
  challengeList,
  challengeView,
  type PaidPurchase,
  type PaymentUrls,
  type PurchaseChallenge,
  type PurchaseOutcome,
} from "./purchase.ts";

/** Everything the commerce routes use. */
export interface Commerce {
  service: CommerceService;
  catalog: Catalog;
  processor: PaymentProcessor;
  secrets: SigningSecrets;
  sellers: SellerDirectory;
  /** Paid calls to a seller's payproxy routes, billed against the agent's entitlement. */
  proxy: PaidProxy;
  /**
   * Gives back stale reservations, refunds abandoned pay-per-call charges and resolves standard
   * settlements left `processing` or `paid` (started with the background work); always built, as
   * the card and wallet rails always run.
   */
  settleSweep: SettlementSweep;
}

/** Builds the commerce services. Pure wiring: no I/O. */
export function createCommerce(
  o: {
    config: Pick<Config, "agentAuthUrl" | "baseUrl"> & Partial<Pick<Config, "payments">> & {
      storefront: Pick<Config["storefront"], "defaultSellerId">;
    };
    kv: Deno.Kv;
    clock: Clock;
    log: Logger;
    repos: Repos;
    processor?: PaymentProcessor;
    /** The payproxy room's secret store. */
    secrets: SigningSecrets;
    /** The identity room's seller registry. */
    sellers: SellerDirectory;
    /** The identity room's record of which credentials each human claimed. */
    credentialsOfHuman?: CredentialsOfHuman;
    /** Where paid calls go: the seller's payproxy routes (over HTTP, or in this process). */
    upstream: Upstream;
  },
): Commerce {
  const sellers = o.sellers;
  const secrets = o.secrets;
  const processor = o.processor ?? new SandboxProcessor();
  const catalog = new Catalog(o.kv, o.repos, o.clock, sellers);
  // mppx's methods share the storefront's challenge key: one HMAC key for every challenge issued here.
  const { agentAuthUrl, storefront: { defaultSellerId } } = o.config;
  const storefrontUrl = (seller: Seller) => sellerBaseUrl(seller, { agentAuthUrl, defaultSellerId });
  const standard = o.config.payments ? new StandardMethods(o.config.payments, () => loadChallengeKey(o.kv)) : undefined;
  const service = new CommerceService({
    kv: o.kv,
    clock: o.clock,
    log: o.log,
    catalog,
    processor,
    secrets,
    storefrontUrl,
    credentialsOfHuman: o.credentialsOfHuman,
    standard,
  });
  const proxy = new PaidProxy({
    commerce: service,
    clock: o.clock,
    log: o.log,
    baseUrl: o.config.baseUrl,
    storefrontUrl,
    upstream: o.upstream,
  });
  const settleSweep = new SettlementSweep({
    kv: o.kv,
    clock: o.clock,
    log: o.log,
    payments: service.payments,
    settlement: service.settlement,
    standard: standard ?? null,
    ledger: service.ledger,
    calls: proxy,
    agents: service.agents,
    sellers: catalog,
    intervalMs: o.config.payments?.settleSweepIntervalMs ?? DEFAULT_SETTLE_SWEEP_INTERVAL_S * 1000,
  });
  return { service, catalog, processor, secrets, sellers, proxy, settleSweep };
}

export { CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR, CommerceService } from "./service.ts";
export type { AuthenticatedAgent, PaygPlan, Plan, Seller, Service } from "./types.ts";
export { commerceErrors } from "./errors.ts";
export { Settlement, standardOfferHeaders } from "./settlement.ts";
export { FULL_TEXT_METER, planCovers } from "./catalog.ts";
export { llmsFullTxt, llmsTxt, manifestDocument, servicesDocument } from "./docs.ts";
export { displayUsd, formatUsd, parseAmountUsd } from "./money.ts";
export type { PaymentRecord, PaymentState } from "./payments.ts";
export { SANDBOX_TOKENS } from "./processor.ts";
export type { PaymentProcessor } from "./processor.ts";
export { CallPaymentRequired } from "./proxy.ts";
export type { PaidProxy } from "./proxy.ts";
export { loadMppx } from "./mppx.ts";
export type { Mppx } from "./mppx.ts";
export type { StandardMethodsConfig } from "./standard_methods.ts";
export type { SettlementSweep } from "./settle_sweep.ts";
export { UsageReceipts, withUsageBlock } from "./usage_receipt.ts";
export type { Balance, UsageReceipt } from "./usage_receipt.ts";
