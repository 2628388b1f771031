import { getPath } from "hono/utils/url";
import type { Logger } from "../../core/log.ts";
import type { RequestScope } from "../request_scope.ts";

/**
 * Writes the access-log line of a request that started at `start` (`performance.now()`) and was
 * answered with `res`: method, path (Hono's, never the query string, which may carry credentials),
 * status, duration, tenant or caller, request id. One line per request, written by the app's root
 * (routes/middleware/request_envelope.ts).
 */
export function logRequest(log: Logger, req: Request, res: Response, scope: RequestScope, start: number): void {
  // A failure of a request whose client already left is the client's disconnect (nginx's 499),
  // not our 500. The signal is read only then: building it costs every request a few us.
  const status = res.status >= 500 && req.signal.aborted ? 499 : res.status;
  log.request({
    method: req.method,
    path: getPath(req),
    status,
    duration_ms: Math.round((performance.now() - start) * 100) / 100,
    tenant: scope.tenantId,
    caller: scope.caller,
    request_id: scope.requestId,
  });
}
