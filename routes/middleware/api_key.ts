import type { MiddlewareHandler } from "hono";
import type { ApiKeyService } from "../../core/auth/mod.ts";
import type { AppEnv } from "../env.ts";
import { actFor } from "../request_scope.ts";

/**
 * Bearer API key authentication: 401 when the header is missing or not `Bearer ak_...`, 403 when
 * the key is unknown or revoked. Sets `apiKey` and `tenantId`.
 */
export function apiKeyAuth(apiKeys: ApiKeyService): MiddlewareHandler<AppEnv> {
  return async function apiKeyAuth(c, next) {
    // Two route groups may guard the same path (e.g. `/v1/*`): authenticate once.
    if (c.get("apiKey")) return await next();
    const record = await apiKeys.authenticate(c.req.header("authorization"));
    c.set("apiKey", record);
    actFor(c, record.tenantId);
    await next();
  };
}
