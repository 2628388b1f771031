-- ask_ai_by_time over derived visit figures ($derived_files, one per closed UTC day folder; see
-- visit_cube_build.sql) and the events of the remaining day folders ($raw_days, between $raw_from
-- and $raw_to). Same figures as ask_ai_by_time, row for row (visits derived from the events in
-- time order, viewability from the viewable events in the window): a window's edges are 15-minute UTC
-- instants (the caller checks), so a derived row's step is in the window exactly when its events
-- are; single-step visits and whole visits of one value set are summed as stored (see
-- visit_cube_build.sql); every other visit is regrouped from its per-step
-- rows together with the raw events, as ask_ai_by_time groups events (session-scoped, counted in
-- the bucket of its first block event).
WITH d AS (
  SELECT
    kind, visit_id, step, cut_only,
    sessions, viewable_sessions, engaged_sessions,
    loads, queries, clicks, article_clicks, cta_clicks, heartbeats, viewable,
    -- A column flagged in `conflicts` matches only a filter that leaves it out.
    ($ai_agent IS NULL OR (conflicts & 1 = 0 AND ai_agent = $ai_agent))
      AND ($placement_id IS NULL OR (conflicts & 2 = 0 AND placement_id = $placement_id))
      AND ($deployment_type IS NULL OR (conflicts & 4 = 0 AND deployment_type = $deployment_type))
      AND ($creative_id IS NULL OR (conflicts & 8 = 0 AND creative_id = $creative_id))
      AND ($line_item_id IS NULL OR (conflicts & 16 = 0 AND line_item_id = $line_item_id))
      AND ($publisher_id IS NULL OR (conflicts & 32 = 0 AND publisher_id = $publisher_id)) AS blk
  FROM read_parquet($derived_files)
  WHERE tenant_id = $tenant_id
    AND step >= CAST($start_ts AS TIMESTAMP)
    AND step < CAST($end_ts AS TIMESTAMP)
    -- A visit summed over several steps ('u') only when the window holds all of it; a window edge
    -- that cuts it takes its per-step rows ('f' with cut_only) instead.
    AND (kind <> 'u' OR last_step < CAST($end_ts AS TIMESTAMP))
    AND (NOT cut_only OR first_step < CAST($start_ts AS TIMESTAMP) OR last_step >= CAST($end_ts AS TIMESTAMP))
),
-- The raw days' events per session (hash of its session_id) and 15-minute step, and their visits
-- derived in time order exactly as ask_ai_by_time derives them. Visits never span two UTC days, so
-- a raw day's visits and a figure file's visits are never the same visit.
raw_steps AS (
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
      CASE WHEN session_id IS NOT NULL THEN hash(session_id) END AS sk,
      ts, event_type, click_type, in_view_pct, in_view_ms,
      time_bucket(INTERVAL 15 MINUTE, ts) AS step,
      (
        -- @include ask_ai_filters
      ) AS blk
    FROM events
    WHERE date BETWEEN CAST($raw_from AS DATE) AND CAST($raw_to AS DATE)
      AND list_contains($raw_days, strftime(date, '%Y-%m-%d'))
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
  )
  GROUP BY sk, step
),
raw_opened AS (
  SELECT *, coalesce(t0 - lag(t1) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM raw_steps
  WHERE sk IS NOT NULL
  WINDOW w AS (PARTITION BY sk, CAST(step AS DATE) ORDER BY step)
),
raw_numbered AS (
  SELECT
    *,
    sum(opens::INT) OVER (PARTITION BY sk, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING) AS visit_no
  FROM raw_opened
),
-- One row per visit (gk > 0) or per step of events without a visit (gk < 0): the figure files'
-- visits kept per step, then the raw days' visits and steps.
g AS (
  SELECT
    visit_id AS gk,
    min(step) FILTER (WHERE blk) AS first_step,
    sum(loads) FILTER (WHERE blk) AS block_loads,
    sum(queries) FILTER (WHERE blk) AS queries,
    sum(clicks) FILTER (WHERE blk) AS clicks,
    sum(article_clicks) FILTER (WHERE blk) AS article_clicks,
    sum(cta_clicks) FILTER (WHERE blk) AS cta_clicks,
    sum(heartbeats) FILTER (WHERE blk) AS heartbeats,
    sum(loads) AS loads,
    bool_or(viewable) AS viewable
  FROM d
  WHERE kind = 'f'
  GROUP BY visit_id
  UNION ALL
  SELECT
    1, min(step) FILTER (WHERE has_blk), sum(block_loads), sum(queries), sum(clicks), sum(article_clicks),
    sum(cta_clicks), sum(heartbeats), sum(loads), bool_or(viewable)
  FROM raw_numbered
  GROUP BY sk, CAST(step AS DATE), visit_no
  UNION ALL
  SELECT
    -1, CASE WHEN has_blk THEN step END, block_loads, queries, clicks, article_clicks, cta_clicks, heartbeats,
    loads, viewable
  FROM raw_steps
  WHERE sk IS NULL
),
per_q AS (
  SELECT
    first_step AS q,
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
  WHERE first_step IS NOT NULL
  GROUP BY 1
  UNION ALL
  SELECT
    step AS q,
    sum(loads),
    sum(viewable_sessions),
    sum(queries),
    sum(clicks),
    sum(article_clicks),
    sum(cta_clicks),
    sum(sessions),
    sum(engaged_sessions),
    sum(heartbeats) FILTER (WHERE kind <> 'n')
  FROM d
  WHERE kind <> 'f' AND blk
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
