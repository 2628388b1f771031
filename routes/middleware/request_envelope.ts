import type { ErrorHandler, MiddlewareHandler } from "hono";
import type { Logger } from "../../core/log.ts";
import type { AppEnv } from "../env.ts";
import { logRequest } from "./access_log.ts";
import { echoRequestId, requestIdAssigner, type RequestIdGenerator } from "./request_id.ts";

/**
 * The app's root middleware: every request's id (Hono's `requestId`, kept from `X-Request-Id` or
 * made; echoed on the response) and its JSON access-log line, in one layer. As two middleware
 * (routes/middleware/request_id.ts, access_log.ts) every request paid for two more async layers of
 * Hono's `compose()` (bench/RESULTS.md, "Fixed cost of a request").
 *
 * What the routes below do not answer themselves (a path no route serves, an error of a root-level
 * route) is answered here with `onError`, the root's error handler, as Hono's `compose()` would one
 * layer down: so that answer too carries the id and has its line.
 */
export function requestEnvelope(
  log: Logger,
  onError: ErrorHandler<AppEnv>,
  { generator = () => crypto.randomUUID() }: { generator?: RequestIdGenerator } = {},
): MiddlewareHandler<AppEnv> {
  const assign = requestIdAssigner(generator);
  return async function requestEnvelope(c, next) {
    const start = performance.now();
    try {
      await assign(c, next);
    } catch (err) {
      if (!(err instanceof Error)) throw err;
      c.error = err;
      c.res = await onError(err, c);
    }
    echoRequestId(c);
    logRequest(log, c, start);
  };
}
