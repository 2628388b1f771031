import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import type { OAuthTokens } from "../../core/identity/mod.ts";
import { describeError } from "../../core/log.ts";
import type { AppEnv } from "../env.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { documented } from "../openapi.ts";
import { hitPublicRead } from "./public_reads.ts";

/** RFC 7523 grant type. */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** The grants of MCP clients (OAuth 2.1): the code from the consent page, then refresh. */
export const CODE_GRANTS = ["authorization_code", "refresh_token"] as const;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
// Assertions are a few hundred bytes; 16 KiB leaves room and bounds the parse.
const TOKEN_BODY_LIMIT = 16 * 1024;

const oauthError = z.object({ error: z.string(), error_description: z.string() }).openapi("OAuthError");
const tokenRoute = createRoute({
  method: "post",
  path: "/token",
  tags: ["storefront"],
  summary: "Token endpoint: the identity assertion (RFC 7523 jwt-bearer), or an MCP client's authorization " +
    "code (PKCE) or refresh token (OAuth 2.1)",
  description: "jwt-bearer: `assertion`. authorization_code: `code`, `code_verifier`, `redirect_uri`, " +
    "`client_id`, optional `resource` (RFC 8707; must equal the authorization request's). refresh_token: " +
    "`refresh_token`, `client_id`; the refresh token rotates and a reused one revokes its family.",
  request: {
    body: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({
            grant_type: z.enum([JWT_BEARER_GRANT, ...CODE_GRANTS]),
            assertion: z.string().optional(),
            code: z.string().optional(),
            code_verifier: z.string().optional(),
            redirect_uri: z.string().optional(),
            client_id: z.string().optional(),
            refresh_token: z.string().optional(),
            resource: z.string().optional(),
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "An access token; never stored, exchange again when it expires (code and refresh grants: " +
        "with a rotating refresh token, the access token bound to the resource)",
      content: {
        "application/json": {
          schema: z.object({
            access_token: z.string(),
            token_type: z.literal("Bearer"),
            expires_in: z.number().int(),
            refresh_token: z.string().optional(),
          }),
        },
      },
    },
    429: {
      description: "rate_limit_exceeded, per client address: authorization_code and refresh_token grants " +
        "(`STOREFRONT_RATE_LIMIT`), jwt-bearer exchanges (`PUBLIC_READS_PER_MIN_PER_ADDRESS`)",
    },
    400: {
      description: "invalid_request, invalid_grant, invalid_target, unsupported_grant_type",
      content: { "application/json": { schema: oauthError } },
    },
    401: { description: "invalid_client", content: { "application/json": { schema: oauthError } } },
  },
});

const invalidRequest = (message: string) => new AppError("bad_request", "invalid_request", message);
const tokenLimited = (retryAfterS: number) =>
  new AppError("rate_limited", "rate_limit_exceeded", "Too many requests: retry later", {
    extra: { retry_after: retryAfterS },
    headers: { "retry-after": String(retryAfterS) },
  });

/**
 * `POST /token` (in the `/oauth2` family app, see oauth2.ts). The form is parsed by hand (not by the zod validator) so every problem gets
 * its RFC 6749 code: a missing or repeated parameter is `invalid_request`, another grant type
 * `unsupported_grant_type`, an assertion that does not verify `invalid_grant`.
 */
export function addTokenRoute(
  app: OpenAPIHono<AppEnv>,
  deps: Pick<Deps, "storefront" | "config" | "log" | "publicReadLimiter">,
): void {
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
    if (grantType === "authorization_code" || grantType === "refresh_token") {
      return c.json(await codeOrRefreshGrant(c, deps, grantType, one), 200);
    }
    if (grantType !== JWT_BEARER_GRANT) {
      throw new AppError(
        "bad_request",
        "unsupported_grant_type",
        `grant_type must be ${JWT_BEARER_GRANT}, authorization_code or refresh_token`,
      );
    }
    const assertion = one("assertion");
    if (!assertion) throw invalidRequest("assertion is required");
    // An anonymous identity's assertion is free to get: exchanges count per client address, with a
    // budget generous enough for many agents behind one address renewing their five-minute tokens.
    const hit = await hitPublicRead(deps, "agent_token", c);
    if (!hit.allowed) throw tokenLimited(hit.retryAfterS);
    const { accessToken, expiresIn } = await deps.storefront.identity.exchange(assertion);
    return c.json({ access_token: accessToken, token_type: "Bearer", expires_in: expiresIn }, 200);
  });
}

/**
 * An MCP client's code or refresh grant, under two per-address limits: every grant counts against
 * the address's token budget (`agent_token`, shared with jwt-bearer exchanges: the ceiling against
 * floods), and only a grant that fails uses up the guessing budget (`STOREFRONT_RATE_LIMIT`, key
 * `oauth:`). A grant is counted there before it runs, so parallel guesses cannot all pass under
 * the limit, and given back once it succeeds: many users refreshing behind one host's address
 * never meet the guessing budget (a 429 makes the MCP SDK drop its tokens and ask the human again).
 */
async function codeOrRefreshGrant(
  c: Context<AppEnv>,
  deps: Pick<Deps, "storefront" | "config" | "log" | "publicReadLimiter">,
  grantType: (typeof CODE_GRANTS)[number],
  one: (name: string) => string | null,
): Promise<OAuthTokens> {
  const all = await hitPublicRead(deps, "agent_token", c);
  if (!all.allowed) throw tokenLimited(all.retryAfterS);
  const guessKey = `oauth:${limitAddress(c, deps.config.trustProxy)}`;
  const guess = await deps.storefront.limiter.hit(guessKey);
  if (!guess.allowed) throw tokenLimited(guess.retryAfterS);
  const tokens = grantType === "authorization_code"
    ? await deps.storefront.oauth.exchangeCode({
      code: one("code"),
      clientId: one("client_id"),
      redirectUri: one("redirect_uri"),
      codeVerifier: one("code_verifier"),
      resource: one("resource"),
    })
    : await deps.storefront.oauth.refreshGrant({
      refreshToken: one("refresh_token"),
      clientId: one("client_id"),
      resource: one("resource"),
    });
  // The tokens are issued (a refresh token already rotated): a refund that fails costs a unit, never the answer.
  await deps.storefront.limiter.refund(guessKey).catch((err) =>
    deps.log.warn("oauth grant refund failed", { request_id: c.env.requestId, error: describeError(err) })
  );
  return tokens;
}
