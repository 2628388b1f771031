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

/** The 402 of a paid route: one challenge per rail. */
export const paid402 = {
  description:
    "Payment required: one `WWW-Authenticate: Payment ...` challenge per rail; the body lists the rails (and the `card` block with `statusUrl`)",
  content: { "application/json": { schema: storefrontError } },
};
