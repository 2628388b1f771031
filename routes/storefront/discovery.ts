import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../composition.ts";
import { ID_JAG_TOKEN_TYPE } from "../../core/storefront/id_jag.ts";
import { SIGNING_ALG } from "../../core/storefront/keys.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { JWT_BEARER_GRANT } from "./token.ts";

/** The ID-JAG authorization grant profile (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag";

/** RFC 8414 metadata of the network authorization server, with the storefront's agent_auth block. */
export function authorizationServerMetadata(deps: Pick<Deps, "config">): Record<string, unknown> {
  const { agentAuthUrl: sf, networkApiUrl: as, storefront: s } = deps.config;
  const registrationTypes = [
    ...(s.anonymousRegistration ? ["anonymous"] : []),
    ...(s.serviceAuthRegistration ? ["service_auth"] : []),
    ...(s.trustedIssuers.length ? ["identity_assertion"] : []),
    "refresh",
  ];
  return {
    issuer: as,
    token_endpoint: `${sf}/oauth2/token`,
    jwks_uri: `${sf}/.well-known/jwks.json`,
    grant_types_supported: [JWT_BEARER_GRANT],
    authorization_grant_profiles_supported: [ID_JAG_PROFILE],
    // No authorization endpoint: agents never run a browser redirect flow here.
    response_types_supported: [],
    token_endpoint_auth_methods_supported: ["none"],
    token_endpoint_auth_signing_alg_values_supported: [SIGNING_ALG],
    agent_auth: {
      registration_endpoint: `${sf}/agent/identity`,
      registration_types_supported: registrationTypes,
      identity_assertion_types_supported: [ID_JAG_TOKEN_TYPE],
      identity_assertion_issuers: s.trustedIssuers.map((t) => t.issuer),
      claim_endpoint: `${sf}/agent/identity/claim`,
      claim_complete_endpoint: `${sf}/agent/identity/claim/complete`,
      entitlements_endpoint: `${sf}/agent/entitlements`,
      network_entitlements_endpoint: `${as}/agent/entitlements`,
      mcp_endpoint: `${deps.config.baseUrl}/mcp`,
      access_token_lifetime_s: s.accessTokenTtlS,
    },
  };
}

/** RFC 9728 metadata of the storefront as a protected resource. */
export function protectedResourceMetadata(deps: Pick<Deps, "config">): Record<string, unknown> {
  const { agentAuthUrl: sf, networkApiUrl: as } = deps.config;
  return {
    resource: sf,
    authorization_servers: [as],
    bearer_methods_supported: ["header"],
    jwks_uri: `${sf}/.well-known/jwks.json`,
    resource_signing_alg_values_supported: [SIGNING_ALG],
    resource_name: "Agent storefront",
  };
}

const metadataRoute = (path: string, summary: string) =>
  createRoute({
    method: "get",
    path,
    tags: ["discovery"],
    summary,
    responses: {
      200: {
        description: summary,
        content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
      },
    },
  });
const authorizationServerRoute = metadataRoute(
  "/oauth-authorization-server",
  "Authorization-server metadata (RFC 8414) with the agent_auth block",
);
const protectedResourceRoute = metadataRoute("/oauth-protected-resource", "Protected-resource metadata (RFC 9728)");
const jwksRoute = metadataRoute("/jwks.json", "Public keys of the storefront's assertions and access tokens");

/**
 * Mounted at `/.well-known`: `oauth-authorization-server` (also at the issuer's path-inserted form,
 * e.g. `/.well-known/oauth-authorization-server/network`, which RFC 8414 clients request),
 * `oauth-protected-resource` (and its path-inserted form) and `jwks.json`. The path-inserted forms
 * depend on the configured URLs and stay out of the OpenAPI document.
 */
export function createDiscoveryRoutes(deps: Pick<Deps, "config" | "storefront" | "log">): OpenAPIHono<AppEnv> {
  const app = familyApp("storefront", deps.log);
  const cache = (c: { header: (k: string, v: string) => void }) => c.header("Cache-Control", "public, max-age=300");
  const asMetadata = (c: Context<AppEnv>) => {
    cache(c);
    return c.json(authorizationServerMetadata(deps));
  };
  const prMetadata = (c: Context<AppEnv>) => {
    cache(c);
    return c.json(protectedResourceMetadata(deps));
  };
  documented(app, authorizationServerRoute, asMetadata);
  const asPath = new URL(deps.config.networkApiUrl).pathname.replace(/\/+$/, "");
  if (asPath) app.get(`/oauth-authorization-server${asPath}`, asMetadata);
  documented(app, protectedResourceRoute, prMetadata);
  const prPath = new URL(deps.config.agentAuthUrl).pathname.replace(/\/+$/, "");
  if (prPath) app.get(`/oauth-protected-resource${prPath}`, prMetadata);
  documented(app, jwksRoute, async (c) => {
    // Short: a rotated key must reach verifiers well before tokens signed with it do.
    c.header("Cache-Control", "public, max-age=60");
    return c.json(await deps.storefront.keys.jwks());
  });
  return app;
}
