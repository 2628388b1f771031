-- Number of Ask AI log rows matching the filters (for total_pages and count).
SELECT count(*)::BIGINT AS count
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
  AND tenant_id = $tenant_id
  AND event_type = 'query'
  AND list_contains($interaction_types, interaction_type)
  AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
  AND ($placement_id IS NULL OR placement_id = $placement_id)
  AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
