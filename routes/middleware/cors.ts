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
 * CORS for what browser-hosted agents call: `/mcp`, `/oauth2/*` (token, registration) and the
 * well-known documents. Any origin, no credentials mode: these routes take bearer tokens in
 * `Authorization` and never read cookies, so a page on another origin gains nothing a script
 * without the token could not do.
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
