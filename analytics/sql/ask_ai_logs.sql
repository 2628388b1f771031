-- Ask AI log rows (query events), newest first, one page.
SELECT
  strftime(ts, '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS timestamp,
  coalesce(widget_id, '') AS widget_id,
  coalesce(placement_id, '') AS placement_id,
  coalesce(deployment_type, '') AS deployment_type,
  coalesce(ai_agent, '') AS ai_agent,
  coalesce(referring_url, '') AS referring_url,
  coalesce(interaction_type, '') AS interaction_type,
  coalesce(prompt, prompt_text, '') AS prompt,
  coalesce(response, '') AS response
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND (
    -- @include ask_ai_log_filters
  )
ORDER BY ts DESC, event_id DESC
LIMIT $limit OFFSET $offset
