import type { Deps } from "../../core/deps.ts";
import { escapeHtml } from "../../core/storefront/claims.ts";
import { OutboxMailer } from "../../core/storefront/mailer.ts";
import { createStorefrontRouter } from "./json_body.ts";

/**
 * `GET /dev/outbox`: the mail the embedded demo would have sent, newest first. Mounted only when
 * the outbox mailer is active (no SMTP_URL); with SMTP configured the path does not exist.
 */
export function createOutboxRoutes(deps: Pick<Deps, "mailer">) {
  const app = createStorefrontRouter();
  const mailer = deps.mailer;
  if (!(mailer instanceof OutboxMailer)) return app;
  app.get("/dev/outbox", async (c) => {
    const items = await mailer.list(50);
    const linkify = (text: string) =>
      escapeHtml(text).replace(/(https?:\/\/[^\s<&]+)/g, (u) => `<a href="${u}">${u}</a>`);
    const rows = items.map((m) =>
      `<article><h2>${escapeHtml(m.subject)}</h2><p class="meta">To ${escapeHtml(m.to)} · From ${
        escapeHtml(m.from)
      } · ${escapeHtml(m.sentAt)}</p><pre>${linkify(m.text)}</pre></article>`
    ).join("\n");
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
    return c.html(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Outbox</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}
article{border-bottom:1px solid #ddd;padding:.5rem 0}h2{font-size:1.1rem;margin:.2rem 0}.meta{color:#555;margin:0}
pre{white-space:pre-wrap}</style></head><body><h1>Outbox</h1>
<p>Mail the service would have sent (no SMTP_URL is set). Kept for a day.</p>
${rows || "<p>No mail yet.</p>"}</body></html>`);
  });
  return app;
}
