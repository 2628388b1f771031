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
    AND (
      -- @include sponsored_filters
    )
GROUP BY campaign_id
ORDER BY impressions DESC, queries DESC, campaign_id
