-- Sponsored-conversation rollup, one row per day that has data, over the tenant's campaigns (the
-- campaign_id frozen on every event of a sponsored conversation). A sponsored conversation is a
-- session_id's run of campaign events with no gap over 30 minutes, derived here in time order (so
-- arrival order does not change it); it goes on over UTC midnight as the freeze carries it. It
-- counts as a session at its first sponsored_impression when that is in scope and in the window
-- (the day before the window is read for conversations going on at its start). Daily rows add up
-- to the summary. Fast path: for events that arrived in order, ingestion flags each conversation's
-- first impression `sponsored_start` (analytics/enrich.ts), so those flags are counted; only the
-- sessions with a campaign event flagged `visit_late` in the rows read (or from files before the
-- flag), and those with a campaign event in the first 30 minutes read and one in the 30 minutes
-- before the window (a conversation that may have begun before the rows read, which this definition
-- starts where the read starts, and may go on into the window), are derived in time order:
-- their campaign events summed per session and 15-minute step first (no gap can open inside a step)
-- and only those rows put in time order. Days are those of zone $tz:
-- 15-minute UTC buckets first, then only the buckets are converted (see ask_ai_by_time).
WITH redo AS (
  SELECT DISTINCT hash(session_id) AS sk
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) - 1 AND CAST($to_date AS DATE)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND list_contains($campaign_ids, campaign_id)
    AND session_id IS NOT NULL
    AND (visit_late OR visit_late IS NULL)
  UNION
  (
    SELECT hash(session_id)
    FROM events
    WHERE date = CAST($from_date AS DATE) - 1
      AND ts < CAST(CAST($from_date AS DATE) - 1 AS TIMESTAMP) + INTERVAL 30 MINUTE
      AND tenant_id = $tenant_id
      AND list_contains($campaign_ids, campaign_id)
      AND session_id IS NOT NULL
    INTERSECT
    SELECT hash(session_id)
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) - 1 AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP) - INTERVAL 30 MINUTE
      AND ts < CAST($start_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND list_contains($campaign_ids, campaign_id)
      AND session_id IS NOT NULL
  )
),
c AS (
  SELECT
    sk,
    time_bucket(INTERVAL 15 MINUTE, ts) AS step,
    min(ts) AS t0,
    max(ts) AS t1,
    min(ts) FILTER (WHERE is_imp) AS imp_ts,
    arg_max(in_scope, struct_pack(neg := -epoch_us(ts), s := in_scope)) FILTER (WHERE is_imp) AS imp_in_scope
  FROM (
    SELECT
      hash(session_id) AS sk, ts,
      event_type = 'sponsored_impression' AS is_imp,
      (
        -- @include sponsored_filters
      ) AS in_scope
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) - 1 AND CAST($to_date AS DATE)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND list_contains($campaign_ids, campaign_id)
      AND session_id IS NOT NULL
  )
  SEMI JOIN redo USING (sk)
  GROUP BY sk, step
),
opened AS (
  SELECT *, coalesce(t0 - lag(t1) OVER (PARTITION BY sk ORDER BY step) > INTERVAL 30 MINUTE, true) AS opens
  FROM c
),
-- Each derived conversation's first impression (an in-scope one on a tie) and whether it is in scope.
starts AS (
  SELECT
    min(imp_ts) AS ts,
    arg_min(imp_in_scope, imp_ts) FILTER (WHERE imp_ts IS NOT NULL) AS in_scope
  FROM (
    SELECT *, sum(opens::INT) OVER (PARTITION BY sk ORDER BY step ROWS UNBOUNDED PRECEDING) AS conv_no
    FROM opened
  )
  GROUP BY sk, conv_no
),
quarters AS (
  SELECT
    time_bucket(INTERVAL 15 MINUTE, ts) AS q,
    count(*) FILTER (WHERE event_type = 'sponsored_impression')::BIGINT AS impressions,
    count(*) FILTER (WHERE event_type = 'query')::BIGINT AS queries,
    count(*) FILTER (WHERE event_type = 'click')::BIGINT AS total_clicks,
    count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article')::BIGINT AS article_clicks,
    count(*) FILTER (WHERE event_type = 'click' AND click_type = 'cta')::BIGINT AS cta_clicks,
    -- Conversations at their flagged first impression; the derived sessions' flags are taken back below.
    count(*) FILTER (WHERE sponsored_start AND session_id IS NOT NULL)::BIGINT AS sessions,
    count(*) FILTER (WHERE event_type = 'heartbeat' AND session_id IS NOT NULL)::BIGINT AS heartbeats
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($start_ts AS TIMESTAMP)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND list_contains($campaign_ids, campaign_id)
    AND (
      -- @include sponsored_filters
    )
  GROUP BY q
  UNION ALL
  -- The derived sessions' flagged first impressions, taken back (a semi-join: skipped when none).
  SELECT time_bucket(INTERVAL 15 MINUTE, ts), 0, 0, 0, 0, 0, -count(*), 0
  FROM (
    SELECT hash(session_id) AS sk, ts
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND list_contains($campaign_ids, campaign_id)
      AND session_id IS NOT NULL
      AND sponsored_start
      AND (
        -- @include sponsored_filters
      )
  )
  SEMI JOIN redo USING (sk)
  GROUP BY 1
  UNION ALL
  SELECT time_bucket(INTERVAL 15 MINUTE, ts), 0, 0, 0, 0, 0, count(*), 0
  FROM starts
  WHERE in_scope AND ts >= CAST($start_ts AS TIMESTAMP) AND ts < CAST($end_ts AS TIMESTAMP)
  GROUP BY 1
)
SELECT
  strftime(timezone($tz, timezone('UTC', q)), '%Y-%m-%d') AS date,
  sum(impressions)::BIGINT AS impressions,
  sum(queries)::BIGINT AS queries,
  sum(total_clicks)::BIGINT AS total_clicks,
  sum(article_clicks)::BIGINT AS article_clicks,
  sum(cta_clicks)::BIGINT AS cta_clicks,
  sum(sessions)::BIGINT AS sessions,
  sum(heartbeats)::BIGINT AS heartbeats
FROM quarters
GROUP BY 1
ORDER BY 1
