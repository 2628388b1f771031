/** Errors of the sources room whose messages are written to be shown (poll status, 422 bodies). */
import { declareErrors } from "../errors.ts";

/** A document that is not what its source type promises, or that the guards refuse. */
export class SourceFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SourceFormatError";
  }
}

/**
 * The sources room's error catalog. `why` parameters are the fetcher's and the parser's own
 * phrases (SafeFetchError and SourceFormatError messages are written to be shown), never a
 * library's message or the document's text.
 */
export const sourcesErrors = declareErrors({
  invalid_url: { kind: "unprocessable", code: "invalid_request", message: "url must be an absolute http or https URL" },
  /** The SSRF guard refused the URL. */
  url_blocked: {
    kind: "unprocessable",
    message: (p: { why: string }) => `url could not be used as a source: ${p.why}`,
  },
  /** The URL did not answer usefully (status, time, size, type). */
  source_unreachable: {
    kind: "unprocessable",
    message: (p: { why: string }) => `url could not be used as a source: ${p.why}`,
  },
  source_unreadable: {
    kind: "unprocessable",
    message: (p: { type: string; why: string }) => `url is not a ${p.type} source: ${p.why}`,
  },
  /** The parser's queue is full; raised with `Retry-After`. */
  source_check_busy: {
    kind: "unavailable",
    message: "the source could not be checked now, try again shortly",
  },
  source_exists: { kind: "conflict", message: "url is already a source of this data model" },
  source_limit_reached: {
    kind: "conflict",
    message: (p: { max: number }) => `a data model has at most ${p.max} sources; delete one first`,
  },
  source_not_found: { kind: "not_found", message: "source not found" },
});
