-- Sponsored-conversation rollup, one row per day that has data, over the tenant's campaigns (the
-- campaign_id frozen on every event of a sponsored conversation). A sponsored session is a session
-- whose first sponsored_impression is in scope, counted at that impression (in the window); daily
-- rows add up to the summary. Sessions are derived from the events of the window's UTC days in time
-- order, as ask_ai_by_time derives them (only the sessions with an impression are read), so they do
-- not depend on the order the events arrived in. Days are those of zone $tz: 15-minute UTC buckets
-- first, then only the buckets are converted (see ask_ai_by_time).
WITH imp AS MATERIALIZED (
  SELECT
    session_id, ts,
    list_contains($campaign_ids, campaign_id)
      AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
      AND ($placement_id IS NULL OR placement_id = $placement_id)
      AND ($prompt_id IS NULL OR prompt_id = $prompt_id)
      AND ($creative_id IS NULL OR creative_id = $creative_id)
      AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
      AND ($publisher_id IS NULL OR publisher_id = $publisher_id) AS in_scope
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND tenant_id = $tenant_id
    AND event_type = 'sponsored_impression'
    AND session_id IS NOT NULL
),
-- The steps of those sessions in time order: a step more than 30 minutes after the previous step's
-- last event (or the day's first step) opens a visit.
opened AS (
  SELECT
    session_id,
    time_bucket(INTERVAL 15 MINUTE, ts) AS step,
    coalesce(min(ts) - lag(max(ts)) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND tenant_id = $tenant_id
    AND session_id IN (SELECT session_id FROM imp)
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
-- Each visit's first impression (an in-scope one on a tie) and whether it is in scope.
starts AS (
  SELECT min(i.ts) AS ts, arg_max(i.in_scope, struct_pack(neg := -epoch_us(i.ts), s := i.in_scope)) AS in_scope
  FROM imp i
  JOIN visit_of v ON v.session_id = i.session_id AND v.step = time_bucket(INTERVAL 15 MINUTE, i.ts)
  GROUP BY i.session_id, CAST(v.step AS DATE), v.visit_no
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
