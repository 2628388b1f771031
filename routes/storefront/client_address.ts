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
    if (hop) return withoutPort(hop);
  }
  // The request's scope (routes/request_scope.ts) carries Deno.serve's peer; a bare app has none.
  const env = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return env?.remoteAddr?.hostname ?? "unknown";
}

/**
 * The address of a hop some proxies write with the client's port (`203.0.113.7:50001`,
 * `[2001:db8::1]:50001`): the port changes with every connection, so left on it would make each
 * connection a client of its own to every per-address limit.
 */
function withoutPort(hop: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(hop);
  if (v4) return v4[1]!;
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$/.exec(hop);
  return v6 ? v6[1]! : hop;
}
