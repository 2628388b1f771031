-- Sponsored-conversation rollup per prompt text (configured prompts and user-typed follow-ups).
-- Configured prompts are counted by their prompt_impression events; queries by their text.
SELECT
  coalesce(prompt_text, prompt) AS prompt_text,
  count(*) FILTER (WHERE event_type = 'prompt_impression')::BIGINT AS impressions,
  count(*) FILTER (WHERE event_type = 'query')::BIGINT AS queries
FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND list_contains($campaign_ids, campaign_id)
    AND (
      -- @include sponsored_filters
    )
  AND event_type IN ('prompt_impression', 'query')
  AND coalesce(prompt_text, prompt) IS NOT NULL
GROUP BY 1
ORDER BY impressions DESC, queries DESC, prompt_text
LIMIT 500
