import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { describeError } from "../core/log.ts";
import { clickEvent, linkErrors } from "../core/links/mod.ts";
import { familyApp } from "./family.ts";
import { limitAddress } from "./middleware/public_limits.ts";
import { clientAddress } from "./storefront/client_address.ts";

const clickRoute = createRoute({
  method: "get",
  path: "/{token}",
  tags: ["search"],
  summary: "Tracking redirect of a search result (`source_url`)",
  description: "Verifies the signed token, records an `article_click` event and redirects to the article. " +
    "Only the URL inside the signed token is ever a redirect target. Every valid token redirects; a follow is " +
    "counted as a click only once per link and client address within `CLICK_DEDUPE_WINDOW_S`, not from known " +
    "crawlers, link-preview fetchers or command-line clients, not after the link's counting lifetime, and not " +
    "over `CLICKS_PER_MIN_PER_ADDRESS` (docs/events-and-metrics.md).",
  request: { params: z.object({ token: z.string() }) },
  responses: {
    302: { description: "Redirect to the article URL" },
    404: {
      description: "Unknown, malformed or tampered token",
      content: { "application/json": { schema: z.object({ message: z.string() }) } },
    },
  },
});

/** `GET /r/{token}` (mounted at `/r`): the click-tracking redirect behind every `source_url`. */
export function createRedirectRoutes(
  deps: Pick<Deps, "links" | "events" | "log" | "clock" | "clickGate" | "clientKeys" | "config">,
) {
  const app = familyApp("message", deps.log);
  app.openapi(clickRoute, async (c) => {
    const token = c.req.param("token");
    const click = await deps.links.verifyClick(token);
    if (!click) throw linkErrors.link_not_found();
    if (deps.events) {
      const address = limitAddress(c, deps.config.trustProxy);
      let counted = false;
      try {
        const verdict = await deps.clickGate.verdict(click, {
          method: c.req.method,
          userAgent: c.req.header("user-agent"),
          address,
          token,
        });
        counted = verdict === "counted";
        if (counted) {
          // The clicker's network key: trending counts one sender per network (docs/events-and-metrics.md).
          const sender = await deps.clientKeys.of(clientAddress(c, deps.config.trustProxy));
          await deps.events.record([clickEvent(click, deps.clock.now(), c.req.header("referer"), sender)]);
        }
      } catch (err) {
        // Counted but not stored: the mark goes, so the reader's next follow is counted, not a duplicate.
        if (counted) await deps.clickGate.forget(token, address).catch(() => {});
        // A lost click must not cost the reader the article.
        deps.log.warn("article_click not recorded", { request_id: c.env.requestId, error: describeError(err) });
      }
    }
    return c.body(null, 302, {
      // The signed URL, percent-encoded: a header cannot carry raw non-ASCII characters.
      location: new URL(click.url).href,
      "cache-control": "no-store",
      "referrer-policy": "no-referrer-when-downgrade",
    });
  });
  return app;
}
