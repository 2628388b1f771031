import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import { z } from "zod";
import type { Deps } from "../../composition.ts";
import { UsageReceipts } from "../../core/commerce/mod.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { commerceParties } from "./commerce_agent.ts";
import { PUBLIC_READS_LIMITED_DOC, publicReadLimit } from "./public_reads.ts";
import { agentToken, errorResponse } from "./schemas.ts";

const balanceRoute: RouteConfig = {
  method: "get",
  path: "/",
  tags: ["storefront"],
  summary:
    "The agent's credit at this seller, per plan and in total (the figures of the receipts and the MCP balance tool)",
  security: agentToken,
  responses: {
    200: {
      description: "Balance",
      content: {
        "application/json": {
          schema: z.object({
            seller_id: z.string(),
            balance_usd: z.string(),
            currency: z.literal("usd"),
            plans: z.array(z.object({
              plan_id: z.string(),
              plan_name: z.string().nullable(),
              remaining_usd: z.string(),
            })),
          }),
        },
      },
    },
    401: errorResponse("bearer_required or invalid_token"),
    429: errorResponse(PUBLIC_READS_LIMITED_DOC),
  },
};

/** `GET /agent/balance` (mounted there): the agent's credit at this seller. */
export function createBalanceRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log" | "publicReadLimiter">,
) {
  const { seller, agent } = commerceParties(deps);
  const receipts = new UsageReceipts(deps.commerce.service);
  const app: OpenAPIHono<AppEnv> = familyApp("storefront", deps.log);
  // An anonymous identity's token is free to mint: counted per client address, before the token is checked.
  documented(app, balanceRoute, publicReadLimit(deps, "agent_reads"), async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    return c.json(await receipts.balance(s, a), 200, { "cache-control": "no-store" });
  });
  return app;
}
