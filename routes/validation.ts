import { z as zo } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { z } from "zod";
import { AppError } from "../core/errors.ts";
import { idPattern, type IdPrefix, MAX_ID_BODY_CHARS } from "../core/ids.ts";
import { sfError } from "../core/identity/mod.ts";
import { describeIssue } from "../core/zod_issue.ts";

export { describeIssue };
import type { AppEnv, ErrorFamily } from "./env.ts";

/** The result a zod-openapi validation hook receives. */
export type ValidationResult = { success: true } | { success: false; error: z.ZodError; target: string };

/** A zod-openapi validation hook: throws the family's error for a failed validation. */
export type ValidationHook = (result: ValidationResult, c: Context<AppEnv>) => void;

/**
 * The validation hook of a route family:
 * - `message` and `payproxy`: query-string problems are 400 (text/plain on payproxy), body, path
 *   and header problems 422, each with a message naming the field (`<name> must be given once` for a
 *   query parameter repeated where one value is expected);
 * - `storefront` and `oauth`: every problem is 400 `invalid_request` (spec 7.3).
 */
export function validationHookFor(family: ErrorFamily): ValidationHook {
  return (result, c) => {
    if (result.success) return;
    const issue = result.error.issues[0]!;
    // A query parameter given twice reaches the schema as an array: say so, not "expected string".
    const name = String(issue.path[0] ?? "");
    const repeated = result.target === "query" && name !== "" && (c.req.queries(name)?.length ?? 0) > 1;
    const message = repeated ? `${name} must be given once` : describeIssue(issue);
    if (family === "storefront" || family === "oauth") throw sfError("bad_request", "invalid_request", message);
    if (result.target === "query") {
      throw new AppError("bad_request", "invalid_query", message, {
        plain: family === "payproxy" || family === "zeroclick",
      });
    }
    throw new AppError("unprocessable", "invalid_request", message);
  };
}

/**
 * A schema for an id in a path or query: its format is checked before any lookup, and a wrong one
 * is refused naming the field and the format, never the value (core/ids.ts `hasIdFormat`).
 */
export function idSchema(prefix: IdPrefix) {
  return zo.string().regex(idPattern(prefix), {
    error: `must be ${prefix}_ followed by 1 to ${MAX_ID_BODY_CHARS} letters and digits`,
  });
}
