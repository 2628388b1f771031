import type { Context, MiddlewareHandler } from "hono";
import type { Config } from "../../core/config.ts";
import { sfError } from "../../core/identity/mod.ts";
import type { Seller, SellerRegistry } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";

/** Deps of seller resolution. */
export interface SellerDeps {
  config: Config;
  storefront: { sellers: SellerRegistry };
}

/**
 * The seller for this request's Host header (cached on the context).
 * @throws AppError 404 `seller_not_found` when the host maps to no seller and no default answers.
 */
export async function sellerOf(c: Context<AppEnv>, deps: SellerDeps): Promise<Seller> {
  const known = c.get("seller");
  if (known) return known;
  const host = c.req.header("host") ?? new URL(c.req.url).host;
  const seller = await deps.storefront.sellers.resolve(host, deps.config.storefront.defaultSellerId);
  if (!seller) throw sfError("not_found", "seller_not_found", "No storefront is served on this host");
  c.set("seller", seller);
  return seller;
}

/** Resolves the seller from the Host header into `c.var.seller`; 404 `seller_not_found` otherwise. */
export function requireSeller(deps: SellerDeps): MiddlewareHandler<AppEnv> {
  return async function requireSeller(c, next) {
    await sellerOf(c, deps);
    await next();
  };
}
