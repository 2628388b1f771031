/**
 * The contract between URL queries in search and the page analysis in core/extract/.
 */
import { AppError } from "../errors.ts";
import { searchErrors } from "./errors.ts";

/** A web page reduced to what recommendations need. */
export interface AnalyzedPage {
  /** The final URL after redirects. */
  url: string;
  title: string;
  /** Main text, paragraphs separated by blank lines. */
  text: string;
  /** Extractive summary of `text` (a few sentences). */
  summary: string;
  siteName?: string;
  byline?: string;
  /** ISO 8601, when the page states it. */
  publishedTime?: string;
}

/** Fetches and analyses a URL given as a search query. */
export interface UrlAnalyzer {
  /**
   * @param caller who asks (`tenant:<id>`, `payproxy:<agent>`, `poller`): callers take turns at page analysis
   * @throws {UrlAnalysisError} when the URL is refused, cannot be fetched, or has no readable text.
   * @throws {AppError} 503 `page_analysis_busy` (see {@link pageAnalysisBusy}) when page analysis has no room.
   */
  analyze(url: string, caller?: string): Promise<AnalyzedPage>;
  /** Releases background resources (the extraction worker). */
  close?(): void;
}

/** Why a URL query could not be analysed: the safe-fetch codes, `no_content`, and `too_complex` (analysis deadline). */
export type UrlAnalysisErrorCode =
  | "invalid_url"
  | "blocked_address"
  | "unreachable"
  | "timeout"
  | "too_large"
  | "bad_status"
  | "unsupported_content_type"
  | "too_many_redirects"
  | "no_content"
  | "too_complex";

/**
 * A URL query that cannot be used: 422 `{message}` when it reaches the edge unhandled. `message`
 * is public (it never names resolved addresses); the underlying error is the private `cause`.
 */
export class UrlAnalysisError extends AppError {
  override readonly code: UrlAnalysisErrorCode;

  constructor(code: UrlAnalysisErrorCode, message: string, cause?: unknown) {
    super("unprocessable", code, message, { cause });
    this.name = "UrlAnalysisError";
    this.code = code;
  }
}

/** Page analysis has no room in its queue: 503 with `Retry-After`, in the route family's error body. */
export const pageAnalysisBusy = (retryAfterS: number): AppError =>
  searchErrors.page_analysis_busy({ headers: { "Retry-After": String(retryAfterS) } });
