// An incoming id is kept when it is 1 to 128 characters of letters, digits, `_`, `-`, `=` (Hono's
// `requestId` set) or `.` and `:`, which other services use.
const WELL_FORMED = /^[\w.:=-]{1,128}$/;

/** Makes a new request id; a random UUID by default. */
export type RequestIdGenerator = () => string;

/**
 * The id of `req`: its `X-Request-Id` when well formed (so ids follow a request across services),
 * otherwise a new one. The contract's ids are plain text of a safe alphabet: a log line or a
 * header can carry them as they are.
 */
export function requestIdOf(req: Request, generator: RequestIdGenerator): string {
  const incoming = req.headers.get("x-request-id");
  return incoming !== null && WELL_FORMED.test(incoming) ? incoming : generator();
}

/**
 * Sets `X-Request-Id` once, on the final response, whoever built it (a handler's `c.json`, a
 * `Response` built by hand, the error renderer, the MCP transport, the paid proxy's upstream
 * answer). Setting it among Hono's prepared headers missed the hand-built ones, and made every
 * `c.json` build a `Headers` object (bench/RESULTS.md, "Fixed cost of a request").
 */
export function echoRequestId(res: Response, id: string): void {
  const headers = res.headers;
  // Set only where it is missing or another: headers of a response passed on may be immutable.
  if (headers.get("x-request-id") !== id) headers.set("X-Request-Id", id);
}
