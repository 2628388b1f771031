/**
 * The search room's errors (core/search and its index/, rank/, text/ and store/), declared once:
 * a stable code, a public message and a kind; the edge chooses the status and the body shape.
 * No message names the caller's input (query, URL or data model id).
 */
import { declareErrors } from "../errors.ts";

export const searchErrors = declareErrors({
  /** An ingest call with more items than one call takes. */
  too_many_items: {
    kind: "unprocessable",
    message: ({ max }: { max: number }) => `articles: at most ${max} per call`,
  },
  /** A URL query on a server built without page analysis. */
  url_analysis_unavailable: {
    kind: "unprocessable",
    message: "query: URL analysis is unavailable on this server",
  },
  /** A URL query whose page analysis failed in a way it did not name (the cause is logged). */
  url_unreadable: {
    kind: "unprocessable",
    message: "query: the URL could not be analysed",
  },
  /** Page analysis has no room in its queue; the site adds `Retry-After`. */
  page_analysis_busy: {
    kind: "unavailable",
    message: "query: page analysis is busy, try again shortly",
  },
  /** The filters' date range ends before it starts. */
  date_range_reversed: {
    kind: "unprocessable",
    code: "invalid_request",
    message: "end_date must be on or after start_date",
  },
  /** Full text asked of a data model whose publisher licenses summaries only. */
  full_text_not_licensed: {
    kind: "forbidden",
    message: "Full text is not licensed for this data model: contents.text needs a full_text licence",
  },
  /** No article at the URL asked for (the URL is not echoed). */
  article_not_found: {
    kind: "not_found",
    message: "No article at this URL in the data model",
  },
  /** The data model is served by another search shard (421, which a client may resend elsewhere). */
  misdirected_request: {
    kind: "misdirected",
    message: "This process does not serve that data model: send the request through the balancer",
  },
  /** The same, as 503 for a balancer that retries only on 503 (HAProxy). */
  misdirected_request_retryable: {
    kind: "unavailable",
    code: "misdirected_request",
    message: "This process does not serve that data model: send the request through the balancer",
  },
});

/** A caller asked for the full text of a data model whose publisher licenses summaries only. */
export const fullTextNotLicensed = () => searchErrors.full_text_not_licensed();
