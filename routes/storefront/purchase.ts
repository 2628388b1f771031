import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../composition.ts";
import { commerceErrors as errors } from "../../core/commerce/mod.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { type BodyRejection, readJson } from "../middleware/body.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { documented } from "../openapi.ts";
import { commerceParties, sendPurchase } from "./commerce_agent.ts";
import { agentToken, errorResponse, jsonResponse, paid402 } from "./schemas.ts";

const amountUsd = z.string().regex(/^\d+\.\d{6}$/).describe("Whole-cent USD amount in six-decimal form, e.g. 5.000000");
const paymentBody = z.object({
  amountUsd: amountUsd.optional().describe("Required for credit plans"),
  checkout: z.boolean().optional().describe("true: the card checkout lane (a human pays on a hosted page)"),
});
const purchaseResponses = {
  200: jsonResponse("Purchased: the entitlement, with a `Payment-Receipt` header"),
  400: errorResponse("invalid_request, amount_required, amount_not_cent_increment, amount_below_minimum, ..."),
  401: errorResponse("bearer_required or invalid_token"),
  402: paid402,
  404: errorResponse("plan_not_found or seller_not_found"),
  409: errorResponse("payment_request_mismatch, payment_amount_mismatch, payment_consumed, ..."),
  429: errorResponse("rate_limit_exceeded: too many hosted checkouts opened from this client address (`Retry-After`)"),
  501: errorResponse("entitlements_not_available"),
};

const purchaseRoute: RouteConfig = {
  method: "post",
  path: "/{planId}/purchase",
  tags: ["storefront"],
  summary: "Buy a plan (credit plans take amountUsd; checkout: true for the card checkout lane)",
  security: agentToken,
  request: {
    params: z.object({ planId: z.string() }),
    headers: z.object({ "idempotency-key": z.string().optional() }),
    body: { required: true, content: { "application/json": { schema: paymentBody } } },
  },
  responses: purchaseResponses,
};

const extendRoute: RouteConfig = {
  method: "post",
  path: "/",
  tags: ["storefront"],
  summary: "Top up credit on a plan the agent holds",
  security: agentToken,
  request: {
    headers: z.object({ "idempotency-key": z.string().optional() }),
    body: {
      required: true,
      content: { "application/json": { schema: paymentBody.extend({ planId: z.string().optional() }) } },
    },
  },
  responses: purchaseResponses,
};

/** Purchase bodies: any JSON (an empty body is `{}`); the commerce service checks the fields. */
const purchaseRejection: BodyRejection = (p) =>
  errors.body_malformed({ detail: "send a JSON object", cause: p.kind === "syntax" ? new Error(p.why) : undefined });

/**
 * Plan purchase and top-up: `POST /plans/{planId}/purchase` (mounted at `/plans`) and
 * `POST /extend` (mounted at `/extend`). The Payment scheme rules live in the commerce service.
 */
export function createPurchaseRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log">,
): { plans: OpenAPIHono<AppEnv>; extend: OpenAPIHono<AppEnv> } {
  const { seller, agent } = commerceParties(deps);
  const service = deps.commerce.service;
  // An agent's token is free to mint: a large body's share of the budget counts against its address.
  const body = async (c: Context<AppEnv>) =>
    (await readJson(c.req.raw, {
      limit: deps.config.maxBodyBytes,
      requireJsonType: false,
      empty: {},
      reject: purchaseRejection,
      holder: limitAddress(c, deps.config.trustProxy),
    }))
      .value;

  const plans = familyApp("storefront", deps.log);
  documented(plans, purchaseRoute, async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    return sendPurchase(
      await service.purchase({
        seller: s,
        agent: a,
        action: "purchase",
        planId: c.req.param("planId"),
        body: await body(c),
        headers: c.req.raw.headers,
        request: c.req.raw,
        client: limitAddress(c, deps.config.trustProxy),
      }),
      service,
    );
  });

  const extend = familyApp("storefront", deps.log);
  documented(extend, extendRoute, async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    return sendPurchase(
      await service.purchase({
        seller: s,
        agent: a,
        action: "extend",
        body: await body(c),
        headers: c.req.raw.headers,
        request: c.req.raw,
        client: limitAddress(c, deps.config.trustProxy),
      }),
      service,
    );
  });
  return { plans, extend };
}
