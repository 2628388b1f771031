-- Sponsored-conversation rollup per campaign, most impressions first.
SELECT
  campaign_id,
  count(*) FILTER (WHERE event_type = 'sponsored_impression')::BIGINT AS impressions,
  count(*) FILTER (WHERE event_type = 'query')::BIGINT AS queries,
  count(*) FILTER (WHERE event_type = 'click')::BIGINT AS total_clicks
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
GROUP BY campaign_id
ORDER BY impressions DESC, queries DESC, campaign_id
