import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { sfError } from "../../core/storefront/errors.ts";
import type { AppEnv } from "../env.ts";
import { readBodyCapped } from "../middleware/body.ts";
import { describeIssue } from "../validation.ts";

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;|$)/i;

/** Storefront bodies that are unreadable, not JSON, or of the wrong shape are all 400 `invalid_request` (spec 7.3). */
export function storefrontHook(
  result: { success: true } | { success: false; error: z.ZodError },
  _c: Context<AppEnv>,
): void {
  if (!result.success) throw sfError(400, "invalid_request", describeIssue(result.error.issues[0]!));
}

/** An OpenAPIHono router whose validation failures answer `invalid_request`. */
export function createStorefrontRouter(): OpenAPIHono<AppEnv> {
  // deno-lint-ignore no-explicit-any
  return new OpenAPIHono<AppEnv>({ defaultHook: storefrontHook as any });
}

/**
 * Reads a JSON body once with a size cap (413 `body_too_large` above it) and insists it is a
 * JSON object; anything else is 400 `invalid_request`. The request is rebuilt over the bytes so
 * the zod validator can read it.
 */
export function jsonObjectBody(limit: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const bytes = await readBodyCapped(c.req.raw, limit);
    if (!JSON_TYPE.test(c.req.header("content-type") ?? "")) {
      throw sfError(400, "invalid_request", "Content-Type must be application/json");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      throw sfError(400, "invalid_request", "The body is not valid JSON");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw sfError(400, "invalid_request", "The body must be a JSON object");
    }
    c.set("rawBody", bytes);
    c.req.raw = new Request(c.req.raw.url, {
      method: c.req.raw.method,
      headers: c.req.raw.headers,
      body: bytes as BodyInit,
    });
    await next();
  };
}
