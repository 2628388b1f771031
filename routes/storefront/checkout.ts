import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { z } from "zod";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import { commerceErrors as errors } from "../../core/commerce/mod.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { documented } from "../openapi.ts";
import { html } from "hono/html";
import { FormCsrf } from "../middleware/form_csrf.ts";
import { CHECKOUT_HEADERS, CHECKOUT_SECURITY, checkoutPage, checkoutShell } from "./checkout_page.ts";
import { commerceParties, REFERENCE_RE } from "./commerce_agent.ts";
import { errorResponse, jsonResponse } from "./schemas.ts";
import { hitPublicRead, PUBLIC_READS_LIMITED_DOC, publicReadLimit } from "./public_reads.ts";

const paymentRoute: RouteConfig = {
  method: "get",
  path: "/{reference}",
  tags: ["storefront"],
  summary: "Status of a payment reference (the card lane's statusUrl)",
  request: { params: z.object({ reference: z.string() }) },
  responses: {
    200: jsonResponse("Payment state"),
    404: errorResponse("payment_unknown"),
    429: errorResponse(PUBLIC_READS_LIMITED_DOC),
  },
};

const checkoutRoute: RouteConfig = {
  method: "get",
  path: "/{reference}",
  tags: ["storefront"],
  summary: "Hosted checkout page where a human pays (HTML form)",
  request: { params: z.object({ reference: z.string() }) },
  responses: {
    200: { description: "HTML page" },
    429: {
      description: "Too many requests from this client address this minute (a minimal HTML page, `Retry-After`)",
    },
  },
};

/**
 * The card lane: `GET /payments/{reference}` (mounted at `/payments`, the agent polls it) and the
 * hosted checkout page a human pays on, `GET` and `POST /checkout/{reference}` (mounted at
 * `/checkout`; a human's page, so its errors stay minimal HTML).
 */
export function createCheckoutRoutes(
  deps: Pick<Deps, "config" | "storefront" | "commerce" | "log" | "publicReadLimiter">,
): { payments: OpenAPIHono<AppEnv>; checkout: OpenAPIHono<AppEnv> } {
  const { seller } = commerceParties(deps);
  const { service, processor } = deps.commerce;

  const payments = familyApp("storefront", deps.log);
  // Agents poll it (a poll a second is well within the limit); a flood from one address is refused.
  documented(payments, paymentRoute, publicReadLimit(deps, "payments"), async (c) => {
    const ref = c.req.param("reference") ?? "";
    if (!REFERENCE_RE.test(ref)) throw errors.payment_unknown();
    const body = await service.paymentStatus(await seller(c), ref);
    return c.json(body, 200, { "cache-control": "no-store" });
  });

  const checkout = familyApp("storefront", deps.log);
  // The page's forms carry a CSRF token bound to a cookie; POSTs also check Origin.
  const checkoutCsrf = new FormCsrf({
    cookie: "checkout_csrf",
    path: "/checkout/",
    secure: deps.config.agentAuthUrl.startsWith("https:"),
  });
  const checkoutView = async (c: Context<AppEnv>, message?: string, status = 200) => {
    const s = await seller(c);
    const ref = c.req.param("reference") ?? "";
    const found = REFERENCE_RE.test(ref) ? await service.checkout(s, ref) : null;
    if (!found) return c.html(checkoutShell("Not found", html`<p>Unknown checkout.</p>`), 404, CHECKOUT_HEADERS);
    const page = checkoutPage(s.name, found.record, found.state, found.plan, {
      sandbox: processor.name === "sandbox",
      csrf: checkoutCsrf.issue(c),
      message,
      retryable: found.retryable,
    });
    return c.html(page, status as 200, CHECKOUT_HEADERS);
  };
  // Page loads and submits (pay and cancel) per client address; a human's page, so the 429 is HTML too.
  const pageLimit: MiddlewareHandler<AppEnv> = async function checkoutPageLimit(c, next) {
    const hit = await hitPublicRead(deps, "checkout", c);
    if (hit.allowed) return await next();
    c.header("Retry-After", String(hit.retryAfterS));
    return c.html(
      checkoutShell("Too many requests", html`<p>Too many requests from this address: try again later.</p>`),
      429,
      CHECKOUT_HEADERS,
    );
  };
  documented(checkout, checkoutRoute, CHECKOUT_SECURITY, pageLimit, (c) => checkoutView(c));
  checkout.post("/:reference", CHECKOUT_SECURITY, pageLimit, async (c) => {
    const s = await seller(c);
    const ref = c.req.param("reference");
    if (!REFERENCE_RE.test(ref)) return checkoutView(c);
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
      return c.html(checkoutShell("Checkout", html`<p>Submit the checkout form.</p>`), 415, CHECKOUT_HEADERS);
    }
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, 16 * 1024)));
    // Cross-site or tokenless submits change nothing (pay and cancel alike).
    if (!checkoutCsrf.check(c, form.get("csrf"))) {
      return checkoutView(c, "This form has expired: submit it again from this page.", 403);
    }
    const action = form.get("action") === "cancel" ? "cancel" : "pay";
    const token = (form.get("token") ?? "").trim();
    if (action === "pay" && (token.length === 0 || token.length > 512)) {
      return checkoutView(c, "Enter a card payment token.", 400);
    }
    if (action === "pay") {
      const hit = await service.checkoutLane.cardAttempt(limitAddress(c, deps.config.trustProxy));
      if (!hit.allowed) {
        c.header("Retry-After", String(hit.retryAfterS));
        return checkoutView(c, "Too many card attempts from this address: try again later.", 429);
      }
    }
    let result;
    try {
      result = await service.completeCheckout(s, ref, action, token);
    } catch (err) {
      if (err instanceof AppError && err.code === "payment_unknown") return checkoutView(c);
      throw err;
    }
    const declined = `Declined: ${result.settlementReason ?? "the payment did not settle"}.`;
    const message = result.state === "failed"
      ? declined // the page's state line says the checkout has ended
      : result.triesLeft !== undefined
      ? `${declined} Try another card (${result.triesLeft} ${result.triesLeft === 1 ? "try" : "tries"} left).`
      : result.retry
      ? "The payment could not be completed; try again."
      : undefined;
    return checkoutView(c, message);
  });
  return { payments, checkout };
}
