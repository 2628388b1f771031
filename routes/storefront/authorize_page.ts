import type { Context } from "hono";
import { html } from "hono/html";
import { type Html, humanPage } from "./human_page.ts";
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import { type AuthorizationRequest, redirectsUnasked, type Seller } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { FormCsrf } from "../middleware/form_csrf.ts";
import { pageSecurity } from "../middleware/page_security.ts";
import { styleHashSource } from "../inline_style.ts";
import { sellerOf } from "./seller.ts";
import { documented } from "../openapi.ts";

const authorizeRoute = createRoute({
  method: "get",
  path: "/authorize",
  tags: ["storefront"],
  summary: "OAuth 2.1 authorization endpoint: the consent page where a human connects an MCP client",
  description: "`response_type=code`, `client_id` (from /oauth2/register), `redirect_uri` (exactly as registered), " +
    "`code_challenge` with `code_challenge_method=S256`, `state`, optional `resource` (the MCP endpoint, the " +
    "default, or the storefront). The human chooses an anonymous agent identity or a claimed one (e-mailed code); " +
    "the page then redirects to the client with `code` and `state`, or `error`.",
  responses: {
    200: { description: "The consent page (HTML)" },
    303: { description: "Back to the client's redirect URI with error and state (a request it can fix)" },
    400: { description: "Unknown client or unregistered redirect URI: shown here, never redirected" },
    429: {
      description: "`rate_limit_exceeded`: too many requests from this client address (`STOREFRONT_RATE_LIMIT`); " +
        "`retry_after` and `Retry-After` say when to try again",
    },
  },
});

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}fieldset{border:1px solid #bbb;border-radius:.5rem;margin:1rem 0;padding:.8rem 1rem}
input{font:inherit;padding:.4rem .6rem;width:16rem}input.code{font:700 1.3rem ui-monospace,monospace;
letter-spacing:.1em;width:11rem;text-transform:uppercase}button{font:inherit;padding:.5rem 1.2rem;
margin:.3rem .5rem .3rem 0;border-radius:.4rem;border:1px solid #555;cursor:pointer}
button.primary{background:#1b1b1b;color:#fff}.muted{color:#555}.error{color:#a00000}`;

const page = (title: string, body: Html): Html => humanPage(title, STYLE, body);

/** What the page shows about the asking application. */
interface Asking {
  clientName: string;
  redirectHost: string;
  sellerName: string;
}

const errorLine = (error?: string) => error ? html`<p class="error" id="error" role="alert">${error}</p>` : "";

/** The first step: anonymous identity, a claimed one by e-mail, or deny. */
function choiceBody(a: Asking, form: { csrf: string; request: string }, error?: string): Html {
  const hidden =
    html`<input type="hidden" name="csrf" value="${form.csrf}"><input type="hidden" name="request" value="${form.request}">`;
  return page(
    "Connect an AI application",
    html`
      <h1>${a.clientName} wants to act as your agent at ${a.sellerName}</h1>
      <p>It will search and ask on your behalf, paying from the plans of the identity you choose. After you decide,
      you are sent back to <b>${a.redirectHost}</b>.</p>
      ${errorLine(error)}
      <fieldset>
        <legend>Anonymous</legend>
        <p
          class="muted">A new agent identity with no e-mail. It expires after a few days; plans bought with it die with it.</p>
        <form method="post" action="/oauth2/authorize"
          id="anonymous">${hidden}<input type="hidden" name="action" value="anonymous">
      <button class="primary" type="submit">Continue anonymously</button></form>
      </fieldset>
      <fieldset>
        <legend>Your e-mail</legend>
        <p class="muted">Plans and credit of every agent you claimed with this address carry over. We e-mail you a code.</p>
        <form method="post" action="/oauth2/authorize" id="claim">${hidden}<input type="hidden" name="action" value="email">
      <label for="email">E-mail address</label><br>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
      <button type="submit">Send the code</button></form>
      </fieldset>
      <form method="post" action="/oauth2/authorize" id="deny">${hidden}<input type="hidden" name="action" value="deny">
      <button type="submit">Deny</button></form>
    `,
  );
}

/** The second step of the claimed path: the code from the e-mail. */
function codeBody(a: Asking, form: { csrf: string; request: string }, email: string, error?: string): Html {
  const hidden =
    html`<input type="hidden" name="csrf" value="${form.csrf}"><input type="hidden" name="request" value="${form.request}">`;
  return page(
    "Enter the code from the e-mail",
    html`<h1>Check your mailbox</h1>
<p>We sent a verification code to <b>${email}</b>. Enter it to connect ${a.clientName} as your agent.</p>
${errorLine(error)}
<form method="post" action="/oauth2/authorize" id="verify">${hidden}<input type="hidden" name="action" value="code">
<label for="mail-code">Verification code</label><br>
<input class="code" id="mail-code" name="mail_code" autocomplete="one-time-code" required maxlength="16" placeholder="XXXX-XXXX">
<button class="primary" type="submit">Connect</button></form>
<form method="post" action="/oauth2/authorize" id="deny">${hidden}<input type="hidden" name="action" value="deny">
<button type="submit">Deny</button></form>`,
  );
}

/** A request error for a client whose redirect URI we do not follow unasked: the human chooses to go back. */
function returnBody(message: string, location: string, host: string): Html {
  return page(
    "This request cannot go on",
    html`
      <h1>This request cannot go on</h1>
      <p id="message">The application sent a request we cannot accept: ${message}.</p>
      <p><a id="return" href="${location}">Return to ${host}</a></p>
    `,
  );
}

function messageBody(title: string, message: string): Html {
  return page(
    title,
    html`
      <h1>${title}</h1>
      <p id="message">${message}</p>
    `,
  );
}

/** The client's redirect URI with the response parameters (RFC 6749 4.1.2 and 4.1.2.1). */
function redirectTo(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.href;
}

/** The CSP source of a redirect URI, so the form may lead there (Chromium checks redirects against form-action). */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === "https:" || url.protocol === "http:" ? url.origin : url.protocol;
}

/** A page's form-action sources when its form's answer redirects to the client, set by the handler. */
const formActions = new WeakMap<Context, string>();

/** The page's security headers (hono/secure-headers), on every answer of its routes, errors included. */
const SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    styleSrc: [styleHashSource(STYLE)],
    baseUri: ["'none'"],
    formAction: [(c) => formActions.get(c) ?? "'self'"],
    frameAncestors: ["'none'"],
  },
  referrerPolicy: "same-origin",
  frameOptions: "DENY",
});

