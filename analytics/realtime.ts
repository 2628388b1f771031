/**
 * GET /v1/analytics/realtime: active sessions, queries and clicks of the last 5 and 30 minutes.
 * Events acknowledged but not yet flushed to Parquet count too: they are read from the KV
 * write-ahead log (only the caller's chunks of the window, through the log's index) and counted as
 * the flush will store them: an event id is one event by one rule on both sides
 * (DUPLICATE_WINDOW_MINUTES), so the figures do not move when the log is flushed.
 */
import type { Clock } from "../core/clock.ts";
import type { Repos } from "../core/store/mod.ts";
import type { AnalyticsEngine } from "./engine.ts";
import { formatDay } from "./filters.ts";
import { type AnalyticsQuery, widgetAgent } from "./rollups.ts";
import { DUPLICATE_WINDOW_MINUTES, type EventRow } from "./schema.ts";
import { num } from "./sql_util.ts";
import { parseTimezone } from "./timezone.ts";
import type { EventWal } from "./wal.ts";

/** Dependencies of the realtime counters. */
export interface RealtimeDeps {
  engine: AnalyticsEngine;
  repos: Repos;
  clock: Clock;
  wal: EventWal;
}

const MIN_MS = 60_000;
// Events may carry a client timestamp up to 5 minutes ahead (ingestion's skew allowance).
const FUTURE_MS = 5 * MIN_MS;
const sqlTs = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "");

/** The realtime answer (windows end at the injected clock's now). */
export async function realtimeCounters(deps: RealtimeDeps, tenantId: string, q: AnalyticsQuery) {
  const tz = parseTimezone(q.timezone, await deps.engine.timezones());
  const agent = await widgetAgent(deps, tenantId, q);
  const now = deps.clock.now().getTime();
  const since30 = now - 30 * MIN_MS;
  const since5 = now - 5 * MIN_MS;
  const until = now + FUTURE_MS;
  const logged = await loggedCopies(deps.wal, tenantId, since30, until);
  const wal = logged.filter((r) => agent === null || r.ai_agent === agent);
  // The files are read over the window, and, for the logged copies' ids, over the span a copy that
  // keeps one out may lie in (its UTC day, and the duplicate window either side of it).
  const windowMs = DUPLICATE_WINDOW_MINUTES * MIN_MS;
  // A loop, not Math.min(...spread): the spread throws RangeError past ~130k logged copies.
  let from = since30;
  let to = until + 1;
  for (const r of logged) {
    const day = dayStart(r.ts_ms);
    if (day - windowMs < from) from = day - windowMs;
    if (day + DAY_MS + windowMs > to) to = day + DAY_MS + windowMs;
  }
  const [row = {}] = await deps.engine.query("realtime", {
    from_date: formatDay(from),
    to_date: formatDay(to - 1),
    since_30: sqlTs(since30),
    since_5: sqlTs(since5),
    until: sqlTs(until),
    read_from: sqlTs(from),
    read_to: sqlTs(to),
    tenant_id: tenantId,
    ai_agent: agent,
    duplicate_window_minutes: DUPLICATE_WINDOW_MINUTES,
    // One string, not lists: binding a list parameter takes time growing with its length squared.
    wal: JSON.stringify(
      logged.map((r) => ({ i: r.event_id, t: r.ts_ms, y: r.event_type, v: r.visit_id, a: r.ai_agent })),
    ),
  });
  const block = (m: 5 | 30) => ({
    active_sessions: num(row[`sessions_${m}`]),
    queries: num(row[`queries_${m}`]),
    clicks: num(row[`clicks_${m}`]),
  });
  return {
    success: true,
    filters: q.widget_id ? { widget_id: q.widget_id } : {},
    last_5_minutes: block(5),
    last_30_minutes: block(30),
    unflushed_events: wal.length,
    meta: { timezone: tz, generated_at: new Date(now).toISOString() },
  };
}

const DAY_MS = 86_400_000;
// The log's index reaches 35 minutes back (wal.ts): 5 minutes before the window.
const INDEX_SLACK_MS = 5 * MIN_MS;
const dayStart = (ms: number) => ms - (ms % DAY_MS);

/**
 * The tenant's events of the window still in the log, one per event id as the flush keeps it: a
 * copy whose earlier copy lies on its UTC day or within the duplicate window before it
 * (DUPLICATE_WINDOW_MINUTES) is left out, as a batch retried before the flush (its first answer
 * lost) is stored once.
 */
async function loggedCopies(wal: EventWal, tenantId: string, since30: number, until: number): Promise<EventRow[]> {
  const copies = new Map<string, EventRow[]>();
  const dec = new TextDecoder();
  // Only the chunks holding this tenant's events of the window (the log's index), not the whole log;
  // and of the 5 minutes before it, as far as the index reaches: an earlier copy there keeps one in
  // the window out.
  for await (const chunk of wal.tenantChunks(tenantId, since30 - INDEX_SLACK_MS, until)) {
    for (const line of dec.decode(chunk.bytes).split("\n")) {
      if (!line) continue;
      const r = JSON.parse(line) as EventRow;
      if (r.tenant_id !== tenantId) continue;
      // Copies outside the window are read too: one may keep a copy inside it out.
      const same = copies.get(r.event_id);
      if (same) same.push(r);
      else copies.set(r.event_id, [r]);
    }
  }
  const windowMs = DUPLICATE_WINDOW_MINUTES * MIN_MS;
  const out: EventRow[] = [];
  for (const rows of copies.values()) {
    rows.sort((a, b) => a.ts_ms - b.ts_ms);
    // As the flush's write: a copy is kept when the copy before it is older than its day's start less the window.
    for (const [i, r] of rows.entries()) {
      const kept = i === 0 || rows[i - 1]!.ts_ms < dayStart(r.ts_ms) - windowMs;
      if (kept && r.ts_ms >= since30 && r.ts_ms <= until) out.push(r);
    }
  }
  return out;
}
