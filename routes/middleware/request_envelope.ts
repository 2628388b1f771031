import type { Logger } from "../../core/log.ts";
import { type PeerInfo, RequestScope } from "../request_scope.ts";
import { logRequest } from "./access_log.ts";
import { echoRequestId, type RequestIdGenerator, requestIdOf } from "./request_id.ts";

/** A fetch handler that takes the request's {@link RequestScope} as its environment (Hono's `app.fetch`). */
export type ScopedFetch = (req: Request, scope: RequestScope) => Response | Promise<Response>;

/**
 * The app's root: gives every request its id and {@link RequestScope} (Hono's `c.env`), puts the id
 * on the response and writes the request's JSON access-log line. It wraps `app.fetch` instead of
 * being Hono middleware: a root middleware put every request on Hono's `compose()` path (an async
 * layer a request, and routes that are one handler lost Hono's direct call), about 1.6 µs of a
 * `/healthz` request's 13 µs of CPU (bench/RESULTS.md, "Fixed cost of a request, third pass").
 *
 * Errors are the app's to answer (its `onError` renders every thrown error, a path no route serves
 * included), so every answer passes here. A rejection that still reaches here (a non-Error thrown)
 * is logged as a 500 and passed on to the server.
 */
export function withRequestEnvelope(
  fetch: ScopedFetch,
  log: Logger,
  { generator = () => crypto.randomUUID() }: { generator?: RequestIdGenerator } = {},
): (req: Request, info?: PeerInfo) => Response | Promise<Response> {
  const answered = (req: Request, res: Response, scope: RequestScope, start: number): Response => {
    echoRequestId(res, scope.requestId);
    logRequest(log, req, res, scope, start);
    return res;
  };
  return function requestEnvelope(req, info) {
    const start = performance.now();
    const scope = new RequestScope(requestIdOf(req, generator), info);
    if (!wellFormedHost(req.headers.get("host"))) return answered(req, badHost(), scope, start);
    let out: Response | Promise<Response>;
    try {
      out = fetch(req, scope);
    } catch (err) {
      logRequest(log, req, FAILED, scope, start);
      throw err;
    }
    // Most answers of a route that is one synchronous handler come back as a Response, not a promise.
    if (!(out instanceof Promise)) return answered(req, out, scope, start);
    return out.then((res) => answered(req, res, scope, start), (err) => {
      logRequest(log, req, FAILED, scope, start);
      throw err;
    });
  };
}

// A Host header is `host[:port]` (RFC 9110 7.2): a name, an IPv4 or an IPv6 literal; empty where the
// target has no authority. Deno.serve builds the request URL as `http://{Host}{target}`, so a Host
// holding `/`, `?`, `#`, `@` or `\` would change the path the routes see from the one a reverse
// proxy in front judged (its path rules, HAProxy's shard and retry ACLs): such a request is 400.
const HOST = /^(?:[A-Za-z0-9._~-]*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const wellFormedHost = (host: string | null): boolean => host === null || HOST.test(host);
const badHost = () =>
  Response.json({ message: "The Host header must be a host name with an optional port" }, {
    status: 400,
    headers: { connection: "close" },
  });

// What a request that reached no answer is logged as (the server answers it 500).
const FAILED = new Response(null, { status: 500 });
