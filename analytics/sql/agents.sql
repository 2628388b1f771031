-- Agent readership: traffic by caller identity (`payproxy:<agent>`, `zeroclick:<agent>`, storefront
-- and MCP callers): searches and answers asked, results surfaced (and distinct articles), clicks on
-- the tracking links they were given.
SELECT
  agent_identity,
  count(*) FILTER (WHERE event_type = 'api_call')::BIGINT AS searches,
  count(*) FILTER (WHERE event_type = 'query')::BIGINT AS answers,
  count(*) FILTER (WHERE event_type = 'result_impression')::BIGINT AS results_surfaced,
  count(DISTINCT (data_model_id, article_id)) FILTER (WHERE event_type = 'result_impression')::BIGINT AS articles_surfaced,
  count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article')::BIGINT AS clicks
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
  AND tenant_id = $tenant_id
  AND agent_identity IS NOT NULL
  AND event_type IN ('api_call', 'query', 'result_impression', 'click')
GROUP BY agent_identity
ORDER BY searches + answers DESC, clicks DESC, agent_identity
LIMIT $limit
