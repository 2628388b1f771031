/**
 * GET /v1/analytics/realtime: active sessions, queries and clicks of the last 5 and 30 minutes.
 * Events acknowledged but not yet flushed to Parquet count too: they are read from the KV
 * write-ahead log (only the caller's chunks of the window, through the log's index), and left out
 * of the Parquet query by event id so none counts twice.
 */
import type { Clock } from "../core/clock.ts";
import type { Repos } from "../core/store/mod.ts";
import type { AnalyticsEngine } from "./engine.ts";
import { formatDay } from "./filters.ts";
import { type AnalyticsQuery, widgetAgent } from "./rollups.ts";
import type { EventRow } from "./schema.ts";
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
  // A batch retried before the flush (its first answer lost) is in the log twice with the same
  // event ids; the flush stores each once, so each counts once here too.
  const walIds = new Set<string>();
  const visits5 = new Set<string>();
  const visits30 = new Set<string>();
  const wal = { queries_5: 0, queries_30: 0, clicks_5: 0, clicks_30: 0 };
  const dec = new TextDecoder();
  // Only the chunks holding this tenant's events of the window (the log's index), not the whole log.
  for await (const chunk of deps.wal.tenantChunks(tenantId, since30, until)) {
    for (const line of dec.decode(chunk.bytes).split("\n")) {
      if (!line) continue;
      const r = JSON.parse(line) as EventRow;
      if (r.tenant_id !== tenantId || (agent !== null && r.ai_agent !== agent)) continue;
      if (r.ts_ms < since30 || r.ts_ms > until || walIds.has(r.event_id)) continue;
      walIds.add(r.event_id);
      const recent = r.ts_ms >= since5;
      if (r.visit_id !== null) {
        visits30.add(String(r.visit_id));
        if (recent) visits5.add(String(r.visit_id));
      }
      if (r.event_type === "query") (wal.queries_30++, recent && wal.queries_5++);
      if (r.event_type === "click") (wal.clicks_30++, recent && wal.clicks_5++);
    }
  }
  const [row = {}] = await deps.engine.query("realtime", {
    from_date: formatDay(since30),
    to_date: formatDay(until),
    since_30: sqlTs(since30),
    since_5: sqlTs(since5),
    until: sqlTs(until),
    tenant_id: tenantId,
    ai_agent: agent,
    wal_ids: [...walIds],
    wal_visits_5: [...visits5],
    wal_visits_30: [...visits30],
  });
  const block = (m: 5 | 30) => ({
    active_sessions: num(row[`sessions_${m}`]),
    queries: num(row[`queries_${m}`]) + wal[`queries_${m}`],
    clicks: num(row[`clicks_${m}`]) + wal[`clicks_${m}`],
  });
  return {
    success: true,
    filters: q.widget_id ? { widget_id: q.widget_id } : {},
    last_5_minutes: block(5),
    last_30_minutes: block(30),
    unflushed_events: walIds.size,
    meta: { timezone: tz, generated_at: new Date(now).toISOString() },
  };
}
