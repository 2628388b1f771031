import type { AppError, ErrorKind } from "../core/errors.ts";

/**
 * The HTTP status of each kind of error: chosen here, at the edge. Core declares what went wrong
 * (core/errors.ts `ErrorKind`); MCP maps the same kinds to JSON-RPC, the CLI to exit codes.
 */
export const KIND_STATUS: Readonly<Record<ErrorKind, number>> = {
  bad_request: 400,
  unauthenticated: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  timeout: 408,
  conflict: 409,
  gone: 410,
  too_large: 413,
  unsupported_media_type: 415,
  misdirected: 421,
  unprocessable: 422,
  rate_limited: 429,
  client_closed: 499,
  internal: 500,
  not_implemented: 501,
  upstream_failed: 502,
  unavailable: 503,
  upstream_timeout: 504,
};

/** The HTTP status an error answers with. */
export const httpStatus = (err: AppError): number => KIND_STATUS[err.kind];

const KIND_OF_STATUS = new Map(Object.entries(KIND_STATUS).map(([kind, status]) => [status, kind as ErrorKind]));

/** The kind of an HTTP status the edge met (e.g. Hono's own 4xx), `internal` when it has none. */
export const kindOfStatus = (status: number): ErrorKind => KIND_OF_STATUS.get(status) ?? "internal";
