/**
 * Storefront commerce routes (relative to AGENT_AUTH_URL): plan purchase and top-up, payment status,
 * the hosted checkout, entitlements (here and network-wide), the catalog documents, the payproxy
 * allowance endpoint and the paid proxy. Errors answer in the storefront family.
 */
import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { llmsFullTxt, llmsTxt, manifestDocument, servicesDocument } from "../../core/commerce/docs.ts";
import { PaidProxy, type Upstream } from "../../core/commerce/proxy.ts";
import type { CommerceResponse } from "../../core/commerce/service.ts";
import type { AuthenticatedAgent, Seller } from "../../core/commerce/types.ts";
import type { Deps } from "../../core/deps.ts";
import { AppError } from "../../core/errors.ts";
import type { AppEnv } from "../env.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { errorFamily } from "../middleware/family.ts";
import { agentAuth } from "./agent_auth.ts";
import { CHECKOUT_HEADERS, checkoutPage } from "./checkout_page.ts";
import { sellerOf } from "./seller.ts";

/** Options of {@link createCommerceRoutes}. */
export interface CommerceRouteOptions {
  /**
   * Serves a request in this process (the app's own `fetch`). When set, paid calls whose upstream is
   * this process skip the network hop; otherwise they go over HTTP through `deps.fetch`.
   */
  self?: (req: Request) => Response | Promise<Response>;
}

const REFERENCE_RE = /^[A-Za-z0-9_-]{16,128}$/;

/** Writes a {@link CommerceResponse} (repeated headers kept). */
function send(r: CommerceResponse): Response {
  const headers = new Headers({ "content-type": "application/json; charset=UTF-8" });
  for (const [k, v] of r.headers) headers.append(k, v);
  return new Response(JSON.stringify(r.body), { status: r.status, headers });
}

/** Reads a JSON object body; an empty body is `{}`. Anything unreadable is `invalid_request`. */
async function readJson(req: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyCapped(req, limit);
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw new AppError(400, "invalid_request", "Body malformed", { detail: "send a JSON object", cause: err });
  }
}

