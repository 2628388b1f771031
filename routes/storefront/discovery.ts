import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../composition.ts";
import { ID_JAG_TOKEN_TYPE, mcpResource, SIGNING_ALG } from "../../core/identity/mod.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { CODE_GRANTS, JWT_BEARER_GRANT } from "./token.ts";
import { agentCors } from "../middleware/cors.ts";

/** The ID-JAG authorization grant profile (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag";

/**
 * RFC 8414 metadata of the network authorization server, with the storefront's agent_auth block.
 * @param issuer the issuer identifier the document is served for (RFC 8414 section 3.3: it must be
 * the one its well-known URL was built from); default the network issuer.
 */
export function authorizationServerMetadata(
  deps: Pick<Deps, "config" | "storefront">,
  issuer?: string,
): Record<string, unknown> {
  const { agentAuthUrl: sf, networkApiUrl: as, storefront: s } = deps.config;
  const registrationTypes = [
    ...(s.anonymousRegistration ? ["anonymous"] : []),
    ...(s.serviceAuthRegistration ? ["service_auth"] : []),
    ...(s.trustedIssuers.length ? ["identity_assertion"] : []),
    "refresh",
  ];
  return {
    issuer: issuer ?? as,
    authorization_endpoint: `${sf}/oauth2/authorize`,
    token_endpoint: `${sf}/oauth2/token`,
    registration_endpoint: `${sf}/oauth2/register`,
    jwks_uri: `${sf}/.well-known/jwks.json`,
    grant_types_supported: [JWT_BEARER_GRANT, ...CODE_GRANTS],
    authorization_grant_profiles_supported: [ID_JAG_PROFILE],
    // MCP clients: authorization code with PKCE (S256 only); agents keep using jwt-bearer.
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    code_challenge_methods_supported: ["S256"],
    client_id_metadata_document_supported: deps.storefront.oauth.clients.documentsSupported,
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

/** RFC 9728 metadata of the MCP endpoint: tokens for it come from the network authorization server. */
export function mcpResourceMetadata(deps: Pick<Deps, "config">): Record<string, unknown> {
  const { networkApiUrl: as } = deps.config;
  return {
    resource: mcpResource(deps.config),
    authorization_servers: [as],
    bearer_methods_supported: ["header"],
    resource_name: "Article search MCP server",
    resource_documentation: `${deps.config.baseUrl}/docs`,
  };
}

/** Where the protected-resource metadata of `/mcp` is (RFC 9728 section 3.1, path-inserted). */
export function mcpResourceMetadataUrl(config: Deps["config"]): string {
  return wellKnownUrl(mcpResource(config), "oauth-protected-resource");
}

/** The `/mcp` 401 challenge (RFC 9728 section 5.1), with `error` when a token was presented and failed. */
export function mcpChallenge(config: Deps["config"], error?: string): string {
  const meta = `Bearer resource_metadata="${mcpResourceMetadataUrl(config)}"`;
  return error ? `${meta}, error="${error}"` : meta;
}

/** RFC 8414 / RFC 9728 well-known URL of an identifier with a path: the suffix goes after the well-known name. */
function wellKnownUrl(identifier: string, name: string): string {
  const u = new URL(identifier);
  return `${u.origin}/.well-known/${name}${u.pathname.replace(/\/+$/, "")}`;
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
  app.use("*", agentCors());
  const cache = (c: { header: (k: string, v: string) => void }) => c.header("Cache-Control", "public, max-age=300");
  const asMetadata = (c: Context<AppEnv>) => {
    cache(c);
    return c.json(authorizationServerMetadata(deps));
  };
  const prMetadata = (c: Context<AppEnv>) => {
    cache(c);
    return c.json(protectedResourceMetadata(deps));
  };
  // The root document is the one a strict client starting from BASE_URL, AGENT_AUTH_URL or a pathless
  // NETWORK_API_URL (the issuer on a host of its own) finds: it names that origin as issuer. A network
  // issuer with a path has its own document at its path-inserted URL.
  documented(app, authorizationServerRoute, (c) => {
    cache(c);
    const origin = new URL(c.req.url).origin;
    const { baseUrl, agentAuthUrl, networkApiUrl } = deps.config;
    const root = [networkApiUrl, baseUrl, agentAuthUrl].map((u) => new URL(u))
      .find((u) => u.origin === origin && u.pathname === "/");
    return c.json(authorizationServerMetadata(deps, root ? root.origin : new URL(agentAuthUrl).origin));
  });
  const asPath = new URL(deps.config.networkApiUrl).pathname.replace(/\/+$/, "");
  if (asPath) app.get(`/oauth-authorization-server${asPath}`, asMetadata);
  const mcpPath = new URL(mcpResource(deps.config)).pathname;
  documented(
    app,
    metadataRoute(`/oauth-protected-resource${mcpPath}`, "Protected-resource metadata (RFC 9728) of the MCP endpoint"),
    (c) => {
      cache(c);
      return c.json(mcpResourceMetadata(deps));
    },
  );
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
