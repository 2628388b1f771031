/**
 * The one error model. Domain code throws {@link AppError}; the HTTP edge renders it in the body
 * shape of the route family (see routes/errors.ts), because the spec fixes different bodies per
 * family. `message` and `detail` are public; `cause` is private: logged, never sent.
 */
export class AppError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Stable machine code, e.g. `invalid_token`, `widget_id_not_found`. */
  readonly code: string;
  /** Storefront sub-reason, e.g. `token_expired`. */
  readonly reason?: string;
  /** Storefront public note. */
  readonly detail?: string;
  /** Extra public body fields (e.g. `serviceSlug`, `usage`, `plans`). */
  readonly extra?: Record<string, unknown>;
  /** Extra response headers (e.g. `Retry-After`, `WWW-Authenticate`). */
  readonly headers?: Record<string, string>;
  /** Render the message as text/plain instead of JSON (400s the spec fixes as plain text). */
  readonly plain: boolean;

  constructor(
    status: number,
    code: string,
    message: string,
    options: {
      reason?: string;
      detail?: string;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
      plain?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.status = status;
    this.code = code;
    this.reason = options.reason;
    this.detail = options.detail;
    this.extra = options.extra;
    this.headers = options.headers;
    this.plain = options.plain ?? false;
  }
}

/** 400 with a message; `plain` for the text/plain bodies the spec names. */
export const badRequest = (message: string, code = "bad_request", plain = false) =>
  new AppError(400, code, message, { plain });

/** 401: credentials missing or malformed. */
export const unauthorized = (message: string, code = "unauthorized") => new AppError(401, code, message);

/** 403: credentials valid in form but not accepted. */
export const forbidden = (message: string, code = "forbidden") => new AppError(403, code, message);

/** 404. */
export const notFound = (message: string, code = "not_found") => new AppError(404, code, message);

/** 422: the body was read but a field is wrong. */
export const unprocessable = (message: string, code = "unprocessable") => new AppError(422, code, message);

/** Codes of errors raised while reading a request body, before any field is looked at. */
export const BODY_ERROR_CODES = new Set(["body_too_large", "unsupported_media_type", "malformed_json"]);

/** 404 for a data model that is unknown, another tenant's, or named by a malformed id: never names the id. */
export const dataModelNotFound = () => notFound("Data model not found", "data_model_not_found");

/** 404 for an AI model that is unknown, another tenant's, or named by a malformed id: never names the id. */
export const aiModelNotFound = () => notFound("AI model not found");

/** A caller asked for the full text of a data model whose publisher licenses summaries only. */
export const fullTextNotLicensed = () =>
  forbidden(
    "Full text is not licensed for this data model: contents.text needs a full_text licence",
    "full_text_not_licensed",
  );
