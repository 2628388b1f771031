import type { Context } from "hono";
import { storefrontAddressLimit } from "./address_limit.ts";
import { html } from "hono/html";
import { type Html, humanPage } from "./human_page.ts";
import type { Deps } from "../../composition.ts";
import { type ClaimPageState, timeLeftText } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { familyApp } from "../family.ts";
import { FormCsrf } from "../middleware/form_csrf.ts";
import { pageSecurity } from "../middleware/page_security.ts";
import { styleHashSource } from "../inline_style.ts";

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}.code{font:700 2.2rem/1.2 ui-monospace,monospace;letter-spacing:.15em;padding:.6rem 1rem;
border:2px solid #1b1b1b;border-radius:.5rem;display:inline-block}form{display:inline}
input{font:700 1.3rem ui-monospace,monospace;letter-spacing:.1em;padding:.4rem .6rem;width:11rem;text-transform:uppercase}
button{font:inherit;padding:.5rem 1.2rem;margin:.3rem .5rem .3rem 0;border-radius:.4rem;border:1px solid #555;cursor:pointer}
button.primary{background:#1b1b1b;color:#fff}.muted{color:#555}.error{color:#a00000}`;

/**
 * Security headers of every claim page (hono/secure-headers): only its own style (by hash), no
 * script, no framing, forms to this origin. Referrer same-origin, not no-referrer: with no-referrer
 * Chromium sends `Origin: null` on the form POST.
 */
const SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    styleSrc: [styleHashSource(STYLE)],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  referrerPolicy: "same-origin",
  frameOptions: "DENY",
});

const page = (title: string, body: Html): Html => humanPage(title, STYLE, body);

/** The page for every state that offers no form. */
function stateBody(state: ClaimPageState): { status: number; html: Html } {
  switch (state.kind) {
    case "unknown":
      return {
        status: 404,
        html: page(
          "Link not valid",
          html`
            <h1>This link is not valid</h1>
            <p>It may have been replaced by a newer e-mail. Use the most recent link, or ask your agent to start again.</p>
          `,
        ),
      };
    case "expired":
      return {
        status: 410,
        html: page(
          "Link expired",
          html`
            <h1>This link has expired</h1>
            <p>Ask your agent to send a new one.</p>
          `,
        ),
      };
    case "locked":
      return {
        status: 403,
        html: page(
          "Too many tries",
          html`
            <h1>Too many wrong codes</h1>
            <p>This link is locked. Ask your agent to send a new e-mail.</p>
          `,
        ),
      };
    case "proven":
      return {
        status: 409,
        html: page(
          "Code already used",
          html`
            <h1>The code from the e-mail was already used</h1>
            <p>Continue in the window where you entered it, or ask your agent to send a new e-mail.</p>
          `,
        ),
      };
    case "confirmed":
      return {
        status: 200,
        html: page(
          "Already confirmed",
          html`
            <h1>Already confirmed</h1>
            <p>The code was shown when you confirmed. If you no longer have it, ask your agent to send a new e-mail.</p>
          `,
        ),
      };
    case "denied":
      return {
        status: 200,
        html: page(
          "Denied",
          html`
            <h1>Request denied</h1>
            <p>The agent was not linked to your address.</p>
          `,
        ),
      };
    case "completed":
      return {
        status: 200,
        html: page(
          "Done",
          html`
            <h1>All done</h1>
            <p>The agent is linked to your address.</p>
          `,
        ),
      };
    case "pending":
      // Callers render the code form for this state.
      return { status: 200, html: page("Confirm", html`<h1>Enter the code from the e-mail</h1>`) };
  }
}

/**
 * The claim page a human opens from the e-mail. The link alone proves nothing (the agent got the
 * same link from the API), so the page works in three steps:
 *   1. `GET /claim/{link}` asks for the verification code that was sent only in the e-mail;
 *   2. `POST` with `mail_code` checks it (single-use, a few tries) and shows Confirm and Deny with a
 *      proof bound to this browser's form;
 *   3. `POST` with `decision` and that proof records the decision and, on confirm, shows the user
 *      code once.
 * CSRF: a double-submit token (HttpOnly SameSite=Strict cookie + hidden field, compared in
 * constant time) and, when the browser sends one, an `Origin` that must be ours.
 */
export function createClaimPageRoutes(deps: Pick<Deps, "config" | "storefront" | "log">) {
  const app = familyApp("storefront", deps.log);
  const { claims, sellers } = deps.storefront;
  const csrfGuard = new FormCsrf({
    cookie: "claim_csrf",
    path: "/claim/",
    secure: deps.config.agentAuthUrl.startsWith("https:"),
    trustedOrigins: [new URL(deps.config.agentAuthUrl).origin],
  });

  // Counted with the identity and claim API calls: a flood of page loads or code submits from one place is 429.
  const limit = storefrontAddressLimit(deps);

  const send = (c: Context<AppEnv>, status: number, body: Html) => {
    c.header("Cache-Control", "no-store");
    return c.html(body, status as 200);
  };
  const timeLeft = (expiresAt: string) => timeLeftText(Date.parse(expiresAt) - claims.now().getTime());
  const sellerName = async (sellerId: string) => (await sellers.get(sellerId))?.name ?? "this storefront";

  const codeForm = async (
    link: string,
    csrf: string,
    state: { email: string; sellerId: string; expiresAt: string },
    error?: string,
  ) => {
    return page(
      "Verify your e-mail",
      html`<h1>Link an AI agent to ${state.email}?</h1>
<p>An AI agent at <b>${await sellerName(state.sellerId)}</b> asked to act for this address.</p>
<p>To continue, enter the verification code we sent to <b>${state.email}</b>.</p>
${error ? html`<p class="error" id="error" role="alert">${error}</p>` : ""}
<form method="post" action="/claim/${link}" id="verify"><input type="hidden" name="csrf" value="${csrf}">
<label for="mail-code">Verification code</label><br>
<input id="mail-code" name="mail_code" autocomplete="one-time-code" required maxlength="16" placeholder="XXXX-XXXX">
<button class="primary" type="submit">Continue</button></form>
<p class="muted">This link expires in ${timeLeft(state.expiresAt)}.</p>`,
    );
  };

  app.get("/:link", SECURITY, limit, async (c) => {
    const link = c.req.param("link");
    const state = await claims.pageState(link);
    if (state.kind !== "pending") {
      const { status, html } = stateBody(state);
      return send(c, status, html);
    }
    const csrf = csrfGuard.issue(c);
    return send(c, 200, await codeForm(link, csrf, state));
  });

  app.post("/:link", SECURITY, limit, async (c) => {
    const link = c.req.param("link");
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, 4096)));
    const csrf = form.get("csrf") ?? "";
    if (!csrfGuard.check(c, csrf)) {
      return send(
        c,
        403,
        page(
          "Please try again",
          html`
            <h1>This form has expired</h1>
            <p>Open the link from the e-mail again.</p>
          `,
        ),
      );
    }

    const mailCode = form.get("mail_code");
    if (mailCode !== null) {
      const r = await claims.proveMailbox(link, mailCode);
      if (r.kind === "wrong_mail_code") {
        const tries = `${r.triesLeft} ${r.triesLeft === 1 ? "try" : "tries"} left`;
        return send(c, 400, await codeForm(link, csrf, r, `That code is not right (${tries}).`));
      }
      if (r.kind !== "mail_proven") {
        const { status, html } = stateBody(r);
        return send(c, status, html);
      }
      return send(
        c,
        200,
        page(
          "Confirm your agent",
          html`
            <h1>Link an AI agent to ${r.email}?</h1>
            <p>Your e-mail address is verified. An AI agent at <b>${await sellerName(
              r.sellerId,
            )}</b> asked to act for this
            address. Confirm only if you asked it to.</p>
            <form method="post" action="/claim/${link}"
              id="confirm"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="proof" value="${r
                .proof}"><input type="hidden" name="decision" value="confirm"><button class="primary" type="submit">Confirm</button></form>
            <form method="post" action="/claim/${link}"
              id="deny"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="proof" value="${r
                .proof}"><input type="hidden" name="decision" value="deny"><button type="submit">Deny</button></form>
            <p class="muted">This link expires in ${timeLeft(r.expiresAt)}.</p>
          `,
        ),
      );
    }

    const decision = form.get("decision");
    if (decision !== "confirm" && decision !== "deny") {
      return send(c, 400, page("Please try again", html`<h1>Choose confirm or deny</h1>`));
    }
    const result = await claims.decide(link, decision, form.get("proof") ?? "");
    if (result.kind === "proof_required") {
      return send(
        c,
        403,
        page(
          "Verify your e-mail first",
          html`
            <h1>Enter the code from the e-mail first</h1>
            <p>Open the link from the e-mail and enter its verification code.</p>
          `,
        ),
      );
    }
    if (result.kind === "code") {
      return send(
        c,
        200,
        page(
          "Your code",
          html`
            <h1>Confirmed</h1>
            <p>Give this code to your agent:</p>
            <p class="code" id="user-code">${result.userCode}</p>
            <p class="muted">It is shown only once and expires in ${timeLeft(result.expiresAt)}.</p>
          `,
        ),
      );
    }
    const { status, html: body } = stateBody(result);
    return send(c, status, body);
  });
  return app;
}
