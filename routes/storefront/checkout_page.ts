/** The hosted card checkout page a human pays on (server-rendered, no script). */
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { formatUsd } from "../../core/commerce/money.ts";
import type { PaymentRecord, PaymentState } from "../../core/commerce/payments.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import type { Plan } from "../../core/commerce/types.ts";

/** Security headers for the page: no framing, no scripts, no caching. */
export const CHECKOUT_HEADERS: Record<string, string> = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  // The page URL is a secret: no Referer leaves our origin (same-origin keeps the Origin header on POSTs).
  "referrer-policy": "same-origin",
};

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A minimal page around `inner`. */
export const checkoutShell = (title: string, inner: Html): Html =>
  html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width">
        <title>${title}</title>
        <style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}.box{border:1px solid #ccc;border-radius:8px;padding:1.5rem}label,input,button{display:block;width:100%;margin:.5rem 0}input,button{padding:.6rem;font:inherit}.muted{color:#666;font-size:.9rem}</style>
      </head>
      <body>${inner}</body>
    </html>
  `;

const DONE: Record<string, string> = {
  paid: "Payment complete. You can close this page; your agent will finish the purchase.",
  consumed: "Payment complete and used by your agent.",
  failed: "The payment was declined. Ask your agent to start again.",
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
  opts: { sandbox: boolean; csrf: string; message?: string },
): Html {
  const amount = formatUsd(record.amountMicros);
  const what = `${plan?.name ?? record.terms.planId} (${record.terms.action})`;
  const head = html`
    <h1>${sellerName}</h1>
    <p>${what}: <strong id="amount">${amount} USD</strong></p>
  `;
  const note = opts.message ? html`<p id="message" role="status">${opts.message}</p>` : "";
  if (state !== "open") {
    return checkoutShell(
      "Checkout",
      html`<div class="box">${head}${note}<p id="state" data-state="${state}">${DONE[state] ?? state}</p></div>`,
    );
  }
  const hint = opts.sandbox
    ? html`<p class="muted">Sandbox: use card token <code>${SANDBOX_TOKENS.card.success}</code> to pay, <code>${SANDBOX_TOKENS.card.insufficientFunds}</code> for a decline.</p>`
    : "";
  return checkoutShell(
    "Checkout",
    html`
      <div
        class="box">${head}${note}<p id="state" data-state="open">An agent asks you to pay for this plan.</p><form method="post" id="pay"><input type="hidden" name="csrf" value="${opts
          .csrf}"><label for="token">Card payment token</label><input id="token" name="token" autocomplete="off" required maxlength="512"><button type="submit" name="action" value="pay" id="pay-button">Pay ${amount} USD</button></form><form method="post" id="cancel"><input type="hidden" name="csrf" value="${opts
          .csrf}"><button type="submit" name="action" value="cancel" id="cancel-button">Cancel</button></form>${hint}</div>
    `,
  );
}
