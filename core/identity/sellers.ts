import { z } from "zod";
import type { Clock } from "../clock.ts";
import type { Seller } from "./types.ts";
import { boundedCache } from "../bounded_cache.ts";

/** Seller ids are short slugs (`demo`, `acme-news`). */
export const sellerIdSchema = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, {
  error: "must be lowercase letters, digits and dashes (at most 64)",
});
/** The longest Host a seller can have: a DNS name (253) and a port. */
const MAX_HOST_CHARS = 253 + 6;

/** A Host header value: hostname or IP, optional port. */
export const hostSchema = z.string().max(MAX_HOST_CHARS, { error: "must be a host name with an optional port" }).regex(
  /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/,
  {
    error: "must be a host name with an optional port",
  },
);

/** Normalizes a Host header for lookup: lowercase, default ports dropped. */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/:(80|443)$/, "");
}

/**
 * The base URL of a seller's storefront, from configuration only (never from a request's Host
 * header, which anyone picks when a default seller answers every host): AGENT_AUTH_URL for the
 * default seller, a seller without hosts, or one that lists AGENT_AUTH_URL's host; otherwise
 * AGENT_AUTH_URL's scheme and path prefix on the seller's first host. Every URL handed to a
 * seller's agents and humans (checkout, payment status, purchase, documents, claim link) is built
 * on it, so it leads back to the same seller.
 */
export function sellerBaseUrl(
  seller: Pick<Seller, "sellerId" | "hosts">,
  config: { agentAuthUrl: string; defaultSellerId: string | null },
): string {
  const configured = new URL(config.agentAuthUrl);
  const host = seller.hosts[0];
  if (
    host === undefined || seller.sellerId === config.defaultSellerId ||
    seller.hosts.includes(normalizeHost(configured.host))
  ) return config.agentAuthUrl;
  return `${configured.protocol}//${host}${configured.pathname.replace(/\/+$/, "")}`;
}

/**
 * The seller registry: `["seller", id]` and the host index `["seller_by_host", host]`, written
 * together so a host maps to at most one seller.
 */
export class SellerRegistry {
  // Host lookups sit on every storefront request; a short cache keeps them off KV. Seller records
  // change rarely (admin work) and a stale entry lives at most CACHE_MS.
  static readonly CACHE_MS = 5_000;
  readonly #cache = boundedCache<string, { seller: Seller | null }>({
    max: 1000,
    ttlMs: SellerRegistry.CACHE_MS,
    now: () => performance.now(),
  });

  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** The seller with this id, or null. */
  async get(sellerId: string): Promise<Seller | null> {
    return (await this.kv.get<Seller>(["seller", sellerId])).value;
  }

  /** Every seller. */
  async list(): Promise<Seller[]> {
    const out: Seller[] = [];
    for await (const e of this.kv.list<Seller>({ prefix: ["seller"] })) out.push(e.value);
    return out;
  }

  /**
   * Creates a seller and claims its hosts.
   * @throws Error when the id or one of the hosts is taken.
   */
  async create(input: { sellerId: string; tenantId: string; name: string; hosts: string[] }): Promise<Seller> {
    const seller: Seller = {
      sellerId: sellerIdSchema.parse(input.sellerId),
      tenantId: input.tenantId,
      name: input.name,
      hosts: [...new Set(input.hosts.map((h) => hostSchema.parse(normalizeHost(h))))],
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
    const res = await op.commit();
    if (!res.ok) throw new Error(`seller ${seller.sellerId} or one of its hosts already exists`);
    this.#cache.clear();
    return seller;
  }

  /**
   * Resolves the seller for a Host header: the seller registered for that host, else the
   * default seller (when configured), else null.
   */
  async resolve(host: string | undefined, defaultSellerId: string | null): Promise<Seller | null> {
    // A Host no seller can have (not a host name, or longer than any) is no host: no KV read (an
    // overlong key is an error there) and no cache entry of its own (the header is the caller's).
    const normal = host ? normalizeHost(host) : "";
    const key = hostSchema.safeParse(normal).success ? normal : "";
    const hit = this.#cache.get(key);
    if (hit) return hit.seller;
    const id = key ? (await this.kv.get<string>(["seller_by_host", key])).value : null;
    let seller = id ? await this.get(id) : null;
    if (!seller && defaultSellerId) seller = await this.get(defaultSellerId);
    this.#cache.set(key, { seller });
    return seller;
  }

  /** Whether some seller lists `host` as its own (the default seller answering an unknown host does not count). */
  async listsHost(host: string, defaultSellerId: string | null): Promise<boolean> {
    // Through resolve() with the storefront's default: its cache keeps one answer per host.
    const seller = await this.resolve(host, defaultSellerId);
    return seller !== null && seller.hosts.includes(normalizeHost(host));
  }
}
