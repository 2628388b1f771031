-- Session intelligence over engaged sessions (sessions with at least one query in scope), in long
-- form: one 'summary' row, then 'intent', 'depth', 'category' and 'topic' rows. Every block comes from
-- the same engaged sessions and their queries, so the blocks agree. Sessions (visit_id) are assigned
-- at ingestion.
WITH scoped AS MATERIALIZED (
  SELECT visit_id, ts, event_type, intent_type, category, topic
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND ts >= CAST($start_ts AS TIMESTAMP)
  AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND visit_id IS NOT NULL
    AND event_type IN ('query', 'heartbeat')
    AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
    AND ($placement_id IS NULL OR placement_id = $placement_id)
    AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
    AND ($creative_id IS NULL OR creative_id = $creative_id)
    AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
    AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
),
engaged AS MATERIALIZED (
  SELECT
    count(*) FILTER (WHERE event_type = 'query') AS queries,
    5 * count(*) FILTER (WHERE event_type = 'heartbeat') AS seconds,
    arg_min(intent_type, ts) FILTER (WHERE event_type = 'query') AS intent_type
  FROM scoped
  GROUP BY visit_id
  HAVING count(*) FILTER (WHERE event_type = 'query') > 0
),
queries AS (
  SELECT category, topic FROM scoped WHERE event_type = 'query'
)
SELECT 'summary' AS kind, NULL AS k1, NULL AS k2,
  count(*)::BIGINT AS n1,
  coalesce(sum(queries), 0)::BIGINT AS n2,
  (count(*) FILTER (WHERE queries >= 2))::BIGINT AS n3,
  (count(*) FILTER (WHERE queries = 1))::BIGINT AS n4,
  coalesce(max(queries), 0)::BIGINT AS n5,
  coalesce(sum(seconds), 0)::BIGINT AS n6,
  coalesce(round(quantile_cont(seconds, 0.5)), 0)::BIGINT AS n7
FROM engaged
UNION ALL
SELECT 'intent', coalesce(intent_type, 'other'), NULL, count(*)::BIGINT, NULL, NULL, NULL, NULL, NULL, NULL
FROM engaged GROUP BY 2
UNION ALL
SELECT 'depth',
  CASE WHEN queries <= 5 THEN queries::VARCHAR WHEN queries <= 10 THEN '6-10' ELSE '10+' END,
  NULL, count(*)::BIGINT, NULL, NULL, NULL, NULL, NULL, NULL
FROM engaged GROUP BY 2
UNION ALL
SELECT 'category', coalesce(category, 'general'), NULL, count(*)::BIGINT, NULL, NULL, NULL, NULL, NULL, NULL
FROM queries GROUP BY 2
UNION ALL
SELECT * FROM (
  SELECT 'topic', coalesce(topic, 'general') AS k1, coalesce(category, 'general') AS k2, count(*)::BIGINT AS n1,
    NULL, NULL, NULL, NULL, NULL, NULL
  FROM queries GROUP BY 2, 3
  ORDER BY n1 DESC, k1, k2
  LIMIT 10
)
