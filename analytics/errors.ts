/**
 * The analytics room's error catalog: the refusals of the analytics query strings (400
 * `{message}`) and of event batches (422), declared once. Messages name a parameter and what it
 * must be, never the value sent.
 */
import { declareErrors } from "../core/errors.ts";
import { idFormatMessage } from "../core/ids.ts";

const badQuery = { kind: "bad_request", code: "invalid_query" } as const;

export const analyticsErrors = declareErrors({
  compare_invalid: { ...badQuery, message: "compare must be one of: previous_period, previous_year" },
  start_date_invalid: { ...badQuery, message: "start_date must be a valid date in YYYY-MM-DD format" },
  end_date_invalid: { ...badQuery, message: "end_date must be a valid date in YYYY-MM-DD format" },
  end_before_start: { ...badQuery, message: "end_date must be on or after start_date" },
  range_too_long: { ...badQuery, message: (p: { maxDays: number }) => `date range must not exceed ${p.maxDays} days` },
  /** `name` is the parameter's name (ours, not the caller's). */
  count_invalid: { ...badQuery, message: (p: { name: string }) => `${p.name} must be an integer >= 1` },
  timezone_invalid: { ...badQuery, message: "timezone must be a valid IANA time zone name" },
  choice_required: {
    ...badQuery,
    message: (p: { name: string; allowed: readonly string[] }) =>
      `${p.name} is required: one of ${p.allowed.join(", ")}`,
  },
  choice_invalid: {
    ...badQuery,
    message: (p: { name: string; allowed: readonly string[] }) => `${p.name} must be one of: ${p.allowed.join(", ")}`,
  },
  interval_needs_date: { ...badQuery, message: "interval applies only to dimension=date" },
  format_invalid: { ...badQuery, message: "format must be one of: json, csv, parquet" },
  /** Unknown, or another tenant's: not told apart. */
  data_model_not_found: { ...badQuery, message: "data_model_id not found" },
  widget_not_found: { ...badQuery, message: "widget_id not found" },
  agent_not_found: { ...badQuery, message: "agent_id not found" },
  /** A logs export while the tenant's others are still under way (analytics/export_slots.ts); spec 7.2's 429. */
  exports_busy: { kind: "rate_limited", code: "rate_limited", message: "rate limit exceeded" },
  /**
   * A query's day folders were being swapped by compaction through all its runs
   * (analytics/day_swaps.ts): a 503 to retry rather than a figure that misses the day's events.
   */
  events_reorganising: {
    kind: "unavailable",
    message: "Analytics data is being reorganised; retry in a moment",
  },
  /**
   * The event log holds its most (`EVENTS_WAL_MAX_BYTES`) while its flush cannot keep up; raised
   * with `Retry-After`. Refused before anything of the batch is stored, so no acknowledged event is
   * ever dropped for room.
   */
  event_log_full: {
    kind: "unavailable",
    code: "server_busy",
    message: "The event log is full until it is written out, try again shortly",
  },
  /**
   * One tenant's events hold its part of the event log (`EVENTS_WAL_TENANT_SHARE_PCT` of
   * `EVENTS_WAL_MAX_BYTES`) while its flush cannot keep up; raised with `Retry-After`, before
   * anything of the batch is stored. Other tenants' batches are still taken.
   */
  event_log_share_full: {
    kind: "unavailable",
    code: "server_busy",
    message: "This tenant's part of the event log is full until it is written out, try again shortly",
  },
  /**
   * A batch whose events alone take more than the whole event log may hold (`EVENTS_WAL_MAX_BYTES`):
   * no flush could ever make room for it, so it is refused for its size, not as busy (a client told
   * to retry later would retry forever). Nothing of it is stored.
   */
  event_batch_larger_than_log: {
    kind: "too_large",
    code: "body_too_large",
    message: (p: { max: number }) =>
      `Request body too large: a batch's events may take at most ${p.max} bytes in the event log; send fewer per batch`,
  },
  /** A widget batch holding more JSON values than its events can use, refused before it is decoded. */
  widget_batch_too_many_values: {
    kind: "too_large",
    code: "body_too_large",
    message: (p: { max: number }) => `Request body too large: a widget batch holds at most ${p.max} JSON values`,
  },
  campaign_id_malformed: { ...badQuery, message: idFormatMessage("campaign_id", "cp") },
  /**
   * The first bad event of a batch: `field` is its path in our schema, `problem` our phrase or
   * zod's issue text (which names the expected shape, never the value).
   */
  invalid_event: {
    kind: "unprocessable",
    message: (p: { index: number; field: string; problem: string }) =>
      `events.${p.index}${p.field ? "." + p.field : ""}: ${p.problem}`,
  },
});
