import { OpenAPIHono } from "@hono/zod-openapi";
import type { ErrorHandler } from "hono";
import { notFound } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { AppEnv, ErrorFamily } from "./env.ts";
import { createErrorHandler } from "./errors.ts";
import { type ValidationHook, validationHookFor } from "./validation.ts";

/**
 * A sub-app of one route family: its `onError` renders that family's error body and its
 * validation hook words that family's validation errors. Mount it with {@link mount}, at the root
 * or inside another family's app: a `message` app has no `onError` of its own, so inside an app of
 * another family it would answer in that family's body.
 */
export function familyApp<E extends AppEnv = AppEnv>(
  family: ErrorFamily,
  log: Logger,
  { hook = validationHookFor(family) }: { hook?: ValidationHook } = {},
): OpenAPIHono<E> {
  // deno-lint-ignore no-explicit-any
  const app = new OpenAPIHono<E>({ defaultHook: hook as any });
  // The message family is the root's (routes/app.ts): its errors are left to the root's `onError`,
  // the same renderer. A sub-app with an `onError` of its own has every handler wrapped in one more
  // async layer by Hono's `route()` (about 0.35 µs a request). The handler reads only what every
  // environment has (the request id); E only adds variables.
  if (family !== "message") app.onError(createErrorHandler(log, family) as unknown as ErrorHandler<E>);
  return app;
}

/**
 * Mounts `sub` at `prefix`. Everything under the prefix belongs to the sub-app: a path or method
 * it does not serve is its 404, in its family's body (after its own middleware, e.g. a key check).
 */
export function mount<E extends AppEnv>(parent: OpenAPIHono<AppEnv>, prefix: string, sub: OpenAPIHono<E>): void {
  sub.all("*", () => {
    throw notFound("Not found");
  });
  parent.route(prefix, sub);
}
