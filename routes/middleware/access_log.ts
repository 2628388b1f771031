import type { Context, MiddlewareHandler } from "hono";
import type { Logger } from "../../core/log.ts";
import type { AppEnv } from "../env.ts";

/**
 * One JSON log line per request: method, path (never the query string, which may carry
 * credentials), status, duration, tenant or caller, request id. The app's root middleware does the
 * same with the request id in one layer (routes/middleware/request_envelope.ts).
 */
export function accessLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async function accessLog(c, next) {
    const start = performance.now();
    await next();
    logRequest(log, c, start);
  };
}

/** Writes the access-log line of a request that started at `start` (`performance.now()`) and has its response. */
export function logRequest(log: Logger, c: Context<AppEnv>, start: number): void {
  const res = c.res;
  // A failure of a request whose client already left is the client's disconnect (nginx's 499),
  // not our 500. The signal is read only then: building it costs every request a few us.
  const status = res.status >= 500 && c.req.raw.signal.aborted ? 499 : res.status;
  log.info("request", {
    method: c.req.method,
    path: c.req.path,
    status,
    duration_ms: Math.round((performance.now() - start) * 100) / 100,
    tenant: c.get("tenantId") ?? null,
    caller: c.get("caller") ?? null,
    request_id: c.get("requestId"),
  });
}
