import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import { familyApp } from "../family.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { documented } from "../openapi.ts";

/** RFC 7523 grant type. */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
// Assertions are a few hundred bytes; 16 KiB leaves room and bounds the parse.
const TOKEN_BODY_LIMIT = 16 * 1024;

const oauthError = z.object({ error: z.string(), error_description: z.string() }).openapi("OAuthError");
const tokenRoute = createRoute({
  method: "post",
  path: "/token",
  tags: ["storefront"],
  summary: "Exchange the identity assertion for a short-lived access token (RFC 7523 jwt-bearer)",
  request: {
    body: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({ grant_type: z.literal(JWT_BEARER_GRANT), assertion: z.string() }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "An access token; never stored, exchange again when it expires",
      content: {
        "application/json": {
          schema: z.object({ access_token: z.string(), token_type: z.literal("Bearer"), expires_in: z.number().int() }),
        },
      },
    },
    400: {
      description: "invalid_request, invalid_grant, unsupported_grant_type",
      content: { "application/json": { schema: oauthError } },
    },
  },
});

const invalidRequest = (message: string) => new AppError(400, "invalid_request", message);

/**
 * Mounted at `/oauth2` (oauth error family): `POST /token`. The form is parsed by hand (not by the zod validator) so every problem gets
 * its RFC 6749 code: a missing or repeated parameter is `invalid_request`, another grant type
 * `unsupported_grant_type`, an assertion that does not verify `invalid_grant`.
 */
export function createTokenRoutes(deps: Pick<Deps, "storefront" | "log">) {
  const app = familyApp("oauth", deps.log);
  documented(app, tokenRoute, async (c) => {
    c.header("Cache-Control", "no-store");
    c.header("Pragma", "no-cache");
    if (!FORM_TYPE.test(c.req.header("content-type") ?? "")) {
      throw invalidRequest("Content-Type must be application/x-www-form-urlencoded");
    }
    const form = new URLSearchParams(new TextDecoder().decode(await readBodyCapped(c.req.raw, TOKEN_BODY_LIMIT)));
    const one = (name: string): string | null => {
      const all = form.getAll(name);
      if (all.length > 1) throw invalidRequest(`${name} must not be repeated`);
      return all[0] || null;
    };
    const grantType = one("grant_type");
    if (!grantType) throw invalidRequest("grant_type is required");
    if (grantType !== JWT_BEARER_GRANT) {
      throw new AppError(400, "unsupported_grant_type", `Only ${JWT_BEARER_GRANT} is supported`);
    }
    const assertion = one("assertion");
    if (!assertion) throw invalidRequest("assertion is required");
    const { accessToken, expiresIn } = await deps.storefront.identity.exchange(assertion);
    return c.json({ access_token: accessToken, token_type: "Bearer", expires_in: expiresIn }, 200);
  });
  return app;
}
