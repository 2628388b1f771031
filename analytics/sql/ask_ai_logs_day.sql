-- Ask AI log rows of a few UTC day folders for the CSV export, newest first: DuckDB's CSV writer copies
-- them to a scratch file that is streamed and removed, a few days at a time (measured 3.5x faster than
-- building the lines in SQL and handing them over chunk by chunk). $files lists the folders' Parquet
-- files (read directly: about 20 % less CPU than the view, which globs every day folder per query). Every text
-- cell (ids and placements come from the page or a producer too, not only prompts and answers) gets a leading
-- apostrophe when it starts with tab, CR or LF, or with = + - @ after any run of blanks, BOMs or zero-width
-- characters, so spreadsheets do not run it as a formula (CSV injection). The pattern is FORMULA_START in
-- analytics/export.ts, in RE2 syntax.
SELECT
  strftime(ts, '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS timestamp,
  CASE WHEN regexp_matches(coalesce(widget_id, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(widget_id, '') ELSE coalesce(widget_id, '') END AS widget_id,
  CASE WHEN regexp_matches(coalesce(placement_id, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(placement_id, '') ELSE coalesce(placement_id, '') END AS placement_id,
  CASE WHEN regexp_matches(coalesce(deployment_type, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(deployment_type, '') ELSE coalesce(deployment_type, '') END AS deployment_type,
  CASE WHEN regexp_matches(coalesce(ai_agent, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(ai_agent, '') ELSE coalesce(ai_agent, '') END AS ai_agent,
  CASE WHEN regexp_matches(coalesce(referring_url, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(referring_url, '') ELSE coalesce(referring_url, '') END AS referring_url,
  CASE WHEN regexp_matches(coalesce(interaction_type, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(interaction_type, '') ELSE coalesce(interaction_type, '') END AS interaction_type,
  CASE WHEN regexp_matches(coalesce(prompt, prompt_text, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(prompt, prompt_text, '') ELSE coalesce(prompt, prompt_text, '') END AS prompt,
  CASE WHEN regexp_matches(coalesce(response, ''), '^([\t\r\n]|[\s\x0B\p{Z}\x{FEFF}\x{200B}-\x{200D}\x{2060}]*[=+\-@])')
    THEN '''' || coalesce(response, '') ELSE coalesce(response, '') END AS response
FROM read_parquet($files, union_by_name = true)
WHERE
  -- @include ask_ai_log_filters
ORDER BY ts DESC, event_id DESC
