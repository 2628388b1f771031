/**
 * The one error model. Each room declares its errors once, in a catalog ({@link declareErrors}):
 * a stable code, a public message and a {@link ErrorKind}. Domain code raises them; the HTTP edge
 * chooses the status for the kind and renders the body shape of the route family (see
 * routes/errors.ts), because the spec fixes different bodies per family. `message` and `detail` are
 * public; `cause` is private: logged, never sent.
 */

/** What went wrong, in the words of the domain; the edge maps each kind to one HTTP status. */
export type ErrorKind =
  | "bad_request"
  | "unauthenticated"
  | "payment_required"
  | "forbidden"
  | "not_found"
  | "timeout"
  | "misdirected"
  | "conflict"
  | "gone"
  | "too_large"
  | "unsupported_media_type"
  | "unprocessable"
  | "rate_limited"
  | "client_closed"
  | "internal"
  | "not_implemented"
  | "upstream_failed"
  | "unavailable"
  | "upstream_timeout";

/** Kinds that are the service's fault (or an upstream's), not the caller's. */
const SERVER_KINDS: ReadonlySet<ErrorKind> = new Set([
  "internal",
  "not_implemented",
  "upstream_failed",
  "unavailable",
  "upstream_timeout",
]);

/** Options of one raised error: what only the raising site knows. */
export interface RaiseOptions {
  /** Storefront sub-reason, when it depends on the site (otherwise declared). */
  reason?: string;
  /** Storefront public note, when it depends on the site (otherwise the declared one, if any). */
  detail?: string;
  /** Extra public body fields (e.g. `serviceSlug`, `usage`, `plans`). */
  extra?: Record<string, unknown>;
  /** Extra response headers (e.g. `Retry-After`, `WWW-Authenticate`). */
  headers?: Record<string, string>;
  /** The private cause: logged, never sent. */
  cause?: unknown;
}

export class AppError extends Error {
  /** What went wrong; the edge chooses the status from it. */
  readonly kind: ErrorKind;
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
    kind: ErrorKind,
    code: string,
    message: string,
    options: RaiseOptions & { plain?: boolean } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.kind = kind;
    this.code = code;
    this.reason = options.reason;
    this.detail = options.detail;
    this.extra = options.extra;
    this.headers = options.headers;
    this.plain = options.plain ?? false;
  }

  /** The same error with more response headers (e.g. a receipt known only after the failure). */
  withHeaders(headers: Record<string, string>): AppError {
    return new AppError(this.kind, this.code, this.message, {
      reason: this.reason,
      detail: this.detail,
      extra: this.extra,
      headers: { ...this.headers, ...headers },
      plain: this.plain,
      cause: this.cause,
    });
  }

  /** Whether the service (or an upstream) is at fault rather than the caller. */
  get serverSide(): boolean {
    return SERVER_KINDS.has(this.kind);
  }
}

/** One declared error. */
export interface ErrorDeclaration {
  kind: ErrorKind;
  /** The public message, or a function of the site's (already validated, never raw) parameters. */
  // deno-lint-ignore no-explicit-any
  message: string | ((params: any) => string);
  /** The wire code when it differs from the declaration's name (e.g. several `bad_request`s). */
  code?: string;
  /** Storefront sub-reason. */
  reason?: string;
  /** Storefront bodies: `true` repeats the message as `detail`; a string is the declared note. */
  detail?: boolean | string;
  /** Render as text/plain (400s the spec fixes as plain text). */
  plain?: boolean;
}

/** The raisers of a catalog: one function per declared error. */
export type ErrorCatalog<D extends Record<string, ErrorDeclaration>> = {
  readonly [K in keyof D]: D[K]["message"] extends (params: infer P) => string
    ? (params: P, options?: RaiseOptions) => AppError
    : (options?: RaiseOptions) => AppError;
};

/**
 * Declares a room's errors once: `const errors = declareErrors({ payment_unknown: { kind:
 * "payment_required", message: "..." } })`, raised as `throw errors.payment_unknown()`.
 */
export function declareErrors<const D extends Record<string, ErrorDeclaration>>(declarations: D): ErrorCatalog<D> {
  const catalog: Record<string, unknown> = {};
  DECLARED.set(catalog, declarations);
  for (const [name, d] of Object.entries(declarations)) {
    const build = (message: string, options: RaiseOptions = {}) =>
      new AppError(d.kind, d.code ?? name, message, {
        ...options,
        reason: options.reason ?? d.reason,
        detail: options.detail ?? (d.detail === true ? message : d.detail || undefined),
        plain: d.plain,
      });
    catalog[name] = typeof d.message === "function"
      ? (params: unknown, options?: RaiseOptions) => build((d.message as (p: unknown) => string)(params), options)
      : (options?: RaiseOptions) => build(d.message as string, options);
  }
  return catalog as ErrorCatalog<D>;
}

// What each catalog declares, for the test that checks every catalog (codes, messages, kinds).
const DECLARED = new WeakMap<object, Readonly<Record<string, ErrorDeclaration>>>();

/** The declarations behind a catalog made by {@link declareErrors}; undefined for anything else. */
export function catalogDeclarations(value: unknown): Readonly<Record<string, ErrorDeclaration>> | undefined {
  return typeof value === "object" && value !== null ? DECLARED.get(value) : undefined;
}

/**
 * The shared refusals of the edge, for routes that word a one-off refusal themselves. Rooms
 * declare their own errors in their catalogs instead.
 */

/** 400 with a message; `plain` for the text/plain bodies the spec names. */
export const badRequest = (message: string, code = "bad_request", plain = false) =>
  new AppError("bad_request", code, message, { plain });

/** 401: credentials missing or malformed. */
export const unauthorized = (message: string, code = "unauthorized") => new AppError("unauthenticated", code, message);

/** 403: credentials valid in form but not accepted. */
export const forbidden = (message: string, code = "forbidden") => new AppError("forbidden", code, message);

/** 404. */
export const notFound = (message: string, code = "not_found") => new AppError("not_found", code, message);

/** 422: the body was read but a field is wrong. */
export const unprocessable = (message: string, code = "unprocessable") => new AppError("unprocessable", code, message);

/** Codes of errors raised while reading a request body, before any field is looked at. */
export const BODY_ERROR_CODES = new Set(["body_too_large", "unsupported_media_type", "malformed_json"]);

/**
 * The catalog of the top-level core modules: refusals about the tenant's data models and AI
 * models that several rooms raise. Never names the id a caller sent.
 */
export const coreErrors = declareErrors({
  /** Unknown, another tenant's, or named by a malformed id. */
  data_model_not_found: { kind: "not_found", message: "Data model not found" },
  /** Unknown, another tenant's, or named by a malformed id. */
  ai_model_not_found: { kind: "not_found", code: "not_found", message: "AI model not found" },
});

/** 404 for a data model that is unknown, another tenant's, or named by a malformed id: never names the id. */
export const dataModelNotFound = (): AppError => coreErrors.data_model_not_found();

/** 404 for an AI model that is unknown, another tenant's, or named by a malformed id: never names the id. */
export const aiModelNotFound = (): AppError => coreErrors.ai_model_not_found();
