import type { MiddlewareHandler } from "hono";
import type { AppEnv, ErrorFamily } from "../env.ts";

/** Marks the routes below it as answering errors in `family`'s body shape. */
export function errorFamily(family: ErrorFamily): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("family", family);
    await next();
  };
}
