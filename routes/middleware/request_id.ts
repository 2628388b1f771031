import type { Context, MiddlewareHandler } from "hono";
import { requestId as honoRequestId } from "hono/request-id";
import type { AppEnv } from "../env.ts";

// An incoming id is kept when it is 1 to 128 characters of Hono's (letters, digits, `_`, `-`, `=`)
// or `.` and `:`, which other services use (ours accepted them before Hono's middleware).
const ALSO_SAFE = /^[\w.:=-]{1,128}$/;

/** Makes a new request id; a random UUID by default. */
export type RequestIdGenerator = () => string;

/**
 * Gives every request an id with Hono's `requestId`: a well-formed incoming `X-Request-Id` is kept
 * (so ids follow a request across services), otherwise a new one is made. Echoed on every response.
 * The app's root middleware does the same with the access log in one layer
 * (routes/middleware/request_envelope.ts).
 */
export function requestId(
  { generator = () => crypto.randomUUID() }: { generator?: RequestIdGenerator } = {},
): MiddlewareHandler<AppEnv> {
  const assign = requestIdAssigner(generator);
  return async function requestIdOnEveryResponse(c, next) {
    await assign(c, next);
    echoRequestId(c);
  };
}

/**
 * Hono's `requestId`, choosing the id as {@link requestId} describes and keeping it as the
 * `requestId` variable. It neither reads nor sets the header itself (no header name): the
 * generator reads it, and {@link echoRequestId} sets it.
 */
export function requestIdAssigner(generator: RequestIdGenerator): MiddlewareHandler<AppEnv> {
  return honoRequestId({
    headerName: "",
    generator: (c: Context) => {
      const incoming = c.req.header("x-request-id");
      return incoming && ALSO_SAFE.test(incoming) ? incoming : generator();
    },
  });
}

/**
 * Sets `X-Request-Id` once, on the final response, whoever built it (a handler's `c.json`, a
 * `Response` built by hand, the error renderer, the MCP transport, the paid proxy's upstream
 * answer). Hono's own way, among the context's prepared headers, missed the hand-built ones, so the
 * final response had to be read again anyway; and it made every `c.json` build a `Headers` object,
 * and Deno a native copy of the response that the read then threw away (bench/RESULTS.md, "Fixed
 * cost of a request").
 */
export function echoRequestId(c: Context<AppEnv>): void {
  const id = c.get("requestId");
  const headers = c.res.headers;
  // Set only where it is missing or another: headers of a response passed on may be immutable.
  if (headers.get("x-request-id") !== id) headers.set("X-Request-Id", id);
}
