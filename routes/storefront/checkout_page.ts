/** The hosted card checkout page a human pays on (server-rendered, no script). */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { displayUsd, SANDBOX_TOKENS } from "../../core/commerce/mod.ts";
import { styleHashSource } from "../inline_style.ts";
import { pageSecurity } from "../middleware/page_security.ts";
import type { PaymentRecord, PaymentState, Plan } from "../../core/commerce/mod.ts";

const STYLE =
  `*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#1b1f24;background:#fafbfc}
main{max-width:32rem;margin:0 auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:1.5rem}
h1{font-size:1.4rem;margin:0 0 .5rem}label,input,button{display:block;width:100%;max-width:100%;margin:.5rem 0}
input,button{padding:.6rem .75rem;font:inherit;border-radius:6px}input{border:1px solid #57606a}
button{cursor:pointer;border:1px solid #1b1f24;background:#f6f8fa;color:#1b1f24}
#pay-button{background:#0b5cad;border-color:#0b5cad;color:#fff;font-weight:600}
#cancel-button{background:#fff}#message{padding:.6rem .75rem;border-radius:6px;background:#fff1f0;border:1px solid #b42318;color:#8a1c12}
:focus-visible{outline:3px solid #0b5cad;outline-offset:2px}code{font:14px ui-monospace,monospace;overflow-wrap:anywhere}
.muted{color:#57606a;font-size:.9rem}`;

/** The page is never cached (its URL and its state are the payer's). */
export const CHECKOUT_HEADERS: Record<string, string> = { "cache-control": "no-store" };

/** Security headers of the page (hono/secure-headers): no framing, no script, only its own style. */
export const CHECKOUT_SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    styleSrc: [styleHashSource(STYLE)],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  frameOptions: "DENY",
  // The page URL is a secret: no Referer leaves our origin (same-origin keeps the Origin header on POSTs).
  referrerPolicy: "same-origin",
});

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A minimal page around `inner`, which is the page's main landmark. */
export const checkoutShell = (title: string, inner: Html): Html =>
  html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width,initial-scale=1">
        <title>${title}</title>
        <style>${raw(STYLE)}</style>
      </head>
      <body>
        <main>${inner}</main>
      </body>
    </html>
  `;

const DONE: Record<string, string> = {
  paid: "Payment complete. You can close this page; your agent will finish the purchase.",
  consumed: "Payment complete and used by your agent.",
  failed: "This checkout has ended after repeated declines. Ask your agent to start again.",
  released: "This checkout was cancelled or has expired.",
  refunded: "This payment was refunded.",
  processing: "The payment is being processed. Reload in a moment.",
};

/**
 * The page for a checkout in `state`. `message` explains the last attempt (a decline, a retry);
 * `csrf` goes into both forms (the route checks it against its cookie).
 */
export function checkoutPage(
  sellerName: string,
  record: PaymentRecord,
  state: PaymentState,
  plan: Plan | null,
  opts: { sandbox: boolean; csrf: string; message?: string; retryable?: boolean },
): Html {
  const amount = displayUsd(record.amountMicros);
  const what = `${plan?.name ?? record.terms.planId} (${record.terms.action})`;
  const head = html`
    <h1>${sellerName}</h1>
    <p>${what}: <strong id="amount">${amount}</strong></p>
  `;
  const note = opts.message ? html`<p id="message" role="alert">${opts.message}</p>` : "";
  // A charge stuck past the grace period may be paid again (the processor charges a reference
  // once) or cancelled: without the forms the human could only reload until the checkout expired.
  const retry = state === "processing" && opts.retryable === true;
  if (state !== "open" && !retry) {
    return checkoutShell(
      "Checkout",
      html`${head}${note}<p id="state" data-state="${state}">${DONE[state] ?? state}</p>`,
    );
  }
  const hint = opts.sandbox
    ? html`<p class="muted">Sandbox: use card token <code>${SANDBOX_TOKENS.card.success}</code> to pay, <code>${SANDBOX_TOKENS.card.insufficientFunds}</code> for a decline.</p>`
    : "";
  return checkoutShell(
    "Checkout",
    html`${head}${note}${
      retry
        ? html`
          <p id="state"
            data-state="processing">The last payment attempt did not finish. Pay again (a card is charged once for this checkout) or cancel.</p>
        `
        : html`<p id="state" data-state="open">An agent asks you to pay for this plan.</p>`
    }
<form method="post" id="pay"><input type="hidden" name="csrf" value="${opts.csrf}">
<label for="token">Card payment token</label>
<input id="token" name="token" autocomplete="off" required maxlength="512">
<button type="submit" name="action" value="pay" id="pay-button">Pay ${amount}</button></form>
<form method="post" id="cancel"><input type="hidden" name="csrf" value="${opts.csrf}">
<button type="submit" name="action" value="cancel" id="cancel-button">Cancel</button></form>${hint}`,
  );
}
