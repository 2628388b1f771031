import type { MiddlewareHandler } from "hono";
import type { OperatorKeys } from "../../core/auth/operator_keys.ts";
import { AppError } from "../../core/errors.ts";
import type { AppEnv } from "../env.ts";

/**
 * Lets only an operator key (`Authorization: Bearer op_...`) through: 401 otherwise, in the body
 * family of the routes it guards, with `WWW-Authenticate` so a browser or curl knows what to send.
 */
export function requireOperator(operatorKeys: OperatorKeys): MiddlewareHandler<AppEnv> {
  return async function operatorAuth(c, next) {
    const record = await operatorKeys.authenticate(c.req.header("authorization"));
    if (!record) {
      throw new AppError(401, "unauthorized", "An operator key is required: Authorization: Bearer op_...", {
        headers: { "www-authenticate": 'Bearer realm="operator"' },
        detail: "An operator key is required: Authorization: Bearer op_...",
      });
    }
    c.set("caller", `operator:${record.id}`);
    await next();
  };
}
