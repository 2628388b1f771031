import type { Context, MiddlewareHandler } from "hono";
import { requestId as honoRequestId } from "hono/request-id";
import type { AppEnv } from "../env.ts";

const MAX_LENGTH = 128;
// Hono keeps 1 to 128 characters of letters, digits, `_`, `-` and `=`; ids that other services
// make with `.` or `:` (ours accepted them before Hono's middleware) are kept as well.
const ALSO_SAFE = /^[\w.:=-]{1,128}$/;

/**
 * Gives every request an id with Hono's `requestId`: a well-formed incoming `X-Request-Id` is kept
 * (so ids follow a request across services), otherwise a new one is made. Echoed on every response.
 *
 * Hono puts the header among the context's prepared headers, which a `Response` a handler builds
 * itself does not carry (the error renderer, the MCP transport, the paid proxy's upstream answer),
 * so the id is also set on the final response.
 */
export function requestId(
  { generator = () => crypto.randomUUID() }: { generator?: () => string } = {},
): MiddlewareHandler<AppEnv> {
  const assign = honoRequestId({
    limitLength: MAX_LENGTH,
    generator: (c: Context) => {
      const incoming = c.req.header("x-request-id");
      return incoming && ALSO_SAFE.test(incoming) ? incoming : generator();
    },
  });
  return async function requestIdOnEveryResponse(c, next) {
    await assign(c, next);
    const id = c.get("requestId");
    if (c.res.headers.get("x-request-id") !== id) c.res.headers.set("X-Request-Id", id);
  };
}
