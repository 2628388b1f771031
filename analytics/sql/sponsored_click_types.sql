-- Sponsored-conversation clicks per click type, most first.
SELECT click_type AS type, count(*)::BIGINT AS count
FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND list_contains($campaign_ids, campaign_id)
    AND (
      -- @include sponsored_filters
    )
  AND event_type = 'click'
  AND click_type IS NOT NULL
GROUP BY click_type
ORDER BY count DESC, type