/**
 * `GET /authorize` and `POST /authorize` in the `/oauth2` family app: the OAuth 2.1 authorization
 * endpoint and the human's consent page. The client and its exact registered redirect URI are
 * checked before anything is sent back to it (no open redirect); other request errors go back to
 * the client with the state. The form is CSRF-safe (double-submit cookie and Origin check) and
 * framing is refused. The human chooses an anonymous agent identity or a claimed one, proven with
 * the code the existing claim flow e-mails; the decision is taken once per request.
 */
export function addAuthorizePage(app: OpenAPIHono<AppEnv>, deps: Pick<Deps, "config" | "storefront" | "log">): void {
  const { oauth, identity, claims } = deps.storefront;
  const csrfGuard = new FormCsrf({
    cookie: "oauth_csrf",
    path: "/oauth2/",
    secure: deps.config.agentAuthUrl.startsWith("https:"),
    trustedOrigins: [new URL(deps.config.agentAuthUrl).origin],
  });
  const send = (c: Context<AppEnv>, status: number, body: Html, redirectUri?: string) => {
    c.header("Cache-Control", "no-store");
    if (redirectUri) formActions.set(c, `'self' ${formTarget(redirectUri)}`);
    return c.html(body, status as 200);
  };
  const redirect = (c: Context<AppEnv>, location: string) => {
    c.header("Cache-Control", "no-store");
    return c.redirect(location, 303);
  };
  const asking = async (request: AuthorizationRequest | Omit<AuthorizationRequest, "expiresAt">, seller: Seller) => {
    const client = await oauth.clients.get(request.clientId);
    const redirect = new URL(request.redirectUri);
    // A metadata document's name is the client's own claim: the host it is served from goes beside it.
    const documentHost = request.clientId.startsWith("https://") ? new URL(request.clientId).host : null;
    const name = client?.clientName ?? "An application";
    return {
      clientName: documentHost ? `${name} (${documentHost})` : name,
      // An app scheme may carry any host (`com.evil.app://claude.ai/cb`): the app that opens is the scheme's.
      redirectHost: redirect.protocol === "https:" || redirect.protocol === "http:" ? redirect.host : redirect.protocol,
      sellerName: seller.name,
    };
  };

  documented(app, authorizeRoute, SECURITY, async (c) => {
    const seller = await sellerOf(c, deps);
    const checked = await oauth.checkAuthorization(new URL(c.req.url).searchParams);
    if ("kind" in checked) {
      if (checked.kind === "page") return send(c, 400, messageBody("This request cannot go on", checked.message));
      const location = redirectTo(checked.redirectUri, {
        error: checked.error.code,
        error_description: checked.error.message,
        state: checked.state,
      });
      if (redirectsUnasked(checked.redirectUri)) return redirect(c, location);
      const back = new URL(checked.redirectUri);
      return send(c, 400, returnBody(checked.error.message, location, back.host));
    }
    const request = await oauth.saveRequest(checked.request);
    const csrf = csrfGuard.issue(c);
    return send(
      c,
      200,
      choiceBody(await asking(checked.request, seller), { csrf, request }),
      checked.request.redirectUri,
    );
  });

  app.post("/authorize", SECURITY, async (c) => {
    const seller = await sellerOf(c, deps);
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, 4096)));
    const csrf = form.get("csrf") ?? "";
    if (!csrfGuard.check(c, csrf)) {
      return send(c, 403, messageBody("This form has expired", "Start again from the application."));
    }
    const requestId = form.get("request") ?? "";
    const entry = await oauth.loadRequest(requestId);
    if (!entry) {
      return send(c, 400, messageBody("This request has ended", "It expired or was already decided: start again."));
    }
    const request = entry.value;
    const a = await asking(request, seller);
    const ids = { csrf, request: requestId };
    const finish = async (credentialId: string | null) => {
      // One decision per request: a second submission of the form finds it gone.
      const taken = await oauth.takeRequest(requestId);
      if (!taken) return send(c, 400, messageBody("This request has ended", "It was already decided."));
      if (credentialId === null) {
        return redirect(c, redirectTo(taken.redirectUri, { error: "access_denied", state: taken.state }));
      }
      const code = await oauth.issueCode(taken, credentialId);
      return redirect(c, redirectTo(taken.redirectUri, { code, state: taken.state }));
    };
    // Our refusals (a bad address, too many e-mails, mail down) are shown on the page in our words.
    const shown = (err: unknown) => {
      if (err instanceof AppError && !err.serverSide || err instanceof AppError && err.code === "mail_unavailable") {
        return err.message;
      }
      throw err;
    };

    switch (form.get("action")) {
      case "deny":
        return await finish(null);
      case "anonymous": {
        try {
          const r = await identity.anonymous(seller);
          return await finish(r.identity.credential.credentialId);
        } catch (err) {
          return send(c, 400, choiceBody(a, ids, shown(err)), request.redirectUri);
        }
      }
      case "email": {
        const email = (form.get("email") ?? "").trim();
        try {
          const claim = await identity.serviceAuth(seller, email);
          const sent = await claims.requestVerification(claim.token, email, seller);
          const link = new URL(sent.verificationUri).pathname.split("/").pop()!;
          await oauth.attachClaim(requestId, { token: claim.token, link, email: claim.loginHint ?? email });
          return send(c, 200, codeBody(a, ids, claim.loginHint ?? email), request.redirectUri);
        } catch (err) {
          return send(c, 400, choiceBody(a, ids, shown(err)), request.redirectUri);
        }
      }
      case "code": {
        const claim = request.claim;
        if (!claim) return send(c, 400, choiceBody(a, ids, "Enter your e-mail address first"), request.redirectUri);
        const proved = await claims.proveMailbox(claim.link, form.get("mail_code") ?? "");
        if (proved.kind === "wrong_mail_code") {
          const tries = `${proved.triesLeft} ${proved.triesLeft === 1 ? "try" : "tries"} left`;
          return send(c, 400, codeBody(a, ids, claim.email, `That code is not right (${tries}).`), request.redirectUri);
        }
        if (proved.kind !== "mail_proven") {
          return send(c, 403, messageBody("This code can no longer be used", "Start again from the application."));
        }
        // The human proved the mailbox on this page: that is the claim's confirmation and its user code.
        const decided = await claims.decide(claim.link, "confirm", proved.proof);
        if (decided.kind !== "code") {
          return send(c, 409, messageBody("This claim was already decided", "Start again from the application."));
        }
        const done = await claims.complete(claim.token, decided.userCode);
        return await finish(done.credential.credentialId);
      }
      default:
        return send(c, 400, choiceBody(a, ids, "Choose one of the options"), request.redirectUri);
    }
  });
}
