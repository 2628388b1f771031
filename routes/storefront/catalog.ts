import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import { llmsFullTxt, llmsTxt, manifestDocument, servicesDocument } from "../../core/commerce/mod.ts";
import type { Deps } from "../../composition.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { commerceParties } from "./commerce_agent.ts";
import { PUBLIC_READS_LIMITED_DOC, publicReadLimit } from "./public_reads.ts";
import { errorResponse } from "./schemas.ts";

const route = (summary: string): RouteConfig => ({
  method: "get",
  path: "/",
  tags: ["storefront"],
  summary,
  responses: { 200: { description: summary }, 429: errorResponse(PUBLIC_READS_LIMITED_DOC) },
});

/**
 * The seller's catalog documents, each a sub-app mounted at its own path: `/services`,
 * `/manifest.json`, `/llms.txt` and `/llms-full.txt`.
 */
export function createCatalogRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log" | "publicReadLimiter">,
): Record<string, OpenAPIHono<AppEnv>> {
  const { seller } = commerceParties(deps);
  const { service, catalog, processor } = deps.commerce;
  const snapshot = async (c: Context<AppEnv>) => {
    const s = await seller(c);
    return {
      seller: s,
      services: await catalog.services(s),
      plans: await service.sellingPlans(s),
      storefrontUrl: service.storefrontUrl(s),
      networkApiUrl: deps.config.networkApiUrl,
      processor: processor.name,
      mcpUrl: `${deps.config.baseUrl}/mcp`,
    };
  };
  const text = { "content-type": "text/plain; charset=UTF-8" };
  const documents: [string, string, (c: Context<AppEnv>) => Promise<Response>][] = [
    ["/services", "Services and prices of this seller", async (c) => c.json(servicesDocument(await snapshot(c)))],
    ["/manifest.json", "Plan identifiers and purchase URLs", async (c) => c.json(manifestDocument(await snapshot(c)))],
    ["/llms.txt", "Reference index for agents (text)", async (c) => c.text(llmsTxt(await snapshot(c)), 200, text)],
    [
      "/llms-full.txt",
      "Payment mechanics in full (text)",
      async (c) => c.text(llmsFullTxt(await snapshot(c)), 200, text),
    ],
  ];
  // Each document reads the seller's plans and services from KV: counted per client address, together.
  const limit = publicReadLimit(deps, "catalog");
  const apps: Record<string, OpenAPIHono<AppEnv>> = {};
  for (const [path, summary, handler] of documents) {
    const app = familyApp("storefront", deps.log);
    documented(app, route(summary), limit, handler);
    apps[path] = app;
  }
  return apps;
}
