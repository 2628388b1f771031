import { html, raw } from "hono/html";
import type { Deps } from "../../composition.ts";
import { OutboxMailer } from "../../core/identity/mod.ts";
import { requireOperator } from "../middleware/operator.ts";
import { familyApp } from "../family.ts";
import { pageSecurity } from "../middleware/page_security.ts";
import { styleHashSource } from "../inline_style.ts";

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}
article{border-bottom:1px solid #ddd;padding:.5rem 0}h2{font-size:1.1rem;margin:.2rem 0}.meta{color:#555;margin:0}
pre{white-space:pre-wrap}`;

/**
 * Security headers of the outbox page (hono/secure-headers), on its refusals too: no script, its own
 * style by hash (never `'unsafe-inline'`: the page shows mail text), no framing (it lists live codes).
 */
const SECURITY = pageSecurity({
  csp: {
    defaultSrc: ["'none'"],
    styleSrc: [styleHashSource(STYLE)],
    // Neither falls back to default-src: an injected <base> or form would otherwise be followed.
    baseUri: ["'none'"],
    formAction: ["'none'"],
    frameAncestors: ["'none'"],
  },
  frameOptions: "DENY",
  referrerPolicy: "no-referrer",
});

/**
 * Mounted at `/dev/outbox`: `GET`, the mail the local demo would have sent, newest first, for an operator key
 * only (`Authorization: Bearer op_...`; claim e-mails carry the code that proves mailbox control).
 * Mounted only when the outbox mailer is on (MAIL_OUTBOX=true and no SMTP_URL); otherwise the
 * path does not exist.
 */
export function createOutboxRoutes(deps: Pick<Deps, "mailer" | "operatorKeys" | "log">) {
  const app = familyApp("storefront", deps.log);
  const mailer = deps.mailer;
  if (!(mailer instanceof OutboxMailer)) return app;
  app.get("/", SECURITY, requireOperator(deps.operatorKeys), async (c) => {
    const items = await mailer.list(50);
    // Links become anchors; everything else is escaped by the html tag.
    const linkify = (text: string) =>
      text.split(/(https?:\/\/[^\s<>"]+)/g).map((part, i) => i % 2 ? html`<a href="${part}">${part}</a>` : part);
    const rows = items.map((m) =>
      html`
        <article>
          <h2>${m.subject}</h2>
          <p class="meta">To ${m.to} · From ${m.from} · ${m.sentAt}</p>
          <pre>${linkify(m.text)}</pre>
        </article>
      `
    );
    c.header("Cache-Control", "no-store");
    return c.html(html`
      <!doctype html>
      <html lang="en">
        <head>
          <meta charset="utf-8">
          <title>Outbox</title>
          <style>${raw(STYLE)}</style>
        </head>
        <body><h1>Outbox</h1>
      <p>Mail the service would have sent (MAIL_OUTBOX is on, no SMTP_URL). Kept for a day.</p>
      ${rows.length ? rows : raw("<p>No mail yet.</p>")}</body>
      </html>
    `);
  });
  return app;
}
