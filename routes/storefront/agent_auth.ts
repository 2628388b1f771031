import type { Context, MiddlewareHandler } from "hono";
import { AppError } from "../../core/errors.ts";
import { sfError } from "../../core/identity/mod.ts";
import type { TokenService } from "../../core/identity/mod.ts";
import type { AgentContext, AppEnv } from "../env.ts";
import { type SellerDeps, sellerOf } from "./seller.ts";
import { callerIs } from "../request_scope.ts";

/** Deps of the agent authentication middleware. */
export interface AgentAuthDeps extends SellerDeps {
  storefront: SellerDeps["storefront"] & { tokens: TokenService };
}

// RFC 6750 b64token.
const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const SCHEME_RE = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?: |$)/;

/** The `WWW-Authenticate` challenge of every 401 here (RFC 9728 section 5.1). */
export function bearerChallenge(agentAuthUrl: string, error?: string): string {
  const meta = `Bearer resource_metadata="${agentAuthUrl}/.well-known/oauth-protected-resource"`;
  return error ? `${meta}, error="${error}"` : meta;
}

/**
 * Agent authentication for purchase, extend and entitlements (spec 5.3.7):
 * `Authorization: Bearer <token>`, or `ZC-Agent-Authorization: Bearer <token>` when
 * `Authorization` carries an MPP `Payment` credential. Sets `c.var.agent` (credential, human,
 * claimed flag, seller) and `c.var.seller`. Every 401 carries `WWW-Authenticate`.
 *
 * @throws 401 `bearer_required`; 401 `invalid_token` with reason token_expired, token_invalid,
 * malformed_agent_authorization, unrecognized_agent_credential, conflicting_agent_credentials or
 * combined_authorization_unsupported; 404 `seller_not_found`.
 */
export function agentAuth(deps: AgentAuthDeps): MiddlewareHandler<AppEnv> {
  const verify = agentVerifier(deps);
  return async function agentAuth(c, next) {
    await verify(c);
    await next();
  };
}

/** What {@link agentAuth} checks, as a function: the agent (also set in `c.var`), or the same errors. */
export function agentVerifier(deps: AgentAuthDeps): (c: Context<AppEnv>) => Promise<AgentContext> {
  const url = deps.config.agentAuthUrl;
  const invalid = (reason: string, message: string) =>
    sfError("unauthenticated", "invalid_token", message, {
      reason,
      headers: { "WWW-Authenticate": bearerChallenge(url, "invalid_token") },
    });
  const parseBearer = (value: string, header: string): string => {
    const m = BEARER_RE.exec(value.trim());
    if (!m) {
      throw invalid("malformed_agent_authorization", `${header} must be exactly one "Bearer <token>"`);
    }
    return m[1]!;
  };

  return async function verifyAgent(c) {
    const seller = await sellerOf(c, deps);
    const authorization = c.req.header("authorization");
    const agentHeader = c.req.header("zc-agent-authorization");
    let fromAuthorization: string | null = null;
    if (authorization !== undefined) {
      const value = authorization.trim();
      const scheme = SCHEME_RE.exec(value)?.[1]?.toLowerCase();
      // `Payment ..., Bearer ...` (or the reverse): one header, two credentials.
      if (
        (scheme === "payment" && /,\s*bearer\s/i.test(value)) || (scheme === "bearer" && /,\s*payment\s/i.test(value))
      ) {
        throw invalid(
          "combined_authorization_unsupported",
          "Authorization carries one credential: send the access token in ZC-Agent-Authorization",
        );
      }
      if (scheme === "bearer") fromAuthorization = parseBearer(value, "Authorization");
      else if (scheme !== "payment") {
        throw invalid(
          "malformed_agent_authorization",
          'Authorization must be "Bearer <token>" or an MPP "Payment" credential',
        );
      }
    }
    const fromAgentHeader = agentHeader !== undefined ? parseBearer(agentHeader, "ZC-Agent-Authorization") : null;
    if (fromAuthorization && fromAgentHeader && fromAuthorization !== fromAgentHeader) {
      throw invalid("conflicting_agent_credentials", "Authorization and ZC-Agent-Authorization carry different tokens");
    }
    const token = fromAgentHeader ?? fromAuthorization;
    if (!token) {
      // With a Payment credential in Authorization, the token can only go in ZC-Agent-Authorization.
      const where = authorization !== undefined
        ? "send ZC-Agent-Authorization: Bearer <access token> beside the Payment credential"
        : "send Authorization: Bearer <access token>";
      throw sfError("unauthenticated", "bearer_required", `A registered agent credential is required: ${where}`, {
        headers: { "WWW-Authenticate": bearerChallenge(url) },
      });
    }
    let principal;
    try {
      principal = await deps.storefront.tokens.verifyAccessToken(token);
    } catch (err) {
      if (err instanceof AppError) {
        throw sfError(err.kind, err.code, err.message, {
          reason: err.reason,
          headers: { "WWW-Authenticate": bearerChallenge(url, "invalid_token") },
          cause: err.cause,
        });
      }
      throw err;
    }
    const agent = { ...principal, seller };
    c.set("agent", agent);
    callerIs(c, `agent:${principal.credentialId}`);
    return agent;
  };
}
