import type { RouteConfig } from "@hono/zod-openapi";
import { z } from "zod";
import type { Deps } from "../../composition.ts";
import { commerceErrors as errors } from "../../core/commerce/mod.ts";
import { familyApp } from "../family.ts";
import { decodeJson, readBodyCapped } from "../middleware/body.ts";
import { documented } from "../openapi.ts";
import { errorResponse, jsonResponse } from "./schemas.ts";

const allowanceRoute: RouteConfig = {
  method: "post",
  path: "/",
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
  responses: { 200: jsonResponse("{allowed: true | false}"), 401: errorResponse("invalid_payproxy_signature") },
};

/**
 * Mounted at `/internal/allowance`: `POST`, the server side of the payproxy allowance contract.
 * The signature is verified before the body is looked at.
 */
export function createAllowanceRoutes(deps: Pick<Deps, "payproxy" | "commerce" | "log">) {
  const app = familyApp("storefront", deps.log);
  documented(app, allowanceRoute, async (c) => {
    const body = await readBodyCapped(c.req.raw, 64 * 1024);
    // The payproxy verifier: any failure is one opaque 401, never failed open; single use.
    const verified = await deps.payproxy.verifier.verify({
      signature: c.req.header("zc-signature"),
      method: c.req.method,
      url: c.req.url,
      body,
      requestId: c.req.header("zc-request-id"),
      agentId: c.req.header("zc-agent-id"),
    });
    const { sellerId, agentId: agentHeader } = verified;
    const decoded = decodeJson(body);
    if (!("value" in decoded)) {
      throw errors.body_malformed({ cause: new Error(decoded.kind === "syntax" ? decoded.why : decoded.kind) });
    }
    const q = decoded.value as { agentId?: unknown; serviceSlug?: unknown; usage?: unknown } | null;
    if (
      typeof q !== "object" || q === null || typeof q.agentId !== "string" || typeof q.serviceSlug !== "string" ||
      !Array.isArray(q.usage)
    ) {
      throw errors.allowance_body_shape();
    }
    // The agent in the body is the one the signature covers.
    if (q.agentId !== agentHeader) throw errors.allowance_agent_mismatch();
    const allowed = await deps.commerce.service.allowUsage(sellerId, q.agentId, q.serviceSlug, q.usage as unknown[]);
    return c.json({ allowed });
  });
  return app;
}
