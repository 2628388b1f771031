import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError, BODY_ERROR_CODES } from "../core/errors.ts";
import { describeError, type Logger } from "../core/log.ts";
import type { AppEnv, ErrorFamily } from "./env.ts";
import { httpStatus, kindOfStatus } from "./error_status.ts";

/** A rendered error: status, headers and body (null for the empty bodies the spec names). */
export interface RenderedError {
  status: number;
  body: string | null;
  contentType?: string;
}

const json = (status: number, body: unknown): RenderedError => ({
  status,
  body: JSON.stringify(body),
  contentType: "application/json; charset=UTF-8",
});
const plain = (status: number, text: string): RenderedError => ({
  status,
  body: text,
  contentType: "text/plain; charset=UTF-8",
});

/**
 * Renders an {@link AppError} in the body shape of a route family:
 * - `message` (bearer search, real-time, analytics, system): `{message}`, or text/plain when the
 *   error asks for it;
 * - `payproxy` (and `zeroclick`, whose 401 says `invalid_zeroclick_signature`): 400 text/plain,
 *   401 `{error: "invalid_payproxy_signature"}`, 402
 *   `{error: "payment_required", ...}`, 422 `{message, code?}` (unreadable bodies land here too),
 *   every other status with an empty body;
 * - `storefront`: `{error, reason?, detail?, ...extra}`;
 * - `oauth`: RFC 6749 `{error, error_description}`;
 * - `widget` (the public widget routes): `{message, code}`.
 */
export function renderError(family: ErrorFamily, err: AppError): RenderedError {
  switch (family) {
    case "message":
      if (err.plain) return plain(httpStatus(err), err.message);
      return json(httpStatus(err), { message: err.message, ...err.extra });
    case "payproxy":
    case "zeroclick":
      if (BODY_ERROR_CODES.has(err.code)) return json(422, { message: err.message, code: err.code });
      if (httpStatus(err) === 400) return plain(400, err.message);
      if (httpStatus(err) === 401) return json(401, { error: `invalid_${family}_signature` });
      if (httpStatus(err) === 402) return json(402, { error: "payment_required", ...err.extra });
      if (httpStatus(err) === 422) {
        return json(422, { message: err.message, ...(err.code !== "unprocessable" ? { code: err.code } : {}) });
      }
      return { status: httpStatus(err), body: null };
    case "storefront":
      return json(httpStatus(err), {
        error: err.code,
        ...(err.reason ? { reason: err.reason } : {}),
        ...(err.detail ? { detail: err.detail } : {}),
        ...err.extra,
      });
    case "oauth":
      return json(httpStatus(err), { error: err.code, error_description: err.message, ...err.extra });
    case "widget":
      return json(httpStatus(err), { message: err.message, code: err.code });
  }
}

/** The masked 500 every family answers for an unexpected error. */
export function internalError(family: ErrorFamily): AppError {
  return new AppError(
    "internal",
    family === "storefront" || family === "oauth" ? "server_error" : "internal_error",
    "Internal server error",
  );
}

/** Turns anything thrown into an AppError; unknown errors become the masked 500. */
export function toAppError(err: unknown, family: ErrorFamily): { appError: AppError; unexpected: boolean } {
  if (err instanceof AppError) return { appError: err, unexpected: false };
  if (err instanceof HTTPException && err.status < 500) {
    // Hono's own 4xx (e.g. its body parsers): keep the status, phrase it our way (never Hono's words).
    const [code, message] = err.status === 413
      ? ["body_too_large", "Request body too large"]
      : err.status === 400
      ? ["malformed_json", "Malformed request body"]
      : ["bad_request", "Bad request"];
    return { appError: new AppError(kindOfStatus(err.status), code, message), unexpected: false };
  }
  return { appError: internalError(family), unexpected: true };
}

/** Writes a rendered error as a Response, with the error's extra headers. */
export function errorResponse(err: AppError, family: ErrorFamily): Response {
  const r = renderError(family, err);
  const headers = new Headers(err.headers);
  if (r.contentType) headers.set("content-type", r.contentType);
  return new Response(r.body, { status: r.status, headers });
}

/**
 * Hono `onError` handler of one route family: logs unexpected errors with the request id, answers
 * in the family's body shape.
 */
export function createErrorHandler(log: Logger, family: ErrorFamily) {
  return (err: unknown, c: Context<AppEnv>): Response => {
    let { appError, unexpected } = toAppError(err, family);
    if (unexpected && c.req.raw.signal.aborted) {
      // The client left mid-request and what we were doing failed with it: a disconnect (499), not our 500.
      appError = new AppError("client_closed", "client_closed_request", "The client closed the connection");
      unexpected = false;
      log.info("client disconnected", { request_id: c.env.requestId, path: c.req.path });
    }
    if (unexpected) {
      log.error("unexpected error", { request_id: c.env.requestId, path: c.req.path, error: describeError(err) });
    } else if (appError.cause !== undefined) {
      log.warn("request rejected", {
        request_id: c.env.requestId,
        code: appError.code,
        why: describeError(appError.cause),
      });
    }
    return errorResponse(appError, family);
  };
}
