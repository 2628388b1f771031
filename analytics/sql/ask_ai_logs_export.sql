-- Ask AI log rows of one UTC day folder ($day) as ready CSV lines, newest first (the export walks
-- the window's folders from the newest down, so the whole file is newest first while DuckDB only
-- ever sorts one day). Every field is quoted; a field starting with = + - @ tab or CR gets a leading
-- apostrophe so spreadsheets do not run it as a formula (CSV injection).
SELECT array_to_string(list_transform([
  strftime(ts, '%Y-%m-%dT%H:%M:%S.%g') || 'Z',
  coalesce(widget_id, ''),
  coalesce(placement_id, ''),
  coalesce(deployment_type, ''),
  coalesce(ai_agent, ''),
  coalesce(referring_url, ''),
  coalesce(interaction_type, ''),
  coalesce(prompt, prompt_text, ''),
  coalesce(response, '')
], x -> '"' || replace(CASE WHEN regexp_matches(x, '^[=+\-@\t\r]') THEN '''' || x ELSE x END, '"', '""') || '"'), ',')
  AS line
FROM events
WHERE date = CAST($day AS DATE)
  AND ts >= timezone('UTC', timezone($tz, CAST($start_local AS TIMESTAMP)))
  AND ts < timezone('UTC', timezone($tz, CAST($end_local AS TIMESTAMP) + INTERVAL 1 DAY))
  AND tenant_id = $tenant_id
  AND event_type = 'query'
  AND list_contains($interaction_types, interaction_type)
  AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
  AND ($placement_id IS NULL OR placement_id = $placement_id)
  AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
ORDER BY ts DESC, event_id DESC
