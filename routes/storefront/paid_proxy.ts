import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import { z } from "zod";
import type { Deps } from "../../composition.ts";
import { boundedCache } from "../../core/bounded_cache.ts";
import { AppError } from "../../core/errors.ts";
import { hasIdFormat, idFormatMessage } from "../../core/ids.ts";
import {
  type AuthenticatedAgent,
  commerceErrors as errors,
  UsageReceipts,
  withUsageBlock,
} from "../../core/commerce/mod.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { documented } from "../openapi.ts";
import { commerceParties } from "./commerce_agent.ts";
import { agentToken, errorResponse, paid402 } from "./schemas.ts";

const paidResponses = {
  200: {
    description: "The upstream payproxy answer; a JSON object answer gains a `usage` block " +
      "`{cost_usd, balance_usd, plan_id, request_id, payment_reference?}` (the receipt of this call)",
  },
  400: errorResponse("invalid_request: data_model_id missing, or a malformed model id (not echoed)"),
  401: errorResponse("bearer_required or invalid_token"),
  402: paid402,
  403: errorResponse("plan_required (reason not_included_in_plan with meters, or access_not_found, with plans)"),
  429: errorResponse(
    "rate_limit_exceeded: too many refused calls for this agent credential this minute (`SEARCH_RATE_LIMIT_PER_MIN`, " +
      "the budget of an API key on the bearer routes); `retry_after` and `Retry-After` say when to try again",
  ),
};

const searchRoute: RouteConfig = {
  method: "post",
  path: "/",
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
};

const answerRoute: RouteConfig = {
  method: "post",
  path: "/{id}",
  tags: ["storefront"],
  summary: "Paid real-time answer through the storefront",
  security: agentToken,
  request: {
    params: z.object({ id: z.string() }),
    body: { required: true, content: { "application/json": { schema: z.object({ query: z.string() }) } } },
  },
  responses: paidResponses,
};

/**
 * The paid proxy: `POST /v2/search` (mounted at `/v2/search`) and `POST /aimodel/{id}` (mounted at
 * `/aimodel`) forward to the seller's payproxy routes and bill the usage they report. The bodies go
 * through unread beyond the size cap: the payproxy route checks them. A JSON object answer gets the
 * call's receipt as a `usage` block.
 */
export function createPaidProxyRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log" | "searchLimiter" | "clock">,
): { search: OpenAPIHono<AppEnv>; aimodel: OpenAPIHono<AppEnv> } {
  const { seller, agent } = commerceParties(deps);
  const proxy = deps.commerce.proxy;
  const receipts = new UsageReceipts(deps.commerce.service);
  const limit = deps.config.maxBodyBytes;
  // An anonymous agent's token is free to mint, and a refused call (402, 403 plan_required, a bad
  // request) costs its lookups for nothing: refused calls count per agent credential, with an API
  // key's budget on the bearer routes. A paid call is bounded by the credit it spends, and counting
  // it would put a KV commit on every paid call's path (bench/paid_proxy_load.ts). Once an agent is
  // over, this process answers its calls 429 at once until the window ends, without the lookups.
  const overUntil = boundedCache<string, number>({ max: 10_000 });
  const exhausted = (retryAfterS: number) =>
    errors.paid_calls_exhausted({
      extra: { retry_after: retryAfterS },
      headers: { "retry-after": String(retryAfterS) },
    });
  const refuseWhenOver = (a: AuthenticatedAgent) => {
    const until = overUntil.get(a.credentialId);
    const leftMs = until === undefined ? 0 : until - deps.clock.now().getTime();
    if (leftMs > 0) throw exhausted(Math.max(1, Math.ceil(leftMs / 1000)));
  };
  /** Runs one paid call; a refusal counts against the agent, and past its budget is a 429 instead. */
  const paidCall = async <T>(a: AuthenticatedAgent, call: () => Promise<T>): Promise<T> => {
    refuseWhenOver(a);
    try {
      return await call();
    } catch (err) {
      const hit = await deps.searchLimiter.hit(`agent:${a.credentialId}`);
      if (hit.allowed) throw err;
      overUntil.set(a.credentialId, deps.clock.now().getTime() + hit.retryAfterS * 1000);
      throw exhausted(hit.retryAfterS);
    }
  };

  const search = familyApp("storefront", deps.log);
  documented(search, searchRoute, async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const url = new URL(c.req.url);
    const res = await paidCall(a, async () => {
      const dm = url.searchParams.get("data_model_id");
      if (!dm) throw new AppError("bad_request", "invalid_request", "data_model_id is required");
      if (!hasIdFormat("dm", dm)) {
        throw new AppError("bad_request", "invalid_request", idFormatMessage("data_model_id", "dm"));
      }
      return await proxy.call({
        seller: s,
        agent: a,
        kind: "search",
        modelId: dm,
        pathAndQuery: `/payproxy/v2/search${url.search}`,
        body: await readBodyCapped(c.req.raw, limit, { holder: limitAddress(c, deps.config.trustProxy) }),
        headers: c.req.raw.headers,
        request: c.req.raw,
      });
    });
    return await withUsageBlock(res, await receipts.forResponse(s, a, res));
  });

  const aimodel = familyApp("storefront", deps.log);
  documented(aimodel, answerRoute, async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const url = new URL(c.req.url);
    const rawId = url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
    const res = await paidCall(a, async () => {
      if (!hasIdFormat("am", c.req.param("id"))) {
        throw new AppError("bad_request", "invalid_request", idFormatMessage("ai_model_id", "am"));
      }
      return await proxy.call({
        seller: s,
        agent: a,
        kind: "aimodel",
        modelId: c.req.param("id")!,
        pathAndQuery: `/payproxy/aimodel/${rawId}${url.search}`,
        body: await readBodyCapped(c.req.raw, limit, { holder: limitAddress(c, deps.config.trustProxy) }),
        headers: c.req.raw.headers,
        request: c.req.raw,
      });
    });
    return await withUsageBlock(res, await receipts.forResponse(s, a, res));
  });
  return { search, aimodel };
}
