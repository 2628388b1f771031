import type { MiddlewareHandler } from "hono";
import type { OperatorKeys } from "../../core/auth/mod.ts";
import { AppError } from "../../core/errors.ts";
import type { AppEnv, ErrorFamily } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { callerIs } from "../request_scope.ts";

/**
 * Lets only an operator key (`Authorization: Bearer op_...`) through: 401 otherwise, with
 * `WWW-Authenticate` so a browser or curl knows what to send. The 401 is in the body family of the
 * routes it guards, unless `family` names another: an operator route inside a family whose 401
 * means something else (the payproxy's means "bad signature") answers in the operator's own words.
 */
export function requireOperator(
  operatorKeys: OperatorKeys,
  { family }: { family?: ErrorFamily } = {},
): MiddlewareHandler<AppEnv> {
  return async function operatorAuth(c, next) {
    const record = await operatorKeys.authenticate(c.req.header("authorization"));
    if (!record) {
      const err = new AppError(
        "unauthenticated",
        "unauthorized",
        "An operator key is required: Authorization: Bearer op_...",
        {
          headers: { "www-authenticate": 'Bearer realm="operator"' },
          detail: "An operator key is required: Authorization: Bearer op_...",
        },
      );
      if (family) return errorResponse(err, family);
      throw err;
    }
    callerIs(c, `operator:${record.id}`);
    await next();
    return undefined;
  };
}
