import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.ts";

const SAFE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Gives every request an id: a well-formed incoming `X-Request-Id` is kept (so ids follow a
 * request across services), otherwise a new one is made. Echoed on every response.
 */
export function requestId(
  { generator = () => crypto.randomUUID() }: { generator?: () => string } = {},
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const incoming = c.req.header("x-request-id");
    const id = incoming && SAFE_ID.test(incoming) ? incoming : generator();
    c.set("requestId", id);
    await next();
    c.res.headers.set("X-Request-Id", id);
  };
}
