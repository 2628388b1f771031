-- Realtime counters over the last 5 and 30 minutes from the Parquet files and the events still in
-- the write-ahead log, counted as the flush will store them. The caller passes the log's copies of
-- the window (one per event id, the earliest, as the flush keeps within a write) as one JSON array
-- ($wal: [{"i": event id, "t": epoch ms, "y": type, "v": visit id, "a": agent}]; bound as one string:
-- list parameters cost time growing with the square of their length to bind). A logged copy
-- whose id the Parquet files already hold by the flush's rule (that UTC day, or within
-- $duplicate_window_minutes across midnight: analytics/parquet_writer.ts) is not counted: the flush
-- drops it, and a flush that moved it meanwhile put it in the files, where it counts. One scan of the
-- files serves both, so a flush between the two reads counts nothing twice.
WITH logged AS (
  SELECT j.i AS event_id, epoch_ms(j.t) AS ts, j.y AS event_type, j.v AS visit_id, j.a AS ai_agent
  FROM (SELECT unnest(from_json($wal, '[{"i":"VARCHAR","t":"BIGINT","y":"VARCHAR","v":"BIGINT","a":"VARCHAR"}]')) AS j)
), scan AS (
  SELECT event_id, ts, event_type, visit_id, ai_agent
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND tenant_id = $tenant_id
    -- The window, widened to the days of the logged copies only when there are some.
    AND ts >= CAST($read_from AS TIMESTAMP) AND ts < CAST($read_to AS TIMESTAMP)
    -- A semi-join on the ids (hashed once), not list_contains per row (a scan of the list per row).
    AND ((ts >= CAST($since_30 AS TIMESTAMP) AND ts <= CAST($until AS TIMESTAMP))
      OR event_id IN (SELECT event_id FROM logged))
), window_ AS (
  SELECT ts, event_type, visit_id FROM scan
  WHERE ts >= CAST($since_30 AS TIMESTAMP) AND ts <= CAST($until AS TIMESTAMP)
    AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
), unflushed AS (
  SELECT l.ts, l.event_type, l.visit_id FROM logged AS l
  WHERE ($ai_agent IS NULL OR l.ai_agent = $ai_agent)
    AND NOT EXISTS (
      SELECT 1 FROM scan AS s
      WHERE s.event_id = l.event_id
        AND s.ts >= date_trunc('day', l.ts) - to_minutes($duplicate_window_minutes)
        AND s.ts < date_trunc('day', l.ts) + INTERVAL 1 DAY + to_minutes($duplicate_window_minutes)
        AND (s.ts < date_trunc('day', l.ts) + INTERVAL 1 DAY
          OR l.ts >= date_trunc('day', l.ts) + INTERVAL 1 DAY - to_minutes($duplicate_window_minutes))
    )
), p AS (
  SELECT * FROM window_ UNION ALL SELECT * FROM unflushed
)
SELECT
  (SELECT count(DISTINCT visit_id) FROM p WHERE ts >= CAST($since_5 AS TIMESTAMP))::BIGINT AS sessions_5,
  (SELECT count(DISTINCT visit_id) FROM p)::BIGINT AS sessions_30,
  (SELECT count(*) FROM p WHERE event_type = 'query' AND ts >= CAST($since_5 AS TIMESTAMP))::BIGINT AS queries_5,
  (SELECT count(*) FROM p WHERE event_type = 'query')::BIGINT AS queries_30,
  (SELECT count(*) FROM p WHERE event_type = 'click' AND ts >= CAST($since_5 AS TIMESTAMP))::BIGINT AS clicks_5,
  (SELECT count(*) FROM p WHERE event_type = 'click')::BIGINT AS clicks_30
