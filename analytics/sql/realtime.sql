-- Realtime counters over the last 5 and 30 minutes from the Parquet files. Events still in the
-- write-ahead log are counted by the caller and passed in: their ids ($wal_ids) are left out here
-- (a flush may have moved them meanwhile), their sessions ($wal_visits_5/30) join the distinct
-- session counts.
WITH p AS (
  SELECT ts, event_type, visit_id
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($since_30 AS TIMESTAMP)
    AND ts <= CAST($until AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
    AND NOT list_contains($wal_ids, event_id)
)
SELECT
  (SELECT count(*) FROM (
    SELECT visit_id FROM p WHERE visit_id IS NOT NULL AND ts >= CAST($since_5 AS TIMESTAMP)
    UNION SELECT CAST(unnest($wal_visits_5) AS BIGINT)
  ))::BIGINT AS sessions_5,
  (SELECT count(*) FROM (
    SELECT visit_id FROM p WHERE visit_id IS NOT NULL
    UNION SELECT CAST(unnest($wal_visits_30) AS BIGINT)
  ))::BIGINT AS sessions_30,
  (SELECT count(*) FROM p WHERE event_type = 'query' AND ts >= CAST($since_5 AS TIMESTAMP))::BIGINT AS queries_5,
  (SELECT count(*) FROM p WHERE event_type = 'query')::BIGINT AS queries_30,
  (SELECT count(*) FROM p WHERE event_type = 'click' AND ts >= CAST($since_5 AS TIMESTAMP))::BIGINT AS clicks_5,
  (SELECT count(*) FROM p WHERE event_type = 'click')::BIGINT AS clicks_30
