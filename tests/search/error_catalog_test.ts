import assert from "node:assert/strict";
import { AppError } from "../../core/errors.ts";
import { linkErrors } from "../../core/links/errors.ts";
import { searchErrors } from "../../core/search/errors.ts";
import { outsideShard, parseSearchShard } from "../../core/search/index/shard.ts";
import { pageAnalysisBusy } from "../../core/search/url_analyzer.ts";
import { httpStatus } from "../../routes/error_status.ts";

// The wire of each declared error: what the tests of the routes pinned before the catalogs.
const WIRE: [AppError, number, string, string][] = [
  [searchErrors.too_many_items({ max: 1000 }), 422, "too_many_items", "articles: at most 1000 per call"],
  [
    searchErrors.url_analysis_unavailable(),
    422,
    "url_analysis_unavailable",
    "query: URL analysis is unavailable on this server",
  ],
  [searchErrors.url_unreadable(), 422, "url_unreadable", "query: the URL could not be analysed"],
  [searchErrors.page_analysis_busy(), 503, "page_analysis_busy", "query: page analysis is busy, try again shortly"],
  [searchErrors.date_range_reversed(), 422, "invalid_request", "end_date must be on or after start_date"],
  [
    searchErrors.full_text_not_licensed(),
    403,
    "full_text_not_licensed",
    "Full text is not licensed for this data model: contents.text needs a full_text licence",
  ],
  [searchErrors.article_not_found(), 404, "article_not_found", "No article at this URL in the data model"],
  [linkErrors.link_not_found(), 404, "not_found", "Link not found"],
];

Deno.test("search and links catalogs: each error keeps its status, code and message on the wire", () => {
  for (const [err, status, code, message] of WIRE) {
    assert.ok(err instanceof AppError);
    assert.deepEqual([httpStatus(err), err.code, err.message], [status, code, message]);
  }
});

Deno.test("search catalog: a raise carries the site's private cause and headers, and no input", () => {
  const cause = new SyntaxError("Unexpected token < in JSON at position 0 of https://evil.example/?q=<script>");
  const err = searchErrors.url_unreadable({ cause });
  assert.equal(err.cause, cause, "the cause is kept for the log");
  assert.doesNotMatch(err.message, /evil|script|Unexpected/, "the public message never carries the cause");
  assert.deepEqual(pageAnalysisBusy(7).headers, { "Retry-After": "7" });
  assert.equal(httpStatus(pageAnalysisBusy(7)), 503);
});

Deno.test("outsideShard(): 421 misdirected_request, or 503 with the same body for a balancer", () => {
  const shard = parseSearchShard("2/4")!;
  const direct = outsideShard(shard);
  const retryable = outsideShard(shard, true);
  assert.deepEqual([httpStatus(direct), direct.code], [421, "misdirected_request"]);
  assert.deepEqual([httpStatus(retryable), retryable.code], [503, "misdirected_request"]);
  assert.equal(direct.message, retryable.message);
  assert.deepEqual(direct.extra, { error: "misdirected_request", shard: "2/4" });
  assert.deepEqual(direct.headers, { "shard-miss": "2/4" });
});
