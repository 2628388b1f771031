-- The sessions to put in time order again: those with an event flagged `visit_late` in the window (or from
-- a file written before the flag) and those with events that carry no visit id. Included by the rollups
-- that re-sessionise only what ingestion could not (`-- @include late_sessions`).
SELECT DISTINCT hash(session_id) AS sk
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
  AND tenant_id = $tenant_id
  AND (visit_late OR visit_late IS NULL)
  AND session_id IS NOT NULL
UNION
SELECT DISTINCT hash(session_id)
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
  AND tenant_id = $tenant_id
  AND visit_id IS NULL
  AND session_id IS NOT NULL
