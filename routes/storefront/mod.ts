import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import type { AppEnv } from "../env.ts";
import { mount } from "../family.ts";
import { createAllowanceRoutes } from "./allowance.ts";
import { createBalanceRoutes } from "./balance.ts";
import { createCatalogRoutes } from "./catalog.ts";
import { createCheckoutRoutes } from "./checkout.ts";
import { createClaimPageRoutes } from "./claim_page.ts";
import { createDiscoveryRoutes } from "./discovery.ts";
import { createEntitlementRoutes } from "./entitlements.ts";
import { createIdentityRoutes } from "./identity.ts";
import { createOAuthRoutes } from "./oauth2.ts";
import { createOutboxRoutes } from "./outbox.ts";
import { createPaidProxyRoutes } from "./paid_proxy.ts";
import { createPurchaseRoutes } from "./purchase.ts";

/**
 * The storefront group, served at AGENT_AUTH_URL beside the base routes (the paths do not
 * collide). Its URLs share no prefix, so each path family is a sub-app of its own, mounted at its
 * prefix: the storefront error body everywhere, the RFC 6749 body under `/oauth2`.
 */
export function mountStorefront(app: OpenAPIHono<AppEnv>, deps: Deps): void {
  const purchase = createPurchaseRoutes(deps);
  const checkout = createCheckoutRoutes(deps);
  const paid = createPaidProxyRoutes(deps);
  const mounts: Record<string, OpenAPIHono<AppEnv>> = {
    "/agent/identity": createIdentityRoutes(deps),
    ...createEntitlementRoutes(deps),
    "/agent/balance": createBalanceRoutes(deps),
    "/oauth2": createOAuthRoutes(deps),
    "/.well-known": createDiscoveryRoutes(deps),
    "/claim": createClaimPageRoutes(deps),
    "/dev/outbox": createOutboxRoutes(deps),
    "/plans": purchase.plans,
    "/extend": purchase.extend,
    "/payments": checkout.payments,
    "/checkout": checkout.checkout,
    ...createCatalogRoutes(deps),
    "/internal/allowance": createAllowanceRoutes(deps),
    "/v2/search": paid.search,
    "/aimodel": paid.aimodel,
  };
  for (const [prefix, sub] of Object.entries(mounts)) mount(app, prefix, sub);
}
