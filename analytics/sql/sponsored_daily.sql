-- Sponsored-conversation rollup, one row per day that has data, over the tenant's campaigns (the
-- campaign_id frozen on every event of a sponsored conversation). A sponsored session is a session
-- whose first sponsored_impression is in scope, counted at that impression (in the window), unless
-- the session continues a conversation of the day before (its first session of the UTC day, starting
-- within 30 minutes of the session_id's last event the day before, whose last session there had an
-- impression: the freeze carries that conversation over midnight). Daily rows add up to the
-- summary. Sessions are derived from the events in time order, as ask_ai_by_time derives them (only
-- session_ids with an impression in the window's UTC days are read, and the day before), so they do
-- not depend on the order the events arrived in. Days are those of zone $tz: 15-minute UTC buckets
-- first, then only the buckets are converted (see ask_ai_by_time).
WITH sess AS MATERIALIZED (
  SELECT DISTINCT session_id
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND tenant_id = $tenant_id
    AND event_type = 'sponsored_impression'
    AND session_id IS NOT NULL
),
ev AS MATERIALIZED (
  SELECT
    session_id, ts,
    time_bucket(INTERVAL 15 MINUTE, ts) AS step,
    event_type = 'sponsored_impression' AS is_imp,
    list_contains($campaign_ids, campaign_id)
      AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
      AND ($placement_id IS NULL OR placement_id = $placement_id)
      AND ($prompt_id IS NULL OR prompt_id = $prompt_id)
      AND ($creative_id IS NULL OR creative_id = $creative_id)
      AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
      AND ($publisher_id IS NULL OR publisher_id = $publisher_id) AS in_scope
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) - 1 AND CAST($to_date AS DATE)
    AND tenant_id = $tenant_id
    AND session_id IN (SELECT session_id FROM sess)
),
-- The steps of those sessions in time order: a step more than 30 minutes after the previous step's
-- last event (or the day's first step) opens a visit.
opened AS (
  SELECT
    session_id, step,
    coalesce(min(ts) - lag(max(ts)) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM ev
  GROUP BY session_id, step
  WINDOW w AS (PARTITION BY session_id, CAST(step AS DATE) ORDER BY step)
),
visit_of AS (
  SELECT
    session_id, step,
    sum(opens::INT) OVER (PARTITION BY session_id, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING)
      AS visit_no
  FROM opened
),
-- Per visit: its first and last event, its first impression and whether that is in scope (an
-- in-scope one on a tie).
visits AS (
  SELECT
    e.session_id, CAST(e.step AS DATE) AS day, v.visit_no,
    min(e.ts) AS first_ts,
    max(e.ts) AS last_ts,
    min(e.ts) FILTER (WHERE e.is_imp) AS imp_ts,
    arg_max(e.in_scope, struct_pack(neg := -epoch_us(e.ts), s := e.in_scope)) FILTER (WHERE e.is_imp) AS imp_in_scope
  FROM ev e
  JOIN visit_of v USING (session_id, step)
  GROUP BY 1, 2, 3
),
starts AS (
  SELECT imp_ts AS ts
  FROM (
    SELECT
      *,
      lag(day) OVER w = day - 1 AND visit_no = 1 AND lag(imp_ts) OVER w IS NOT NULL
        AND first_ts - lag(last_ts) OVER w <= INTERVAL 30 MINUTE AS continues
    FROM visits
    WINDOW w AS (PARTITION BY session_id ORDER BY day, visit_no)
  )
  WHERE imp_in_scope AND NOT coalesce(continues, false)
    AND imp_ts >= CAST($start_ts AS TIMESTAMP) AND imp_ts < CAST($end_ts AS TIMESTAMP)
),
quarters AS (
  SELECT
    time_bucket(INTERVAL 15 MINUTE, ts) AS q,
    count(*) FILTER (WHERE event_type = 'sponsored_impression')::BIGINT AS impressions,
    count(*) FILTER (WHERE event_type = 'query')::BIGINT AS queries,
    count(*) FILTER (WHERE event_type = 'click')::BIGINT AS total_clicks,
    count(*) FILTER (WHERE event_type = 'click' AND click_type = 'article')::BIGINT AS article_clicks,
    count(*) FILTER (WHERE event_type = 'click' AND click_type = 'cta')::BIGINT AS cta_clicks,
    0::BIGINT AS sessions,
    count(*) FILTER (WHERE event_type = 'heartbeat' AND session_id IS NOT NULL)::BIGINT AS heartbeats
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($start_ts AS TIMESTAMP)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND list_contains($campaign_ids, campaign_id)
    AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
    AND ($placement_id IS NULL OR placement_id = $placement_id)
    AND ($prompt_id IS NULL OR prompt_id = $prompt_id)
    AND ($creative_id IS NULL OR creative_id = $creative_id)
    AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
    AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
  GROUP BY q
  UNION ALL
  SELECT time_bucket(INTERVAL 15 MINUTE, ts), 0, 0, 0, 0, 0, count(*), 0
  FROM starts
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
