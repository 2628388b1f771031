import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../composition.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { commerceParties } from "./commerce_agent.ts";
import { PUBLIC_READS_LIMITED_DOC, publicReadLimit } from "./public_reads.ts";
import { agentToken, errorResponse, jsonResponse } from "./schemas.ts";

const route = (summary: string, ok: string): RouteConfig => ({
  method: "get",
  path: "/",
  tags: ["storefront"],
  summary,
  security: agentToken,
  responses: {
    200: jsonResponse(ok),
    401: errorResponse("bearer_required or invalid_token"),
    429: errorResponse(PUBLIC_READS_LIMITED_DOC),
  },
});
const sellerRoute = route(
  "Active plans at this seller with remaining credit, for this credential and every credential its human claimed",
  "Entitlements",
);
const networkRoute = route(
  "Network-wide view across every seller (served at NETWORK_API_URL)",
  "Entitlements at every seller",
);

/**
 * Entitlements: `GET /agent/entitlements` (this seller's view) and the network-wide view at
 * NETWORK_API_URL's path + `/agent/entitlements` (by default `/network/agent/entitlements`). Each
 * returned sub-app is mounted at its path. When the network API has a host of its own (no path),
 * both views share `/agent/entitlements` and the Host header tells them apart.
 */
export function createEntitlementRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log" | "publicReadLimiter">,
): Record<string, OpenAPIHono<AppEnv>> {
  const { seller, agent } = commerceParties(deps);
  const service = deps.commerce.service;
  const networkUrl = new URL(deps.config.networkApiUrl);
  const networkPath = `${networkUrl.pathname.replace(/\/+$/, "")}/agent/entitlements`;

  const networkView = async (c: Context<AppEnv>) => {
    // The network view spans every seller; on a network host of its own no seller answers, so the
    // agent middleware is given a placeholder instead of a 404.
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    const here = await deps.storefront.sellers.resolve(host, deps.config.storefront.defaultSellerId);
    c.set("seller", here ?? { sellerId: "", tenantId: "", name: "network", hosts: [], createdAt: "" });
    const a = await agent(c);
    return c.json(await service.entitlementsEverywhere(a), 200, { "cache-control": "no-store" });
  };
  const sellerView = async (c: Context<AppEnv>) => {
    const s = await seller(c);
    const a = await agent(c);
    return c.json(await service.entitlementsHere(s, a), 200, { "cache-control": "no-store" });
  };

  // An anonymous identity's token is free to mint: counted per client address (with the balance),
  // before the token is checked.
  const limit = publicReadLimit(deps, "agent_reads");
  const here = familyApp("storefront", deps.log);
  if (networkPath === "/agent/entitlements") {
    documented(
      here,
      sellerRoute,
      limit,
      (c) => c.req.header("host") === networkUrl.host ? networkView(c) : sellerView(c),
    );
    return { "/agent/entitlements": here };
  }
  documented(here, sellerRoute, limit, sellerView);
  const network = familyApp("storefront", deps.log);
  documented(network, networkRoute, limit, networkView);
  return { "/agent/entitlements": here, [networkPath]: network };
}
