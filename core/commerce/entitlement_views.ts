/**
 * The entitlements an agent holds, as the storefront shows them: here (one seller, with the
 * pay-as-you-go plans it may call without credit) and everywhere (the network API).
 */
import { type Catalog, planView } from "./catalog.ts";
import { type Entitlement, type EntitlementLedger, primaryHolder } from "./entitlements.ts";
import { formatUsd } from "./money.ts";
import type { AuthenticatedAgent, Plan, Seller } from "./types.ts";

/** Public JSON of an entitlement. */
export function entitlementView(e: Entitlement, plan: Plan | null, seller?: Seller): Record<string, unknown> {
  return {
    planId: e.planId,
    planName: plan?.name,
    kind: plan?.kind ?? "credit",
    services: plan?.services,
    sellerId: e.sellerId,
    ...(seller ? { seller: { id: seller.sellerId, name: seller.name, hosts: seller.hosts } } : {}),
    remainingUsd: formatUsd(e.creditMicros),
    purchasedUsd: formatUsd(e.purchasedMicros),
    sharedWithHuman: e.holder.startsWith("h:"),
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    ...(e.expiresAt ? { expiresAt: e.expiresAt } : {}),
  };
}

export class EntitlementViews {
  constructor(
    private readonly o: { catalog: Catalog; ledger: EntitlementLedger; storefrontUrl: (seller: Seller) => string },
  ) {}

  /** GET /agent/entitlements: live plans at this seller (whose `plans` are given) with remaining credit. */
  async here(seller: Seller, plans: Plan[], agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    const ents = await this.o.ledger.entries(agent, seller.sellerId);
    const byId = new Map(plans.map((p) => [p.id, p]));
    const active = ents.map((e) => e.value).filter((e) => e.creditMicros > 0);
    return {
      sellerId: seller.sellerId,
      holder: primaryHolder(agent).startsWith("h:") ? "human" : "credential",
      entitlements: active.map((e) => entitlementView(e, byId.get(e.planId) ?? null)),
      payAsYouGo: plans.filter((p) => p.kind === "payg").map((p) => planView(p, this.o.storefrontUrl(seller))),
    };
  }

  /** GET {network}/agent/entitlements: live plans at every seller. */
  async everywhere(agent: AuthenticatedAgent): Promise<Record<string, unknown>> {
    const ents = (await this.o.ledger.everywhere(agent)).filter((e) => e.creditMicros > 0);
    const sellers = new Map<string, Seller | null>();
    const out: Record<string, unknown>[] = [];
    for (const e of ents) {
      if (!sellers.has(e.sellerId)) sellers.set(e.sellerId, await this.o.catalog.getSeller(e.sellerId));
      const seller = sellers.get(e.sellerId);
      if (!seller) continue;
      out.push(entitlementView(e, await this.o.catalog.getPlan(e.sellerId, e.planId), seller));
    }
    return { entitlements: out };
  }
}
