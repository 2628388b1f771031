import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import { oauthErrors, registrationBody } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";
import { readJson } from "../middleware/body.ts";
import { documented } from "../openapi.ts";

// A client metadata document is a few hundred bytes; 16 KiB bounds the parse.
const REGISTRATION_BODY_LIMIT = 16 * 1024;

const registerRoute = createRoute({
  method: "post",
  path: "/register",
  tags: ["storefront"],
  summary: "Dynamic client registration (RFC 7591) of a public MCP client",
  description: "`redirect_uris` (https, loopback http or an app scheme; exact match later), optional " +
    "`client_name`. Clients are public (`token_endpoint_auth_method` none) and prove possession with PKCE.",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            redirect_uris: z.array(z.string()),
            client_name: z.string().optional(),
            grant_types: z.array(z.string()).optional(),
            response_types: z.array(z.string()).optional(),
            token_endpoint_auth_method: z.string().optional(),
          }),
        },
      },
    },
  },
  responses: {
    201: {
      description: "The registered client",
      content: {
        "application/json": {
          schema: z.object({
            client_id: z.string(),
            client_id_issued_at: z.number().int(),
            redirect_uris: z.array(z.string()),
            client_name: z.string().optional(),
            grant_types: z.array(z.string()),
            response_types: z.array(z.string()),
            token_endpoint_auth_method: z.literal("none"),
          }),
        },
      },
    },
    400: {
      description: "invalid_redirect_uri, invalid_client_metadata",
      content: {
        "application/json": { schema: z.object({ error: z.string(), error_description: z.string() }) },
      },
    },
    429: { description: "rate_limit_exceeded" },
  },
});

/** `POST /register` in the `/oauth2` family app (its rate limit is set there). */
export function addRegistrationRoute(app: OpenAPIHono<AppEnv>, deps: Pick<Deps, "storefront">): void {
  documented(app, registerRoute, async (c) => {
    const { value } = await readJson(c.req.raw, {
      limit: REGISTRATION_BODY_LIMIT,
      object: true,
      reject: (p) =>
        p.kind === "media_type" ? oauthErrors.registration_media_type() : oauthErrors.registration_not_object(),
    });
    const client = await deps.storefront.oauth.clients.register(value as Record<string, unknown>);
    c.header("Cache-Control", "no-store");
    return c.json(registrationBody(client), 201);
  });
}
