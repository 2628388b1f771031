import type { Clock } from "../clock.ts";
import { AppError } from "../errors.ts";
import { type IdPrefix, newId } from "../ids.ts";
import type { Repos } from "../store/repos.ts";
import type { AiModel, DataModel } from "../store/models.ts";
import { CARD_MINIMUM_MICROS, formatUsd } from "./money.ts";
import type { CreditPlan, PaygPlan, Plan, Seller, SellerDirectory, SellerPricing, Service } from "./types.ts";

/** A new id with a commerce prefix (`pl` plan), same shape as core/ids.ts ids. */
export const commerceId = (prefix: "pl", clock: Clock): string => newId(prefix as IdPrefix, clock);

/**
 * The payproxy service slug of a model: its tool name, else a slug of its name, else its id
 * (spec 7.1, the same rule the payproxy routes use for `serviceSlug`).
 */
export function serviceSlugFor(model: Pick<DataModel | AiModel, "id" | "name" | "toolName">): string {
  if (model.toolName) return model.toolName;
  const slug = model.name.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
  return slug || model.id;
}

/** Does a plan cover a service slug? */
export const planCovers = (plan: Plan, slug: string): boolean =>
  plan.services.includes("*") || plan.services.includes(slug);

/** Default price of one `query` when a seller set none: 0.01 USD. */
export const DEFAULT_QUERY_PRICE_MICROS = 10_000;

/**
 * Interim seller directory over the identity room's keys (`["seller", id]`, `["seller_by_host",
 * host]`); replaced by its `SellerRegistry` once that is on main.
 */
export class KvSellerDirectory implements SellerDirectory {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  async get(sellerId: string): Promise<Seller | null> {
    return (await this.kv.get<Seller>(["seller", sellerId])).value;
  }

  async resolve(host: string | undefined, defaultSellerId: string | null): Promise<Seller | null> {
    const h = host?.trim().toLowerCase().replace(/:(80|443)$/, "");
    const id = h ? (await this.kv.get<string>(["seller_by_host", h])).value : null;
    return (id ? await this.get(id) : null) ?? (defaultSellerId ? await this.get(defaultSellerId) : null);
  }

  /** Creates a seller and claims its hosts. */
  async create(input: { sellerId: string; tenantId: string; name: string; hosts: string[] }): Promise<Seller> {
    const seller: Seller = {
      ...input,
      hosts: input.hosts.map((h) => h.toLowerCase()),
      createdAt: this.clock.now().toISOString(),
    };
    let op = this.kv.atomic().check({ key: ["seller", seller.sellerId], versionstamp: null })
      .set(["seller", seller.sellerId], seller);
    for (const host of seller.hosts) {
      op = op.check({ key: ["seller_by_host", host], versionstamp: null }).set(
        ["seller_by_host", host],
        seller.sellerId,
      );
    }
    if (!(await op.commit()).ok) throw new Error(`seller ${seller.sellerId} or one of its hosts already exists`);
    return seller;
  }
}

/**
 * Plans and prices in KV, and the services derived from the seller's tenant.
 * Keys: `["commerce_plan", sellerId, planId]`, `["commerce_pricing", sellerId]`,
 * `["commerce_default_seller"]` (the seller answering unknown hosts in the embedded default).
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

  /** Makes `sellerId` answer every host no other seller claims (the embedded default). */
  async setDefaultSeller(sellerId: string): Promise<void> {
    await this.kv.set(["commerce_default_seller"], sellerId);
  }

  /**
   * The seller answering on `host`, else the default seller.
   * @throws {AppError} 404 `seller_not_found`.
   */
  async resolveSeller(host: string | undefined): Promise<Seller> {
    const def = (await this.kv.get<string>(["commerce_default_seller"])).value;
    const seller = await this.sellers.resolve(host, def);
    if (!seller) throw new AppError(404, "seller_not_found", "No seller answers on this host");
    return seller;
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
    input: { name: string; services?: string[]; minimumMicros: number; maximumMicros: number },
  ) {
    if (input.minimumMicros <= 0 || input.maximumMicros < input.minimumMicros) {
      throw new Error("credit plan limits must satisfy 0 < minimum <= maximum");
    }
    const plan: CreditPlan = {
      id: commerceId("pl", this.clock),
      sellerId,
      kind: "credit",
      name: input.name,
      services: input.services ?? ["*"],
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
      id: commerceId("pl", this.clock),
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
      const slug = serviceSlugFor(dm);
      out.push({ slug, kind: "search", modelId: dm.id, name: dm.name, meters: { query: price(slug) } });
    }
    for (const am of ams) {
      if (!am.marketplace || am.private) continue;
      const slug = serviceSlugFor(am);
      out.push({ slug, kind: "aimodel", modelId: am.id, name: am.name, meters: { query: price(slug) } });
    }
    return out;
  }
}

/** Public JSON of a plan, with its purchase block and URL. */
export function planView(plan: Plan, agentAuthUrl: string): Record<string, unknown> {
  const base = { id: plan.id, name: plan.name, kind: plan.kind, services: plan.services };
  if (plan.kind === "payg") {
    return { ...base, pricePerRequestUsd: formatUsd(plan.pricePerRequestMicros), purchasable: false };
  }
  return {
    ...base,
    purchasable: true,
    purchase: {
      url: `${agentAuthUrl}/plans/${plan.id}/purchase`,
      method: "POST",
      minimumUsd: formatUsd(plan.minimumMicros),
      maximumUsd: formatUsd(plan.maximumMicros),
      cardMinimumUsd: formatUsd(CARD_MINIMUM_MICROS),
      currency: "usd",
    },
    extend: { url: `${agentAuthUrl}/extend`, method: "POST" },
  };
}
