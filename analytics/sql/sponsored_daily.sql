-- Sponsored-conversation rollup, one row per day that has data, over the tenant's campaigns (the
-- campaign_id frozen on every event of a sponsored conversation). A sponsored session is counted on
-- the impression that started it (sponsored_start); daily rows add up to the summary. Days are those
-- of zone $tz: 15-minute UTC buckets first, then only the buckets are converted (see ask_ai_metrics).
WITH quarters AS (
SELECT
  time_bucket(INTERVAL 15 MINUTE, ts) AS q,
  count(*) FILTER (WHERE event_type = 'sponsored_impression')::BIGINT AS impressions,
  count(*) FILTER (WHERE event_type = 'query')::BIGINT AS queries,
  count(*) FILTER (WHERE event_type = 'click')::BIGINT AS total_clicks,
  count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article')::BIGINT AS article_clicks,
  count(*) FILTER (WHERE event_type = 'click' AND click_type = 'cta')::BIGINT AS cta_clicks,
  count(*) FILTER (WHERE sponsored_start)::BIGINT AS sessions,
  count(*) FILTER (WHERE event_type = 'heartbeat' AND visit_id IS NOT NULL)::BIGINT AS heartbeats
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
  AND tenant_id = $tenant_id
  AND list_contains($campaign_ids, campaign_id)
  AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
  AND ($placement_id IS NULL OR placement_id = $placement_id)
  AND ($prompt_id IS NULL OR prompt_id = $prompt_id)
  AND ($creative_id IS NULL OR creative_id = $creative_id)
  AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
  AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
GROUP BY q
)
SELECT
  strftime(timezone($tz, timezone('UTC', q)), '%Y-%m-%d') AS date,
  sum(impressions)::BIGINT AS impressions,
  sum(queries)::BIGINT AS queries,
  sum(total_clicks)::BIGINT AS total_clicks,
  sum(article_clicks)::BIGINT AS article_clicks,
  sum(cta_clicks)::BIGINT AS cta_clicks,
  sum(sessions)::BIGINT AS sessions,
  sum(heartbeats)::BIGINT AS heartbeats
FROM quarters
GROUP BY 1
ORDER BY 1
