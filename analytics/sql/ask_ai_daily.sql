-- Ask AI rollup, one row per day that has data. Sessions are assigned at ingestion (a session_id's
-- run of events with no gap over 30 minutes), and flags mark the event that starts a session, makes
-- it viewable (MRC) and its first query, so every figure is a filtered count per day and the daily
-- rows add up to the summary.
SELECT
  strftime(date, '%Y-%m-%d') AS date,
  count(*) FILTER (WHERE event_type = 'widget_load')::BIGINT AS widget_loads,
  count(*) FILTER (WHERE visit_viewable)::BIGINT AS viewable_sessions,
  count(*) FILTER (WHERE event_type = 'query')::BIGINT AS engagement_queries,
  count(*) FILTER (WHERE event_type = 'click')::BIGINT AS total_clicks,
  count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article')::BIGINT AS article_clicks,
  count(*) FILTER (WHERE event_type = 'click' AND click_type = 'cta')::BIGINT AS cta_clicks,
  count(*) FILTER (WHERE visit_start)::BIGINT AS sessions,
  count(*) FILTER (WHERE visit_query_no = 1)::BIGINT AS engaged_sessions,
  count(*) FILTER (WHERE event_type = 'heartbeat' AND visit_id IS NOT NULL)::BIGINT AS heartbeats
FROM events
WHERE date BETWEEN CAST($start_date AS DATE) AND CAST($end_date AS DATE)
  AND tenant_id = $tenant_id
  AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
  AND ($placement_id IS NULL OR placement_id = $placement_id)
  AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
  AND ($creative_id IS NULL OR creative_id = $creative_id)
  AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
  AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
GROUP BY date
ORDER BY date
