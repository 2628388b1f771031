import { z } from "zod";

/** OpenAPI pieces shared by the storefront commerce routes. */

/** Routes that take the agent's access token. */
export const agentToken = [{ agentToken: [] }];

const storefrontError = z.object({
  error: z.string().describe("Error code (spec 7.3)"),
  reason: z.string().optional(),
  detail: z.string().optional(),
}).passthrough();

/** A storefront error response `{error, reason?, detail?}`. */
export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: storefrontError } },
});

/** A JSON object response. */
export const jsonResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
});

/** The 402 of a paid route: one challenge per rail and method. */
export const paid402 = {
  description:
    "Payment required: one `WWW-Authenticate: Payment ...` challenge per rail (`card`, `wallet`) and per configured " +
    "mppx method (`evm`, `stripe`), and with the `evm` method an x402 v2 `PAYMENT-REQUIRED` header; the body lists the " +
    "rails (the `card` block with `statusUrl`) and, under `standard`, mppx's methods",
  headers: {
    "www-authenticate": { description: "Payment challenges (RFC 9110 list)", schema: { type: "string" as const } },
    "payment-required": {
      description: "x402 v2 payment requirements (base64 JSON), when the evm method is configured",
      schema: { type: "string" as const },
    },
  },
  content: { "application/json": { schema: storefrontError } },
};
