-- ask_ai_by_time for two windows in one scan (`compare`): the window ($start_local .. $end_local)
-- and the earlier one ($prev_start_local .. $prev_end_local), both read in zone $tz, with the same
-- filters. Each event is tagged with its window (`win`: 0 the window, 1 the earlier one) and every
-- group of ask_ai_by_time is kept per window, so each window's figures are exactly what
-- ask_ai_by_time gives for it alone: a session that crosses from one window into the other counts
-- in each, with only that window's events. The caller uses it only for windows that do not
-- overlap (an event belongs to one window at most). Keep the metric expressions in step with
-- ask_ai_by_time.sql.
-- The window rides in the group key's lowest bit (gk = 2 * session or step + win, negated for
-- events without a session), so the big GROUP BY stays on one BIGINT key.
WITH tagged AS (
  SELECT
    CASE
      WHEN ts >= timezone('UTC', timezone($tz, CAST($start_local AS TIMESTAMP)))
        AND ts < timezone('UTC', timezone($tz, CAST($end_local AS TIMESTAMP) + INTERVAL 1 DAY)) THEN 0
      WHEN ts >= timezone('UTC', timezone($tz, CAST($prev_start_local AS TIMESTAMP)))
        AND ts < timezone('UTC', timezone($tz, CAST($prev_end_local AS TIMESTAMP) + INTERVAL 1 DAY)) THEN 1
    END AS win,
    ts, visit_id, event_type, click_type, visit_viewable,
    ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id
  FROM events
  WHERE (date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      OR date BETWEEN CAST($prev_from_date AS DATE) AND CAST($prev_to_date AS DATE))
    AND ts >= least(
      timezone('UTC', timezone($tz, CAST($start_local AS TIMESTAMP))),
      timezone('UTC', timezone($tz, CAST($prev_start_local AS TIMESTAMP))))
    AND ts < greatest(
      timezone('UTC', timezone($tz, CAST($end_local AS TIMESTAMP) + INTERVAL 1 DAY)),
      timezone('UTC', timezone($tz, CAST($prev_end_local AS TIMESTAMP) + INTERVAL 1 DAY)))
    AND tenant_id = $tenant_id
),
g AS (
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
      CASE WHEN visit_id IS NULL THEN -(2 * (epoch_us(ts) // 900000000) + win) ELSE 2 * visit_id + win END AS gk,
      ts, event_type, click_type, visit_viewable,
      ($ai_agent IS NULL OR ai_agent = $ai_agent)
        AND ($placement_id IS NULL OR placement_id = $placement_id)
        AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
        AND ($creative_id IS NULL OR creative_id = $creative_id)
        AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
        AND ($publisher_id IS NULL OR publisher_id = $publisher_id) AS blk
    FROM tagged
    WHERE win IS NOT NULL
  )
  GROUP BY gk
),
per_q AS (
  SELECT
    abs(gk) % 2 AS win,
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
  GROUP BY 1, 2
)
SELECT
  win::INTEGER AS win,
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
GROUP BY 1, 2
ORDER BY 1, 2
