-- Sponsored-conversation clicks per click type, most first.
SELECT click_type AS type, count(*)::BIGINT AS count
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
  AND event_type = 'click'
  AND click_type IS NOT NULL
GROUP BY click_type
ORDER BY count DESC, type
