import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../core/log.ts";
import type { AppEnv } from "../env.ts";

/**
 * One JSON log line per request: method, path (never the query string, which may carry
 * credentials), status, duration, tenant or caller, request id.
 */
export function accessLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async function accessLog(c, next) {
    const start = performance.now();
    await next();
    // A failure of a request whose client already left is the client's disconnect (nginx's 499),
    // not our 500. The signal is read only then: building it costs every request a few us.
    const status = c.res.status >= 500 && c.req.raw.signal.aborted ? 499 : c.res.status;
    log.info("request", {
      method: c.req.method,
      path: c.req.path,
      status,
      duration_ms: Math.round((performance.now() - start) * 100) / 100,
      tenant: c.get("tenantId") ?? null,
      caller: c.get("caller") ?? null,
      request_id: c.get("requestId"),
    });
  };
}
