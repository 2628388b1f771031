import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler, Next } from "hono";
import type { AppEnv } from "./env.ts";

type Step = (c: Context<AppEnv>, next: Next) => Response | void | Promise<Response | void>;

/**
 * Serves `handlers` at the route `route` describes and puts `route` in the OpenAPI document: one
 * definition for both. For routes that check their input by hand, in an order the spec fixes (a
 * signature before the body, an RFC 6749 code per form problem), so zod-openapi's own validators,
 * which `app.openapi()` would run first, must not answer for them.
 */
export function documented(app: OpenAPIHono<AppEnv>, route: RouteConfig, ...handlers: Step[]): void {
  app.openAPIRegistry.registerPath(route);
  const path = route.path.replaceAll(/\/{(.+?)}/g, "/:$1");
  app.on([route.method.toUpperCase()], [path], ...(handlers as MiddlewareHandler<AppEnv>[]));
}
