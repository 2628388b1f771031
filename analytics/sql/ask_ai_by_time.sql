-- Ask AI metrics of a filtered block of events per local time bucket ($interval = hour, day, week
-- or month in zone $tz); a session counts in the bucket of its first event in the block.
-- The block is every event in the local window ($start_ts .. $end_ts, the UTC instants of its local midnights) that
-- matches the filters. Event counts (queries, clicks, heartbeats) are the block's events. Session
-- figures count the sessions the block's events belong to, once per group: a session's widget
-- loads and viewability come from its events in the window, whatever the filters, so a block that
-- holds only the later part of its sessions (deployment_type=sponsored_conversation, whose sessions
-- start with an `embed` load) still reports the sessions, loads and viewable sessions its queries
-- and clicks belong to, and every rate matches its counts. A session is viewable when any of its
-- events in the window is MRC-viewable (not only its first), so a window that starts after its
-- first viewable event still counts it. One scan: every tenant event in the window, the filters as
-- the flag `blk`.
-- Sessions are a session_id's events of one UTC day in time order, split where more than 30
-- minutes pass between two events, whatever order the events arrived in. The window is one stretch
-- of time, so the gaps between its events are the gaps between those events in the whole day.
-- Fast path: while none of a session's window events is flagged `visit_late` at ingestion, its
-- ingestion-time visits are its visits in time order (analytics/enrich.ts), so events are grouped
-- by `visit_id`, one integer key, as before sessions were derived. Only sessions with a flagged event
-- in the window (or from files written before the flag) are read a second time and derived in time
-- order: their events summed per session (hash of its id) and 15-minute UTC step (no gap can open
-- inside a step), and only those rows put in time order. With no such session the second read does
-- not run, and the flag's filter is answered by row-group statistics.
-- Time: a session's block events are counted in the bucket of its first block event; events
-- without a session in their own 15-minute step. Only the steps are converted to local time
-- (every zone offset is a multiple of 15 minutes), which keeps ICU off the per-event path.
WITH v AS (
  SELECT
    gk,
    min(sk) AS sk,
    max(sk) AS sk_hi,
    min(ts) FILTER (WHERE blk) AS first_ts,
    count(*) FILTER (WHERE blk AND event_type = 'widget_load') AS block_loads,
    count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'heartbeat') AS heartbeats,
    count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
    bool_or(event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000) AS viewable
  FROM (
    SELECT
      -- The ingestion visit and its UTC day (a visit id below 2^53, the day number modulo 512 above
      -- it: older files may hold a visit across midnight, and sessions end there); events without a
      -- session per 15-minute step (< 0).
      coalesce(
        visit_id + (epoch_us(ts) // 86400000000 % 512) * 9007199254740992, -(epoch_us(ts) // 900000000) - 1
      ) AS gk,
      hash(session_id) AS sk,
      ts, event_type, click_type, in_view_pct, in_view_ms,
      (
        -- @include ask_ai_filters
      ) AS blk
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND (visit_id IS NOT NULL OR session_id IS NULL)
  )
  GROUP BY gk
),
-- The sessions derived in time order: those with an event flagged `visit_late` in the window (or
-- from a file written before the flag), with events that carry no visit id (not written by
-- ingestion), and (never seen in practice) two sessions that drew the same random visit id.
redo AS (
  -- @include late_sessions
  UNION
  SELECT sk FROM v WHERE gk >= 0 AND sk <> sk_hi
  UNION
  SELECT sk_hi FROM v WHERE gk >= 0 AND sk <> sk_hi
),
steps AS (
  SELECT
    sk, step,
    min(ts) AS t0,
    max(ts) AS t1,
    bool_or(blk) AS has_blk,
    count(*) FILTER (WHERE blk AND event_type = 'widget_load') AS block_loads,
    count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'heartbeat') AS heartbeats,
    count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
    bool_or(event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000) AS viewable
  FROM (
    SELECT
      hash(session_id) AS sk, time_bucket(INTERVAL 15 MINUTE, ts) AS step,
      ts, event_type, click_type, in_view_pct, in_view_ms,
      (
        -- @include ask_ai_filters
      ) AS blk
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND session_id IS NOT NULL
  )
  SEMI JOIN redo USING (sk)
  GROUP BY sk, step
),
-- A derived session's steps in time order: a step whose first event comes more than 30 minutes
-- after the previous step's last event (or the first step of a UTC day) opens a visit.
opened AS (
  SELECT *, coalesce(t0 - lag(t1) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM steps
  WINDOW w AS (PARTITION BY sk, CAST(step AS DATE) ORDER BY step)
),
numbered AS (
  SELECT
    *,
    sum(opens::INT) OVER (PARTITION BY sk, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING) AS visit_no
  FROM opened
),
-- One row per visit (kept ingestion visit, or derived: session, UTC day and number), and per step
-- for events without a session.
g AS (
  SELECT
    gk >= 0 AS in_visit, time_bucket(INTERVAL 15 MINUTE, first_ts) AS first_step, block_loads, queries, clicks, article_clicks,
    cta_clicks, heartbeats, loads, viewable
  FROM v
  WHERE gk < 0
  UNION ALL
  SELECT
    true, time_bucket(INTERVAL 15 MINUTE, first_ts), block_loads, queries, clicks, article_clicks, cta_clicks,
    heartbeats, loads, viewable
  FROM v
  ANTI JOIN redo USING (sk)
  WHERE gk >= 0
  UNION ALL
  SELECT
    true,
    min(step) FILTER (WHERE has_blk),
    sum(block_loads),
    sum(queries),
    sum(clicks),
    sum(article_clicks),
    sum(cta_clicks),
    sum(heartbeats),
    sum(loads),
    bool_or(viewable)
  FROM numbered
  GROUP BY sk, CAST(step AS DATE), visit_no
),
per_q AS (
  SELECT
    first_step AS q,
    sum(CASE WHEN in_visit THEN loads ELSE block_loads END) AS widget_loads,
    count(*) FILTER (WHERE in_visit AND viewable) AS viewable_sessions,
    sum(queries) AS engagement_queries,
    sum(clicks) AS total_clicks,
    sum(article_clicks) AS article_clicks,
    sum(cta_clicks) AS cta_clicks,
    count(*) FILTER (WHERE in_visit) AS sessions,
    count(*) FILTER (WHERE in_visit AND queries > 0) AS engaged_sessions,
    sum(heartbeats) FILTER (WHERE in_visit) AS heartbeats
  FROM g
  WHERE first_step IS NOT NULL
  GROUP BY 1
)
SELECT
  strftime(
    date_trunc($interval, timezone($tz, timezone('UTC', q))),
    CASE $interval WHEN 'hour' THEN '%Y-%m-%dT%H:00' WHEN 'month' THEN '%Y-%m' ELSE '%Y-%m-%d' END
  ) AS key,
  sum(widget_loads)::BIGINT AS widget_loads,
  sum(viewable_sessions)::BIGINT AS viewable_sessions,
  sum(engagement_queries)::BIGINT AS engagement_queries,
  sum(total_clicks)::BIGINT AS total_clicks,
  sum(article_clicks)::BIGINT AS article_clicks,
  sum(cta_clicks)::BIGINT AS cta_clicks,
  sum(sessions)::BIGINT AS sessions,
  sum(engaged_sessions)::BIGINT AS engaged_sessions,
  coalesce(sum(heartbeats), 0)::BIGINT AS heartbeats
FROM per_q
GROUP BY 1
ORDER BY 1
