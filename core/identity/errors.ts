import { AppError } from "../errors.ts";

/**
 * A storefront error: `{error: code, reason?, detail}` where `detail` repeats the public message,
 * so an agent reading the body learns what to do next (spec 7.3).
 */
export function sfError(
  status: number,
  code: string,
  message: string,
  options: { reason?: string; extra?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
): AppError {
  return new AppError(status, code, message, { ...options, detail: message });
}
