import type { Context } from "hono";
import { parseIPv4, parseIPv6 } from "../../core/net/mod.ts";

/**
 * The client's address: the socket peer, or, behind `trustProxy` reverse proxies, the entry of
 * `X-Forwarded-For` the outermost trusted proxy wrote. Entries further left are the client's own
 * claims and are never trusted. `unknown` when neither exists (e.g. `app.request()` in tests).
 * Always an IP literal (or `unknown`): the address becomes part of KV keys (rate limits, click
 * dedupe), so a hop that is not one, written by a client that reached us past the proxy or through
 * a proxy that passes the header on, counts as no hop at all.
 */
export function clientAddress(c: Context, trustProxy: number): string {
  if (trustProxy > 0) {
    const xff = (c.req.header("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    const hop = xff[xff.length - trustProxy];
    const address = hop === undefined ? null : ipLiteral(withoutPort(hop));
    if (address) return address;
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

/**
 * `text` when it is an IPv4 or IPv6 literal, an IPv6 one without its zone (`%eth0`, which names an
 * interface of the proxy's host, not a client, and has no length bound); null otherwise.
 */
function ipLiteral(text: string): string | null {
  if (parseIPv4(text)) return text;
  const v6 = text.split("%", 1)[0]!;
  return parseIPv6(v6) ? v6 : null;
}