export function createCommerceRoutes(deps: Deps, options: CommerceRouteOptions = {}) {
  const app = new Hono<AppEnv>();
  const { commerce, config } = deps;
  const service = commerce.service;
  const storefront = errorFamily("storefront");
  const networkUrl = new URL(config.networkApiUrl);
  const networkPath = `${networkUrl.pathname.replace(/\/+$/, "")}/agent/entitlements`;
  const baseOrigin = new URL(config.baseUrl).origin;

  const upstream: Upstream = (req) => {
    if (options.self && config.paidProxyUpstream === "inprocess" && new URL(req.url).origin === baseOrigin) {
      return Promise.resolve(options.self(req));
    }
    return deps.fetch(req);
  };
  const proxy = new PaidProxy({
    commerce: service,
    clock: deps.clock,
    log: deps.log,
    baseUrl: config.baseUrl,
    agentAuthUrl: config.agentAuthUrl,
    upstream,
  });

  const seller = (c: Context<AppEnv>): Promise<Seller> => sellerOf(c, deps);
  // The identity room's agent middleware (bearer or ZC-Agent-Authorization rules, 401 reasons),
  // run inline so each handler reads the agent where it needs it.
  const authenticate = agentAuth(deps);
  const agent = async (c: Context<AppEnv>): Promise<AuthenticatedAgent> => {
    await authenticate(c, () => Promise.resolve());
    const principal = c.get("agent")!;
    // Plans of an unclaimed credential die with it: its expiry comes from the credential record.
    const record = principal.claimed ? null : await deps.storefront.accounts.credential(principal.credentialId);
    const a: AuthenticatedAgent = {
      credentialId: principal.credentialId,
      claimed: principal.claimed,
      ...(principal.accountId ? { humanId: principal.accountId } : {}),
      ...(record?.expiresAt ? { expiresAt: record.expiresAt } : {}),
    };
    await service.agents.note(a);
    return a;
  };
  const on = (paths: string[], mw: MiddlewareHandler<AppEnv>) => {
    for (const p of paths) app.use(p, mw);
  };
  on([
    "/plans/*",
    "/extend",
    "/agent/entitlements",
    networkPath,
    "/payments/*",
    "/checkout/*",
    "/services",
    "/manifest.json",
    "/llms.txt",
    "/llms-full.txt",
    "/internal/allowance",
    "/v2/search",
    "/aimodel/*",
  ], storefront);

  // --- purchase and top-up -------------------------------------------------------------------
  app.post("/plans/:planId/purchase", async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const body = await readJson(c.req.raw, config.maxBodyBytes);
    return send(
      await service.purchase({
        seller: s,
        agent: a,
        action: "purchase",
        planId: c.req.param("planId"),
        body,
        headers: c.req.raw.headers,
      }),
    );
  });

  app.post("/extend", async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const body = await readJson(c.req.raw, config.maxBodyBytes);
    return send(await service.purchase({ seller: s, agent: a, action: "extend", body, headers: c.req.raw.headers }));
  });

  app.get("/payments/:reference", async (c) => {
    const ref = c.req.param("reference");
    if (!REFERENCE_RE.test(ref)) throw new AppError(404, "payment_unknown", "Payment reference matches no payment");
    const body = await service.paymentStatus(await seller(c), ref);
    return c.json(body, 200, { "cache-control": "no-store" });
  });

  // --- hosted checkout (a human's page; HTML errors stay minimal) -------------------------------
  const checkoutView = async (c: Context<AppEnv>, message?: string, status = 200) => {
    const s = await seller(c);
    const ref = c.req.param("reference") ?? "";
    const found = REFERENCE_RE.test(ref) ? await service.checkout(s, ref) : null;
    if (!found) return c.html("<!doctype html><title>Not found</title><p>Unknown checkout.</p>", 404, CHECKOUT_HEADERS);
    const html = checkoutPage(s.name, found.record, found.state, found.plan, {
      sandbox: commerce.processor.name === "sandbox",
      message,
    });
    return c.html(html, status as 200, CHECKOUT_HEADERS);
  };
  app.get("/checkout/:reference", (c) => checkoutView(c));
  app.post("/checkout/:reference", async (c) => {
    const s = await seller(c);
    const ref = c.req.param("reference");
    if (!REFERENCE_RE.test(ref)) return checkoutView(c);
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
      return c.html("<!doctype html><p>Submit the checkout form.</p>", 415, CHECKOUT_HEADERS);
    }
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, 16 * 1024)));
    const action = form.get("action") === "cancel" ? "cancel" : "pay";
    const token = (form.get("token") ?? "").trim();
    if (action === "pay" && (token.length === 0 || token.length > 512)) {
      return checkoutView(c, "Enter a card payment token.", 400);
    }
    let result;
    try {
      result = await service.completeCheckout(s, ref, action, token);
    } catch (err) {
      if (err instanceof AppError && err.code === "payment_unknown") return checkoutView(c);
      throw err;
    }
    const message = result.state === "failed"
      ? `Declined: ${result.settlementReason ?? "the payment did not settle"}.`
      : result.retry
      ? "The payment could not be completed; try again."
      : undefined;
    return checkoutView(c, message);
  });

  // --- entitlements -------------------------------------------------------------------------------
  const networkView = async (c: Context<AppEnv>) => {
    // The network view spans every seller; on a network host of its own no seller answers, so the
    // agent middleware is given a placeholder instead of a 404.
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    const here = await deps.storefront.sellers.resolve(host, config.storefront.defaultSellerId);
    c.set("seller", here ?? { sellerId: "", tenantId: "", name: "network", hosts: [], createdAt: "" });
    const a = await agent(c);
    return c.json(await service.entitlementsEverywhere(a), 200, { "cache-control": "no-store" });
  };
  const sellerView = async (c: Context<AppEnv>) => {
    const s = await seller(c);
    const a = await agent(c);
    return c.json(await service.entitlementsHere(s, a), 200, { "cache-control": "no-store" });
  };
  if (networkPath === "/agent/entitlements") {
    // The network API has a host of its own: tell the two views apart by Host.
    app.get("/agent/entitlements", (c) => c.req.header("host") === networkUrl.host ? networkView(c) : sellerView(c));
  } else {
    app.get(networkPath, networkView);
    app.get("/agent/entitlements", sellerView);
  }

  // --- catalog documents ---------------------------------------------------------------------------
  const snapshot = async (c: Context<AppEnv>) => {
    const s = await seller(c);
    const plans = await service.sellingPlans(s);
    return {
      seller: s,
      services: await commerce.catalog.services(s),
      plans,
      agentAuthUrl: config.agentAuthUrl,
      networkApiUrl: config.networkApiUrl,
      processor: commerce.processor.name,
    };
  };
  app.get("/services", async (c) => c.json(servicesDocument(await snapshot(c))));
  app.get("/manifest.json", async (c) => c.json(manifestDocument(await snapshot(c))));
  app.get(
    "/llms.txt",
    async (c) => c.text(llmsTxt(await snapshot(c)), 200, { "content-type": "text/plain; charset=UTF-8" }),
  );
  app.get(
    "/llms-full.txt",
    async (c) => c.text(llmsFullTxt(await snapshot(c)), 200, { "content-type": "text/plain; charset=UTF-8" }),
  );

  // --- allowance (server side of the payproxy contract) ------------------------------------------
  app.post("/internal/allowance", async (c) => {
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
    let q: { agentId?: unknown; serviceSlug?: unknown; usage?: unknown };
    try {
      q = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    } catch (err) {
      throw new AppError(400, "invalid_request", "Body malformed", { cause: err });
    }
    if (
      typeof q !== "object" || q === null || typeof q.agentId !== "string" || typeof q.serviceSlug !== "string" ||
      !Array.isArray(q.usage)
    ) {
      throw new AppError(400, "invalid_request", "Body must be {agentId, serviceSlug, usage}");
    }
    // The agent in the body is the one the signature covers.
    if (q.agentId !== agentHeader) throw new AppError(400, "invalid_request", "agentId differs from zc-agent-id");
    let quantity = 0;
    for (const u of q.usage as unknown[]) {
      const line = u as { meterSlug?: unknown; quantity?: unknown };
      if (line?.meterSlug !== "query" || !Number.isSafeInteger(line.quantity) || (line.quantity as number) < 0) {
        return c.json({ allowed: false });
      }
      quantity += line.quantity as number;
    }
    const allowed = q.agentId !== "" && await service.allowance(sellerId, q.agentId, q.serviceSlug, quantity);
    return c.json({ allowed });
  });

  // --- the paid proxy ------------------------------------------------------------------------------
  app.post("/v2/search", async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const url = new URL(c.req.url);
    const dm = url.searchParams.get("data_model_id");
    if (!dm) throw new AppError(400, "invalid_request", "data_model_id is required");
    const body = await readBodyCapped(c.req.raw, config.maxBodyBytes);
    return await proxy.call({
      seller: s,
      agent: a,
      kind: "search",
      modelId: dm,
      pathAndQuery: `/payproxy/v2/search${url.search}`,
      body,
      headers: c.req.raw.headers,
    });
  });

  app.post("/aimodel/:id", async (c) => {
    const s = await seller(c);
    const a = await agent(c);
    const url = new URL(c.req.url);
    const rawId = url.pathname.slice("/aimodel/".length);
    const body = await readBodyCapped(c.req.raw, config.maxBodyBytes);
    return await proxy.call({
      seller: s,
      agent: a,
      kind: "aimodel",
      modelId: c.req.param("id"),
      pathAndQuery: `/payproxy/aimodel/${rawId}${url.search}`,
      body,
      headers: c.req.raw.headers,
    });
  });

  return app;
}
