/**
 * The MCP SDK's JSON-RPC errors in our words. When a request's params fail the SDK's own schema (a
 * tool call whose `arguments` is not an object, a `name` that is not a string, an `initialize` with
 * a numeric `protocolVersion`), the SDK answers -32603 "Internal error" with zod's issue list as the
 * message: the wrong code for the caller's mistake, and a library's text in a public body. Every
 * error the SDK sends passes here on its way out (the transport's `send`).
 */

import { expectedTypeName } from "../../core/zod_issue.ts";

/** JSON-RPC 2.0's codes used here. */
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

/** The params of MCP requests a public message may name (never a key the caller made up). */
const NAMED_PARAMS = new Set([
  "name",
  "arguments",
  "cursor",
  "protocolVersion",
  "capabilities",
  "clientInfo",
  "_meta",
  "uri",
  "level",
  "ref",
  "argument",
]);

/** A JSON-RPC error object. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** zod's issues when `message` is a ZodError's message (the JSON text of its issue list), else null. */
function zodIssues(message: string): { code: string; path: unknown[]; expected?: unknown }[] | null {
  if (!message.startsWith("[")) return null;
  try {
    const issues = JSON.parse(message);
    const isIssue = (i: unknown) =>
      typeof i === "object" && i !== null && typeof (i as { code?: unknown }).code === "string" &&
      Array.isArray((i as { path?: unknown }).path);
    return Array.isArray(issues) && issues.length > 0 && issues.every(isIssue) ? issues : null;
  } catch {
    return null;
  }
}

/** "Invalid params: arguments must be an object", naming only a known param and a known type. */
function invalidParams(issue: { code: string; path: unknown[]; expected?: unknown }): string {
  const [head, param] = issue.path;
  const named = head === "params" && typeof param === "string" && NAMED_PARAMS.has(param) ? param : null;
  if (!named) return "Invalid params";
  const expected = issue.code === "invalid_type" && typeof issue.expected === "string"
    ? expectedTypeName(issue.expected)
    : undefined;
  return expected ? `Invalid params: ${named} must be ${expected}` : `Invalid params: ${named} is not valid`;
}

/**
 * The error to send instead of `error`, or null to send it as it is. A zod failure becomes -32602
 * in our words. Any other -32603 is masked as "Internal error"; `onInternal` gets the original text
 * for the log. Other codes (the SDK's -32601 "Method not found", our own -32042) pass unchanged.
 *
 * @example
 * publicJsonRpcError({ code: -32603, message: '[{"code":"invalid_type","expected":"record","path":["params","arguments"],"message":"..."}]' })
 * // { code: -32602, message: "Invalid params: arguments must be an object" }
 */
export function publicJsonRpcError(
  error: JsonRpcErrorObject,
  onInternal: (detail: string) => void = () => {},
): JsonRpcErrorObject | null {
  if (error.code !== INTERNAL_ERROR) return null;
  const issues = zodIssues(String(error.message));
  if (issues) return { code: INVALID_PARAMS, message: invalidParams(issues[0]!) };
  if (error.message === "Internal error" && error.data === undefined) return null;
  onInternal(String(error.message));
  return { code: INTERNAL_ERROR, message: "Internal error" };
}

/**
 * `message` with its error, if it has one, put in our words ({@link publicJsonRpcError}); any
 * other message (a result, a notification) is returned as it is.
 */
export function publicJsonRpcMessage<T>(message: T, onInternal?: (detail: string) => void): T {
  const error = (message as { error?: unknown } | null)?.error;
  if (typeof error !== "object" || error === null || typeof (error as JsonRpcErrorObject).code !== "number") {
    return message;
  }
  const replaced = publicJsonRpcError(error as JsonRpcErrorObject, onInternal);
  return replaced ? { ...message, error: replaced } : message;
}

/**
 * The 400 for an unsupported `MCP-Protocol-Version` header, in our words: the SDK's own answer
 * echoes the header as sent. Checked where the SDK checks it (a POST without an `initialize`
 * request) and before it; null when the header is absent or supported, or the body did not parse
 * (the SDK's parse error comes first).
 */
export function unsupportedProtocolVersion(
  header: string | null,
  body: unknown,
  supported: readonly string[],
): Response | null {
  if (header === null || supported.includes(header) || body === undefined) return null;
  const messages = Array.isArray(body) ? body : [body];
  if (messages.some((m) => m && typeof m === "object" && m.method === "initialize")) return null;
  const message = `Bad Request: unsupported MCP-Protocol-Version (supported versions: ${supported.join(", ")})`;
  return Response.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, { status: 400 });
}
