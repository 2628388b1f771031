import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env.ts";

/**
 * OpenAPI entries for the storefront routes served by plain Hono routers (commerce and
 * discovery): their handlers read bodies themselves because the storefront answers in its own
 * error family, so the entries are registered here, beside the routes they describe.
 */

const agentToken = [{ agentToken: [] }];
const storefrontError = z.object({
  error: z.string().describe("Error code (spec 7.3)"),
  reason: z.string().optional(),
  detail: z.string().optional(),
}).passthrough();
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: storefrontError } },
});
const amountUsd = z.string().regex(/^\d+\.\d{6}$/).describe("Whole-cent USD amount in six-decimal form, e.g. 5.000000");
const paymentBody = z.object({
  amountUsd: amountUsd.optional().describe("Required for credit plans"),
  checkout: z.boolean().optional().describe("true: the card checkout lane (a human pays on a hosted page)"),
});
const json = (description: string) => ({
  description,
  content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
});
const paid402 = {
  description:
    "Payment required: one `WWW-Authenticate: Payment ...` challenge per rail; the body lists the rails (and the `card` block with `statusUrl`)",
  content: { "application/json": { schema: storefrontError } },
};

/** Registers the commerce and discovery routes in the app's OpenAPI document. */
export function registerStorefrontDocs(app: OpenAPIHono<AppEnv>): void {
  const r = app.openAPIRegistry;
  r.registerComponent("securitySchemes", "agentToken", {
    type: "http",
    scheme: "bearer",
    description:
      "Agent access token from POST /oauth2/token; in `ZC-Agent-Authorization` when `Authorization` carries `Payment ...`",
  });
  const purchaseResponses = {
    200: json("Purchased: the entitlement, with a `Payment-Receipt` header"),
    400: errorResponse("invalid_request, amount_required, amount_not_cent_increment, amount_below_minimum, ..."),
    401: errorResponse("bearer_required or invalid_token"),
    402: paid402,
    404: errorResponse("plan_not_found or seller_not_found"),
    409: errorResponse("payment_request_mismatch, payment_amount_mismatch, payment_consumed, ..."),
    501: errorResponse("entitlements_not_available"),
  };
  r.registerPath({
    method: "post",
    path: "/plans/{planId}/purchase",
    tags: ["storefront"],
    summary: "Buy a plan (credit plans take amountUsd; checkout: true for the card checkout lane)",
    security: agentToken,
    request: {
      params: z.object({ planId: z.string() }),
      headers: z.object({ "idempotency-key": z.string().optional() }),
      body: { required: true, content: { "application/json": { schema: paymentBody } } },
    },
    responses: purchaseResponses,
  });
  r.registerPath({
    method: "post",
    path: "/extend",
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
  });
  r.registerPath({
    method: "get",
    path: "/payments/{reference}",
    tags: ["storefront"],
    summary: "Status of a payment reference (the card lane's statusUrl)",
    request: { params: z.object({ reference: z.string() }) },
    responses: { 200: json("Payment state"), 404: errorResponse("payment_unknown") },
  });
  r.registerPath({
    method: "get",
    path: "/checkout/{reference}",
    tags: ["storefront"],
    summary: "Hosted checkout page where a human pays (HTML form)",
    request: { params: z.object({ reference: z.string() }) },
    responses: { 200: { description: "HTML page" } },
  });
  r.registerPath({
    method: "get",
    path: "/agent/entitlements",
    tags: ["storefront"],
    summary:
      "Active plans at this seller with remaining credit, for this credential and every credential its human claimed",
    security: agentToken,
    responses: { 200: json("Entitlements"), 401: errorResponse("bearer_required or invalid_token") },
  });
  r.registerPath({
    method: "get",
    path: "/network/agent/entitlements",
    tags: ["storefront"],
    summary: "Network-wide view across every seller (served at NETWORK_API_URL)",
    security: agentToken,
    responses: { 200: json("Entitlements at every seller"), 401: errorResponse("bearer_required or invalid_token") },
  });
  for (
    const [path, summary] of [
      ["/services", "Services and prices of this seller"],
      ["/manifest.json", "Plan identifiers and purchase URLs"],
      ["/llms.txt", "Reference index for agents (text)"],
      ["/llms-full.txt", "Payment mechanics in full (text)"],
    ] as const
  ) {
    r.registerPath({
      method: "get",
      path,
      tags: ["storefront"],
      summary,
      responses: { 200: { description: summary } },
    });
  }
  const paidResponses = {
    200: { description: "The upstream payproxy answer, unchanged" },
    401: errorResponse("bearer_required or invalid_token"),
    402: paid402,
    403: errorResponse("plan_required (reason not_included_in_plan with meters, or access_not_found, with plans)"),
  };
  r.registerPath({
    method: "post",
    path: "/v2/search",
    tags: ["storefront"],
    summary: "Paid article search through the storefront (billed against the agent's entitlement)",
    security: agentToken,
    request: {
      query: z.object({ data_model_id: z.string() }),
      body: {
        required: true,
        content: { "application/json": { schema: z.object({ query: z.string() }).passthrough() } },
      },
    },
    responses: paidResponses,
  });
  r.registerPath({
    method: "post",
    path: "/aimodel/{id}",
    tags: ["storefront"],
    summary: "Paid real-time answer through the storefront",
    security: agentToken,
    request: {
      params: z.object({ id: z.string() }),
      body: { required: true, content: { "application/json": { schema: z.object({ query: z.string() }) } } },
    },
    responses: paidResponses,
  });
  r.registerPath({
    method: "post",
    path: "/internal/allowance",
    tags: ["storefront"],
    summary: "Allowance check for the payproxy routes (request signed with the payproxy scheme)",
    request: {
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.object({
              agentId: z.string(),
              serviceSlug: z.string(),
              usage: z.array(z.object({ meterSlug: z.string(), quantity: z.number().int() })),
            }),
          },
        },
      },
    },
    responses: { 200: json("{allowed: true | false}"), 401: errorResponse("invalid_payproxy_signature") },
  });
  for (
    const [path, summary] of [
      ["/.well-known/oauth-authorization-server", "Authorization-server metadata (RFC 8414) with the agent_auth block"],
      ["/.well-known/oauth-protected-resource", "Protected-resource metadata (RFC 9728)"],
      ["/.well-known/jwks.json", "Public keys of the storefront's assertions and access tokens"],
    ] as const
  ) {
    r.registerPath({ method: "get", path, tags: ["discovery"], summary, responses: { 200: json(summary) } });
  }
}
