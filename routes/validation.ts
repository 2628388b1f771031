import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { z } from "zod";
import { AppError } from "../core/errors.ts";
import type { AppEnv } from "./env.ts";

/** One zod issue as a sentence naming the field: `query: must not be empty`. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.map(String).join(".");
  // zod v4 leaves `input` off issues unless asked, so a wrong type would read as "required":
  // only an input that is really absent is called missing.
  const missing = "input" in issue ? issue.input === undefined : /received undefined$/.test(issue.message);
  if (issue.code === "invalid_type" && missing) return `${field || "body"} is required`;
  return field ? `${field}: ${issue.message}` : issue.message;
}

/**
 * The shared zod-openapi hook: query-string problems are 400 (text/plain on the payproxy family),
 * body, path and header problems 422, each with a message naming the field.
 */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target: string },
  c: Context<AppEnv>,
): void {
  if (result.success) return;
  const message = describeIssue(result.error.issues[0]!);
  if (result.target === "query") {
    throw new AppError(400, "invalid_query", message, { plain: c.get("family") === "payproxy" });
  }
  throw new AppError(422, "invalid_request", message);
}

/** An OpenAPIHono router with the shared validation hook. */
export function createRouter(): OpenAPIHono<AppEnv> {
  // deno-lint-ignore no-explicit-any
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook as any });
}
