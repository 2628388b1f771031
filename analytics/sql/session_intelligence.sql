-- Session intelligence over engaged sessions (sessions with at least one query in scope), in long
-- form: one 'summary' row, then 'intent', 'depth', 'category' and 'topic' rows. Every block comes from
-- the same engaged sessions and their queries, so the blocks agree. Sessions are derived from the
-- window's events in time order, as ask_ai_by_time derives them (a session_id's events of one UTC
-- day, split where more than 30 minutes pass; every event of the session counts for the gaps, not
-- only the scoped ones), so they do not depend on the order the events arrived in: events are
-- summed per session (hash of its id) and 15-minute step, and only those rows are put in order.
WITH fe AS (
  SELECT
    gk,
    min(sk) AS sk,
    max(sk) AS sk_hi,
    count(*) FILTER (WHERE event_type = 'query') AS queries,
    count(*) FILTER (WHERE event_type = 'heartbeat') AS heartbeats,
    arg_min(intent_type, ts) FILTER (WHERE event_type = 'query') AS intent_type
  FROM (
    SELECT
      -- The ingestion visit and its UTC day, as in ask_ai_by_time.
      visit_id + (epoch_us(ts) // 86400000000 % 512) * 9007199254740992 AS gk,
      hash(session_id) AS sk, ts, event_type, intent_type
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND visit_id IS NOT NULL
      AND session_id IS NOT NULL
      AND event_type IN ('query', 'heartbeat')
      AND (
        -- @include ask_ai_filters
      )
  )
  GROUP BY gk
),
-- The sessions derived in time order, as in ask_ai_by_time.
redo AS (
  -- @include late_sessions
  UNION
  SELECT sk FROM fe WHERE sk <> sk_hi
  UNION
  SELECT sk_hi FROM fe WHERE sk <> sk_hi
),
steps AS (
  SELECT
    sk, step,
    min(ts) AS t0,
    max(ts) AS t1,
    count(*) FILTER (WHERE in_scope AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE in_scope AND event_type = 'heartbeat') AS heartbeats,
    min(ts) FILTER (WHERE in_scope AND event_type = 'query') AS first_query_ts,
    arg_min(intent_type, ts) FILTER (WHERE in_scope AND event_type = 'query') AS first_intent
  FROM (
    SELECT
      hash(session_id) AS sk, ts, event_type, intent_type,
      time_bucket(INTERVAL 15 MINUTE, ts) AS step,
      (
        -- @include ask_ai_filters
      ) AS in_scope
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND session_id IS NOT NULL
  )
  SEMI JOIN redo USING (sk)
  GROUP BY sk, step
),
opened AS (
  SELECT *, coalesce(t0 - lag(t1) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM steps
  WINDOW w AS (PARTITION BY sk, CAST(step AS DATE) ORDER BY step)
),
engaged AS MATERIALIZED (
  SELECT queries, 5 * heartbeats AS seconds, intent_type
  FROM fe
  ANTI JOIN redo USING (sk)
  WHERE queries > 0
  UNION ALL
  SELECT
    sum(queries) AS queries,
    5 * sum(heartbeats) AS seconds,
    arg_min(first_intent, first_query_ts) AS intent_type
  FROM (
    SELECT
      *,
      sum(opens::INT) OVER (PARTITION BY sk, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING) AS visit_no
    FROM opened
  )
  GROUP BY sk, CAST(step AS DATE), visit_no
  HAVING sum(queries) > 0
),
queries AS (
  SELECT category, topic
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($start_ts AS TIMESTAMP)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND session_id IS NOT NULL
    AND event_type = 'query'
    AND (
      -- @include ask_ai_filters
    )
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
