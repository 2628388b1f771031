import { OpenAPIHono } from "@hono/zod-openapi";
import { notFound } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { AppEnv, ErrorFamily } from "./env.ts";
import { createErrorHandler } from "./errors.ts";
import { type ValidationHook, validationHookFor } from "./validation.ts";

/**
 * A sub-app of one route family: its `onError` renders that family's error body and its
 * validation hook words that family's validation errors. Mount it with {@link mount}.
 */
export function familyApp(
  family: ErrorFamily,
  log: Logger,
  { hook = validationHookFor(family) }: { hook?: ValidationHook } = {},
): OpenAPIHono<AppEnv> {
  // deno-lint-ignore no-explicit-any
  const app = new OpenAPIHono<AppEnv>({ defaultHook: hook as any });
  app.onError(createErrorHandler(log, family));
  return app;
}

/**
 * Mounts `sub` at `prefix`. Everything under the prefix belongs to the sub-app: a path or method
 * it does not serve is its 404, in its family's body (after its own middleware, e.g. a key check).
 */
export function mount(parent: OpenAPIHono<AppEnv>, prefix: string, sub: OpenAPIHono<AppEnv>): void {
  sub.all("*", () => {
    throw notFound("Not found");
  });
  parent.route(prefix, sub);
}
