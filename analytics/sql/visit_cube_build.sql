-- Derived visit figures of one UTC day folder ($files: the folder's event files), written once per
-- version of the folder (analytics/visit_cube.ts) and read by ask_ai_by_time_derived instead of
-- the folder's events. A visit lies in one day folder (sessions end at UTC midnight), so each
-- visit's figures are complete here; a visit that older data has crossing midnight ($scan_files:
-- this folder's files and the neighbouring days', hive `date` from their paths) is kept per step
-- ('f'), so it is regrouped with its other day at query time. Rows, by `kind`:
-- - 'c': visits whose events all fall in one 15-minute UTC step with one set of filter values,
--   summed per tenant, step and filter values. Such a visit is in a block (and a window, whose
--   edges are 15-minute instants) wholly or not at all, so its sums answer exactly.
-- - 'f': every other visit, one row per visit, step and filter values, regrouped per visit at
--   query time as ask_ai_by_time groups events.
-- - 'n': events without a visit, per tenant, step and filter values.
WITH ev AS (
  SELECT
    tenant_id,
    visit_id,
    time_bucket(INTERVAL 15 MINUTE, ts) AS step,
    ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
    (event_type = 'widget_load')::INTEGER AS loads,
    (event_type = 'query')::INTEGER AS queries,
    (event_type = 'click')::INTEGER AS clicks,
    (event_type = 'click' AND click_type = 'article')::INTEGER AS article_clicks,
    (event_type = 'click' AND click_type = 'cta')::INTEGER AS cta_clicks,
    (event_type = 'heartbeat')::INTEGER AS heartbeats,
    coalesce(visit_viewable, false) AS viewable
  FROM read_parquet($files, union_by_name = true)
  WHERE tenant_id IS NOT NULL AND ts IS NOT NULL
),
facts AS (
  SELECT
    tenant_id, visit_id, step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
    sum(loads)::BIGINT AS loads,
    sum(queries)::BIGINT AS queries,
    sum(clicks)::BIGINT AS clicks,
    sum(article_clicks)::BIGINT AS article_clicks,
    sum(cta_clicks)::BIGINT AS cta_clicks,
    sum(heartbeats)::BIGINT AS heartbeats,
    bool_or(viewable) AS viewable
  FROM ev
  GROUP BY ALL
),
crossing AS (
  SELECT DISTINCT visit_id
  FROM read_parquet($scan_files, hive_partitioning = true, union_by_name = true)
  WHERE date <> CAST($day AS DATE) AND visit_id IS NOT NULL
),
counted AS (
  SELECT
    *,
    count(*) OVER (PARTITION BY tenant_id, visit_id)
      + CASE WHEN visit_id IN (SELECT visit_id FROM crossing) THEN 1 ELSE 0 END AS visit_rows
  FROM facts
)
SELECT
  CASE WHEN visit_id IS NULL THEN 'n' ELSE 'c' END AS kind,
  tenant_id,
  CAST(NULL AS BIGINT) AS visit_id,
  step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
  count(*) FILTER (WHERE visit_id IS NOT NULL)::BIGINT AS sessions,
  count(*) FILTER (WHERE visit_id IS NOT NULL AND viewable)::BIGINT AS viewable_sessions,
  count(*) FILTER (WHERE visit_id IS NOT NULL AND queries > 0)::BIGINT AS engaged_sessions,
  sum(loads)::BIGINT AS loads,
  sum(queries)::BIGINT AS queries,
  sum(clicks)::BIGINT AS clicks,
  sum(article_clicks)::BIGINT AS article_clicks,
  sum(cta_clicks)::BIGINT AS cta_clicks,
  sum(heartbeats)::BIGINT AS heartbeats,
  false AS viewable
FROM counted
WHERE visit_id IS NULL OR visit_rows = 1
GROUP BY ALL
UNION ALL
SELECT
  'f' AS kind,
  tenant_id, visit_id, step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
  0::BIGINT AS sessions, 0::BIGINT AS viewable_sessions, 0::BIGINT AS engaged_sessions,
  loads, queries, clicks, article_clicks, cta_clicks, heartbeats, viewable
FROM counted
WHERE visit_id IS NOT NULL AND visit_rows > 1
ORDER BY tenant_id, kind, step
