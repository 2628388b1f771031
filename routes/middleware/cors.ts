import { cors } from "hono/cors";
import type { MiddlewareHandler } from "hono";

/** Request headers a browser-hosted MCP or OAuth client sends (MCP spec, Streamable HTTP and authorization). */
export const AGENT_CORS_ALLOW_HEADERS = [
  "Authorization",
  "Content-Type",
  "Accept",
  "Mcp-Session-Id",
  "MCP-Protocol-Version",
  "Last-Event-ID",
];
/** Response headers such a client must read: the session id and the 401 challenge. */
export const AGENT_CORS_EXPOSE_HEADERS = ["Mcp-Session-Id", "WWW-Authenticate", "MCP-Protocol-Version"];

/**
 * CORS for what browser-hosted agents call: `/mcp`, `/oauth2/*` (token, registration, and the
 * consent page with them) and the well-known documents. Any origin, never credentials mode: a
 * script on another origin sends no cookies, keeps none it is sent, and reads no credentialed
 * response, so it gains nothing a script without the bearer token could not do. The API routes
 * take bearer tokens in `Authorization` and read no cookies. The consent page
 * (`/oauth2/authorize`) does read one, its own CSRF cookie (`oauth_csrf`, SameSite=Strict): a
 * cross-origin script's POST arrives without it and with a foreign Origin, and is refused
 * (routes/middleware/form_csrf.ts); what its GET can read is the form anyone may fetch.
 */
export function agentCors(): MiddlewareHandler {
  return cors({
    origin: "*",
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    allowHeaders: AGENT_CORS_ALLOW_HEADERS,
    exposeHeaders: AGENT_CORS_EXPOSE_HEADERS,
    maxAge: 86_400,
  });
}
