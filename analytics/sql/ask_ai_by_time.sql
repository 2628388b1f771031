-- Ask AI metrics of a filtered block of events per local time bucket ($interval = hour, day, week
-- or month in zone $tz); a session counts in the bucket of its first event in the block.
-- The block is every event in the local window ($start_ts .. $end_ts, the UTC instants of its local midnights) that
-- matches the filters. Event counts (queries, clicks, heartbeats) are the block's events. Session
-- figures count the sessions (visit_id, assigned at ingestion) the block's events belong to, once per
-- group: a session's widget loads and viewability come from the whole session, so a block that holds
-- only the later part of its sessions (deployment_type=sponsored_conversation, whose sessions start
-- with an `embed` load) still reports the sessions, loads and viewable sessions its queries and
-- clicks belong to, and every rate matches its counts. One scan: every tenant event in the window,
-- the filters as the flag `blk`.
-- Time: one GROUP BY over a single key (the session, or for events without one, their 15-minute
-- UTC step), measured several times faster than grouping by session and time step. A session's
-- block events are counted in the bucket of its first block event (session-scoped, as the sessions
-- themselves); events without a session in their own 15-minute step. Only the per-session steps
-- are converted to local time (every zone offset is a multiple of 15 minutes), which keeps ICU off
-- the per-event path.
WITH g AS (
  SELECT
    gk,
    min(ts) FILTER (WHERE blk) AS first_ts,
    count(*) FILTER (WHERE blk AND event_type = 'widget_load') AS block_loads,
    count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'heartbeat') AS heartbeats,
    count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
    bool_or(visit_viewable) AS viewable
  FROM (
    SELECT
      coalesce(visit_id, -(epoch_us(ts) // 900000000)) AS gk,
      ts, event_type, click_type, visit_viewable,
      ($ai_agent IS NULL OR ai_agent = $ai_agent)
        AND ($placement_id IS NULL OR placement_id = $placement_id)
        AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
        AND ($creative_id IS NULL OR creative_id = $creative_id)
        AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
        AND ($publisher_id IS NULL OR publisher_id = $publisher_id) AS blk
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
  )
  GROUP BY gk
),
per_q AS (
  SELECT
    time_bucket(INTERVAL 15 MINUTE, first_ts) AS q,
    sum(CASE WHEN gk > 0 THEN loads ELSE block_loads END) AS widget_loads,
    count(*) FILTER (WHERE gk > 0 AND viewable) AS viewable_sessions,
    sum(queries) AS engagement_queries,
    sum(clicks) AS total_clicks,
    sum(article_clicks) AS article_clicks,
    sum(cta_clicks) AS cta_clicks,
    count(*) FILTER (WHERE gk > 0) AS sessions,
    count(*) FILTER (WHERE gk > 0 AND queries > 0) AS engaged_sessions,
    sum(heartbeats) FILTER (WHERE gk > 0) AS heartbeats
  FROM g
  WHERE first_ts IS NOT NULL
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
