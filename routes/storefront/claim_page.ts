import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { Deps } from "../../core/deps.ts";
import { base64url, randomBytes, timingSafeEqual } from "../../core/crypto.ts";
import { type ClaimPageState, escapeHtml } from "../../core/storefront/claims.ts";
import type { AppEnv } from "../env.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { createStorefrontRouter } from "./json_body.ts";

const CSRF_COOKIE = "claim_csrf";
const CSRF_RE = /^[A-Za-z0-9_-]{43}$/;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}.code{font:700 2.2rem/1.2 ui-monospace,monospace;letter-spacing:.15em;padding:.6rem 1rem;
border:2px solid #1b1b1b;border-radius:.5rem;display:inline-block}form{display:inline}
button{font:inherit;padding:.5rem 1.2rem;margin:.3rem .5rem .3rem 0;border-radius:.4rem;border:1px solid #555;cursor:pointer}
button.primary{background:#1b1b1b;color:#fff}.muted{color:#555}
</style></head><body>${body}</body></html>`;
}

function stateBody(state: ClaimPageState, sellerName = "this storefront"): { status: number; html: string } {
  switch (state.kind) {
    case "unknown":
      return {
        status: 404,
        html: page(
          "Link not valid",
          "<h1>This link is not valid</h1><p>It may have been replaced by a newer e-mail. Use the most recent link, or ask your agent to start again.</p>",
        ),
      };
    case "expired":
      return {
        status: 410,
        html: page("Link expired", "<h1>This link has expired</h1><p>Ask your agent to send a new one.</p>"),
      };
    case "confirmed":
      return {
        status: 200,
        html: page(
          "Already confirmed",
          "<h1>Already confirmed</h1><p>The code was shown when you confirmed. If you no longer have it, ask your agent to send a new e-mail.</p>",
        ),
      };
    case "denied":
      return {
        status: 200,
        html: page("Denied", "<h1>Request denied</h1><p>The agent was not linked to your address.</p>"),
      };
    case "completed":
      return { status: 200, html: page("Done", "<h1>All done</h1><p>The agent is linked to your address.</p>") };
    case "pending":
      return {
        status: 200,
        html: page(
          "Confirm",
          `<h1>Link an AI agent to ${escapeHtml(state.email)}?</h1><p>An agent at ${escapeHtml(sellerName)}</p>`,
        ),
      };
  }
}

/**
 * The claim page a human opens from the e-mail: `GET /claim/{link}` shows confirm and deny
 * buttons; `POST /claim/{link}` records the decision and, on confirm, shows the user code once.
 * CSRF: a double-submit token (HttpOnly SameSite=Strict cookie + hidden field, compared in
 * constant time) and, when the browser sends one, an `Origin` that must be ours.
 */
export function createClaimPageRoutes(deps: Pick<Deps, "config" | "storefront">) {
  const app = createStorefrontRouter();
  const { claims, sellers } = deps.storefront;
  const secure = deps.config.agentAuthUrl.startsWith("https:");
  const ourOrigin = new URL(deps.config.agentAuthUrl).origin;

  const send = (c: Context<AppEnv>, status: number, html: string) => {
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    c.header("X-Frame-Options", "DENY");
    c.header(
      "Content-Security-Policy",
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    );
    return c.html(html, status as 200);
  };

  app.get("/claim/:link", async (c) => {
    const link = c.req.param("link");
    const state = await claims.pageState(link);
    if (state.kind !== "pending") {
      const { status, html } = stateBody(state);
      return send(c, status, html);
    }
    const seller = await sellers.get(state.sellerId);
    const csrf = base64url(randomBytes(32));
    setCookie(c, CSRF_COOKIE, csrf, { path: "/claim/", httpOnly: true, sameSite: "Strict", secure, maxAge: 3600 });
    const action = `/claim/${encodeURIComponent(link)}`;
    const minutes = Math.max(
      1,
      Math.round((Date.parse(state.expiresAt) - deps.storefront.claims.now().getTime()) / 60_000),
    );
    const html = page(
      "Confirm your agent",
      `<h1>Link an AI agent to ${escapeHtml(state.email)}?</h1>
<p>An AI agent at <b>${
        escapeHtml(seller?.name ?? "this storefront")
      }</b> asked to act for this address. Confirm only if you asked it to.</p>
<p class="muted">This link expires in about ${minutes} minute${minutes === 1 ? "" : "s"}.</p>
<form method="post" action="${
        escapeHtml(action)
      }"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="decision" value="confirm"><button class="primary" type="submit">Confirm</button></form>
<form method="post" action="${
        escapeHtml(action)
      }"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="decision" value="deny"><button type="submit">Deny</button></form>`,
    );
    return send(c, 200, html);
  });

  app.post("/claim/:link", async (c) => {
    const link = c.req.param("link");
    const origin = c.req.header("origin");
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, 4096)));
    const field = form.get("csrf") ?? "";
    const cookie = getCookie(c, CSRF_COOKIE) ?? "";
    const sameOrigin = origin === undefined || origin === ourOrigin || origin === new URL(c.req.url).origin;
    if (!sameOrigin || !CSRF_RE.test(field) || !timingSafeEqual(field, cookie)) {
      return send(
        c,
        403,
        page("Please try again", "<h1>This form has expired</h1><p>Open the link from the e-mail again.</p>"),
      );
    }
    const decision = form.get("decision");
    if (decision !== "confirm" && decision !== "deny") {
      return send(c, 400, page("Please try again", "<h1>Choose confirm or deny</h1>"));
    }
    const result = await claims.decide(link, decision);
    if (result.kind === "code") {
      return send(
        c,
        200,
        page(
          "Your code",
          `<h1>Confirmed</h1><p>Give this code to your agent:</p><p class="code" id="user-code">${
            escapeHtml(result.userCode)
          }</p>
<p class="muted">It is shown only once and expires in ${
            Math.round(deps.config.storefront.claimTtlS / 60)
          } minutes.</p>`,
        ),
      );
    }
    const { status, html } = stateBody(result);
    return send(c, status, html);
  });
  return app;
}
