/** The shell of the storefront's pages for humans (claim, OAuth consent): one main landmark, one inline style. */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** A page's body or the page itself. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/**
 * A whole page around `body`, with `style` as its only inline style (the route's CSP allows it by
 * hash: `styleHashSource(style)`) and no script. The page URL may hold a secret: no Referer leaves it.
 */
export function humanPage(title: string, style: string, body: Html): Html {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="same-origin">
        <title>${title}</title>
        <style>${raw(style)}</style>
      </head>
      <body>
        <main>${body}</main>
      </body>
    </html>
  `;
}
