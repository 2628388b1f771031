import type { Context } from "hono";

/**
 * The client's address: the socket peer, or, behind `trustProxy` reverse proxies, the entry of
 * `X-Forwarded-For` the outermost trusted proxy wrote. Entries further left are the client's own
 * claims and are never trusted. `unknown` when neither exists (e.g. `app.request()` in tests).
 */
export function clientAddress(c: Context, trustProxy: number): string {
  if (trustProxy > 0) {
    const xff = (c.req.header("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    const hop = xff[xff.length - trustProxy];
    if (hop) return hop;
  }
  // The request's scope (routes/request_scope.ts) carries Deno.serve's peer; a bare app has none.
  const env = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return env?.remoteAddr?.hostname ?? "unknown";
}
