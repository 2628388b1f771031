import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../core/deps.ts";
import { notFound } from "../core/errors.ts";
import { describeError } from "../core/log.ts";
import { createRouter } from "./validation.ts";

const clickRoute = createRoute({
  method: "get",
  path: "/r/{token}",
  tags: ["search"],
  summary: "Tracking redirect of a search result (`source_url`)",
  description: "Verifies the signed token, records an `article_click` event and redirects to the article. " +
    "Only the URL inside the signed token is ever a redirect target.",
  request: { params: z.object({ token: z.string() }) },
  responses: {
    302: { description: "Redirect to the article URL" },
    404: {
      description: "Unknown, malformed or tampered token",
      content: { "application/json": { schema: z.object({ message: z.string() }) } },
    },
  },
});

/** `GET /r/{token}`: the click-tracking redirect behind every `source_url`. */
export function createRedirectRoutes(deps: Pick<Deps, "links" | "events" | "log" | "clock">) {
  const app = createRouter();
  app.openapi(clickRoute, async (c) => {
    const click = await deps.links.verifyClick(c.req.param("token"));
    if (!click) throw notFound("Link not found");
    // HEAD comes from link unfurlers and prefetchers, not readers: redirect without counting.
    if (c.req.method === "GET" && deps.events) {
      try {
        await deps.events.record([{
          event_type: "article_click",
          ts: deps.clock.now().toISOString(),
          click_type: "article",
          tenant_id: click.tenantId,
          agent_identity: click.caller,
          data_model_id: click.dataModelId,
          article_id: click.articleId,
          url: click.url,
          position: click.position,
          referring_url: c.req.header("referer"),
        }]);
      } catch (err) {
        // A lost click must not cost the reader the article.
        deps.log.warn("article_click not recorded", { request_id: c.get("requestId"), error: describeError(err) });
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
