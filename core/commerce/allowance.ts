/**
 * The server side of the payproxy allowance contract (`POST /internal/allowance`): may this agent
 * use one more `query` of this service at this seller? And the index of agents seen on the
 * storefront, so the check (which only gets a credential id) finds the human behind it.
 */
import type { Clock } from "../clock.ts";
import { boundedCache } from "../bounded_cache.ts";
import { type Catalog, planCovers } from "./catalog.ts";
import type { EntitlementLedger } from "./entitlements.ts";
import type { AuthenticatedAgent } from "./types.ts";

/**
 * Remembers the human behind each credential seen on the storefront
 * (`["commerce_agent", credentialId]`); written once per change, served from memory after.
 */
export class AgentIndex {
  // What was last written per credential; bounded, as every agent that ever called passes here.
  readonly #seen = boundedCache<string, string>({ max: 10_000 });
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  async note(a: AuthenticatedAgent): Promise<void> {
    const sig = `${a.claimed}|${a.humanId ?? ""}|${a.expiresAt ?? ""}`;
    if (this.#seen.get(a.credentialId) === sig) return;
    // Unclaimed credentials die; their index entry goes a day after them.
    const ttl = a.expiresAt && !a.claimed
      ? Date.parse(a.expiresAt) - this.clock.now().getTime() + 86400_000
      : undefined;
    await this.kv.set(["commerce_agent", a.credentialId], a, ttl && ttl > 0 ? { expireIn: ttl } : undefined);
    this.#seen.set(a.credentialId, sig);
  }

  async get(credentialId: string): Promise<AuthenticatedAgent | null> {
    return (await this.kv.get<AuthenticatedAgent>(["commerce_agent", credentialId])).value;
  }
}

export class Allowance {
  constructor(private readonly o: { catalog: Catalog; ledger: EntitlementLedger; agents: AgentIndex }) {}

  /**
   * Yes when a call of this agent is already paid for and in flight (the paid proxy reserves credit,
   * or collects the pay-as-you-go charge, before forwarding), or when a live credit plan covering
   * the service has the credit. Otherwise no, which the payproxy route answers with its 402 (priced
   * against the pay-as-you-go plan).
   */
  async allowance(sellerId: string, agentId: string, serviceSlug: string, quantity: number): Promise<boolean> {
    const { catalog, ledger } = this.o;
    const seller = await catalog.getSeller(sellerId);
    if (!seller) return false;
    const service = (await catalog.services(seller)).find((s) => s.slug === serviceSlug);
    if (!service) return false;
    if (await ledger.hasHold(sellerId, agentId)) return true;
    const plans = await catalog.listPlans(sellerId);
    const covering = plans.filter((p) => planCovers(p, serviceSlug));
    const known = await this.o.agents.get(agentId);
    const agent: AuthenticatedAgent = known ?? { credentialId: agentId, claimed: false };
    const cost = service.meters.query * quantity;
    const ents = await ledger.entries(agent, sellerId);
    return ents.some((e) => covering.some((p) => p.id === e.value.planId) && e.value.creditMicros >= cost);
  }

  /**
   * {@link allowance} for the usage lines of an allowance request: only `query` meters with whole,
   * non-negative quantities are priced here, so any other line, like an empty agent id, is a no.
   */
  async allowUsage(sellerId: string, agentId: string, serviceSlug: string, usage: unknown[]): Promise<boolean> {
    let quantity = 0;
    for (const u of usage) {
      const line = u as { meterSlug?: unknown; quantity?: unknown } | null;
      if (line?.meterSlug !== "query" || !Number.isSafeInteger(line.quantity) || (line.quantity as number) < 0) {
        return false;
      }
      quantity += line.quantity as number;
    }
    return agentId !== "" && await this.allowance(sellerId, agentId, serviceSlug, quantity);
  }
}
