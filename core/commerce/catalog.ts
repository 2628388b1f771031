import type { Clock } from "../clock.ts";
import { newId } from "../ids.ts";
import type { Repos } from "../store/mod.ts";
import { serviceSlug } from "../payproxy/mod.ts";
import { CARD_MINIMUM_MICROS, formatUsd } from "./money.ts";
import type { CreditPlan, PaygPlan, Plan, Seller, SellerDirectory, SellerPricing, Service } from "./types.ts";

/** Does a plan cover a service slug? */
export const planCovers = (plan: Plan, slug: string): boolean =>
  plan.services.includes("*") || plan.services.includes(slug);

/** Default price of one `query` when a seller set none: 0.01 USD. */
export const DEFAULT_QUERY_PRICE_MICROS = 10_000;
/** Default price of one `full_text` when a seller set none: 0.02 USD. */
export const DEFAULT_FULL_TEXT_PRICE_MICROS = 20_000;
export { FULL_TEXT_METER } from "../payproxy/mod.ts";

/** The meters a plan pays for: credit plans name theirs (default `query`); pay as you go pays queries. */
export const planMeters = (plan: Plan): string[] => (plan.kind === "credit" ? plan.meters ?? ["query"] : ["query"]);

/**
 * Plans and prices in KV, and the services derived from the seller's tenant.
 * Keys: `["commerce_plan", sellerId, planId]`, `["commerce_pricing", sellerId]`. Sellers themselves
 * live in the identity room's registry (`deps.storefront.sellers`).
 */
export class Catalog {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly repos: Repos,
    private readonly clock: Clock,
    readonly sellers: SellerDirectory,
  ) {}

  async getSeller(id: string): Promise<Seller | null> {
    return await this.sellers.get(id);
  }

  async setPricing(sellerId: string, pricing: SellerPricing): Promise<void> {
    await this.kv.set(["commerce_pricing", sellerId], pricing);
  }

  async pricing(sellerId: string): Promise<SellerPricing> {
    return (await this.kv.get<SellerPricing>(["commerce_pricing", sellerId])).value ??
      { defaultQueryPriceMicros: DEFAULT_QUERY_PRICE_MICROS };
  }

  /** Adds a credit plan (`purchase.cardMinimumUsd` is the card floor, 0.50 USD). */
  async addCreditPlan(
    sellerId: string,
    input: { name: string; services?: string[]; meters?: string[]; minimumMicros: number; maximumMicros: number },
  ) {
    if (input.minimumMicros <= 0 || input.maximumMicros < input.minimumMicros) {
      throw new Error("credit plan limits must satisfy 0 < minimum <= maximum");
    }
    const plan: CreditPlan = {
      id: newId("pl", this.clock),
      sellerId,
      kind: "credit",
      name: input.name,
      services: input.services ?? ["*"],
      ...(input.meters ? { meters: input.meters } : {}),
      minimumMicros: input.minimumMicros,
      maximumMicros: input.maximumMicros,
      createdAt: this.clock.now().toISOString(),
    };
    await this.kv.set(["commerce_plan", sellerId, plan.id], plan);
    return plan;
  }

  /** Adds a pay-as-you-go plan with a per-request price. */
  async addPaygPlan(sellerId: string, input: { name: string; services?: string[]; pricePerRequestMicros: number }) {
    if (!(input.pricePerRequestMicros > 0)) throw new Error("pay-as-you-go price must be positive");
    const plan: PaygPlan = {
      id: newId("pl", this.clock),
      sellerId,
      kind: "payg",
      name: input.name,
      services: input.services ?? ["*"],
      pricePerRequestMicros: input.pricePerRequestMicros,
      createdAt: this.clock.now().toISOString(),
    };
    await this.kv.set(["commerce_plan", sellerId, plan.id], plan);
    return plan;
  }

  async listPlans(sellerId: string): Promise<Plan[]> {
    const out: Plan[] = [];
    for await (const e of this.kv.list<Plan>({ prefix: ["commerce_plan", sellerId] })) out.push(e.value);
    return out;
  }

  async getPlan(sellerId: string, planId: string): Promise<Plan | null> {
    return (await this.kv.get<Plan>(["commerce_plan", sellerId, planId])).value;
  }

  /**
   * The seller's services: every marketplace-enabled data model and every marketplace-enabled,
   * non-private AI model of its tenant, each with its slug and `query` price.
   */
  async services(seller: Seller): Promise<Service[]> {
    const [dms, ams, pricing] = await Promise.all([
      this.repos.dataModels.listByTenant(seller.tenantId),
      this.repos.aiModels.listByTenant(seller.tenantId),
      this.pricing(seller.sellerId),
    ]);
    const price = (slug: string) => pricing.servicePrices?.[slug] ?? pricing.defaultQueryPriceMicros;
    const out: Service[] = [];
    for (const dm of dms) {
      if (!dm.marketplace) continue;
      const slug = serviceSlug(dm);
      const fullText = dm.license === "full_text"
        ? { full_text: pricing.fullTextPriceMicros ?? DEFAULT_FULL_TEXT_PRICE_MICROS }
        : {};
      out.push({ slug, kind: "search", modelId: dm.id, name: dm.name, meters: { query: price(slug), ...fullText } });
    }
    for (const am of ams) {
      if (!am.marketplace || am.private) continue;
      const slug = serviceSlug(am);
      out.push({ slug, kind: "aimodel", modelId: am.id, name: am.name, meters: { query: price(slug) } });
    }
    return out;
  }
}

/** Public JSON of a plan, with its purchase block and URL. */
export function planView(plan: Plan, storefrontUrl: string): Record<string, unknown> {
  const base = {
    id: plan.id,
    name: plan.name,
    kind: plan.kind,
    services: plan.services,
    ...(plan.kind === "credit" && plan.meters ? { meters: plan.meters } : {}),
  };
  if (plan.kind === "payg") {
    return { ...base, pricePerRequestUsd: formatUsd(plan.pricePerRequestMicros), purchasable: false };
  }
  return {
    ...base,
    purchasable: true,
    purchase: {
      url: `${storefrontUrl}/plans/${plan.id}/purchase`,
      method: "POST",
      minimumUsd: formatUsd(plan.minimumMicros),
      maximumUsd: formatUsd(plan.maximumMicros),
      cardMinimumUsd: formatUsd(CARD_MINIMUM_MICROS),
      currency: "usd",
    },
    extend: { url: `${storefrontUrl}/extend`, method: "POST" },
  };
}
