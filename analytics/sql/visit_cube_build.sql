-- Derived visit figures of one UTC day folder ($files: the folder's event files), written once per
-- version of the folder (analytics/visit_cube.ts) and read by ask_ai_by_time_derived instead of
-- the folder's events. Visits are derived here from the folder's events in time order, as
-- ask_ai_by_time derives them (a session_id's events of the UTC day, split where more than 30
-- minutes pass between two events), so they do not depend on the order the events arrived in, and
-- each visit lies in this folder. `viewable` marks a step that holds an MRC-viewable event, so a
-- window that cuts a visit counts it viewable when a viewable event is inside. Rows, by `kind`:
-- - 'c': visits whose events all fall in one 15-minute UTC step, with at most three sets of filter
--   values, summed per tenant, step and filter values. Such a visit is in a window (whose edges are
--   15-minute instants) wholly or not at all, and a filter takes the events of the value sets it
--   matches. A visit counts (session, its loads, viewability) when it matches any of its sets,
--   which inclusion-exclusion turns into sums: one row per non-empty subset of its sets, signed
--   +1 for odd and -1 for even subsets, holding what the subset's sets share (a column on which
--   they differ is flagged in `conflicts`: only a filter that leaves it out matches). Event counts
--   sit on the single-set rows; an engaged session is inclusion-exclusion over the sets with a query.
-- - 'u': visits over several steps with one set of filter values, summed per tenant, first step,
--   last step and filter values: used for a window that holds the whole visit. Their per-step rows
--   are kept too ('f' with `cut_only`) for a window whose edge cuts the visit.
-- - 'f': every other visit, one row per visit, step and filter values, regrouped per visit at
--   query time as ask_ai_by_time groups events.
-- - 'n': events without a visit, per tenant, step and filter values.
-- `conflicts` bits: 1 ai_agent, 2 placement_id, 4 deployment_type, 8 creative_id, 16 line_item_id,
-- 32 publisher_id.
WITH ev AS (
  SELECT
    tenant_id,
    session_id,
    ts,
    time_bucket(INTERVAL 15 MINUTE, ts) AS step,
    ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
    (event_type = 'widget_load')::INTEGER AS loads,
    (event_type = 'query')::INTEGER AS queries,
    (event_type = 'click')::INTEGER AS clicks,
    (event_type = 'click' AND click_type = 'article')::INTEGER AS article_clicks,
    (event_type = 'click' AND click_type = 'cta')::INTEGER AS cta_clicks,
    (event_type = 'heartbeat')::INTEGER AS heartbeats,
    coalesce(event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000, false) AS viewable
  FROM read_parquet($files, union_by_name = true)
  WHERE tenant_id IS NOT NULL AND ts IS NOT NULL
),
-- A session's steps in time order: a step whose first event comes more than 30 minutes after the
-- previous step's last event (or the day's first step) opens a visit; the visit id is a hash of
-- the tenant, session, day and visit number (a visit never spans two day folders, so an id unique
-- within the day is enough).
opened AS (
  SELECT
    tenant_id, session_id, step,
    coalesce(min(ts) - lag(max(ts)) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM ev
  WHERE session_id IS NOT NULL
  GROUP BY tenant_id, session_id, step
  WINDOW w AS (PARTITION BY tenant_id, session_id, CAST(step AS DATE) ORDER BY step)
),
visit_of AS (
  SELECT
    tenant_id, session_id, step,
    (hash(
      tenant_id, session_id, CAST(step AS DATE),
      sum(opens::INT) OVER (PARTITION BY tenant_id, session_id, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING)
    ) >> 2)::BIGINT + 1 AS visit_id
  FROM opened
),
facts AS (
  SELECT
    ev.tenant_id, v.visit_id, ev.step,
    ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
    sum(loads)::BIGINT AS loads,
    sum(queries)::BIGINT AS queries,
    sum(clicks)::BIGINT AS clicks,
    sum(article_clicks)::BIGINT AS article_clicks,
    sum(cta_clicks)::BIGINT AS cta_clicks,
    sum(heartbeats)::BIGINT AS heartbeats,
    bool_or(viewable) AS viewable
  FROM ev
  LEFT JOIN visit_of v USING (tenant_id, session_id, step)
  GROUP BY ALL
),
shaped AS (
  SELECT
    *,
    count(*) OVER v AS visit_rows,
    min(step) OVER v = max(step) OVER v AS one_step,
    row_number() OVER (
      PARTITION BY tenant_id, visit_id
      ORDER BY ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id
    ) AS rn,
    min(step) OVER v AS first_step,
    max(step) OVER v AS last_step,
    min(struct_pack(ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id)) OVER v
      IS NOT DISTINCT FROM
      max(struct_pack(ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id)) OVER v
      AS one_set,
    sum(loads) OVER v AS visit_loads,
    bool_or(viewable) OVER v AS visit_viewable
  FROM facts
  WHERE visit_id IS NOT NULL
  WINDOW v AS (PARTITION BY tenant_id, visit_id)
),
small AS (
  SELECT * FROM shaped WHERE one_step AND visit_rows <= 3
),
-- Visits over several steps with one set of values: one row per visit.
long_visits AS (
  SELECT
    tenant_id, visit_id, first_step, last_step,
    ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
    sum(loads) AS loads,
    bool_or(viewable) AS viewable,
    sum(queries) AS queries,
    sum(clicks) AS clicks,
    sum(article_clicks) AS article_clicks,
    sum(cta_clicks) AS cta_clicks,
    sum(heartbeats) AS heartbeats
  FROM shaped
  WHERE NOT one_step AND one_set
  GROUP BY ALL
),
-- One row per visit and non-empty subset (bit rn - 1 of `mask`) of its value sets, with the number
-- of values (null counted as one) each column takes in the subset.
subsets AS (
  SELECT
    tenant_id, visit_id, any_value(step) AS step, mask,
    count(*) AS members,
    any_value(visit_loads) AS visit_loads,
    any_value(visit_viewable) AS visit_viewable,
    bool_and(queries > 0) AS all_engaged,
    any_value(ai_agent) AS ai_agent,
    any_value(placement_id) AS placement_id,
    any_value(deployment_type) AS deployment_type,
    any_value(creative_id) AS creative_id,
    any_value(line_item_id) AS line_item_id,
    any_value(publisher_id) AS publisher_id,
    count(DISTINCT ai_agent) + (count(*) > count(ai_agent))::INT AS n_ai_agent,
    count(DISTINCT placement_id) + (count(*) > count(placement_id))::INT AS n_placement_id,
    count(DISTINCT deployment_type) + (count(*) > count(deployment_type))::INT AS n_deployment_type,
    count(DISTINCT creative_id) + (count(*) > count(creative_id))::INT AS n_creative_id,
    count(DISTINCT line_item_id) + (count(*) > count(line_item_id))::INT AS n_line_item_id,
    count(DISTINCT publisher_id) + (count(*) > count(publisher_id))::INT AS n_publisher_id,
    sum(queries) AS queries,
    sum(clicks) AS clicks,
    sum(article_clicks) AS article_clicks,
    sum(cta_clicks) AS cta_clicks,
    sum(heartbeats) AS heartbeats
  FROM small
  JOIN range(1, 8) AS m(mask) ON mask < (1 << visit_rows) AND (mask >> (rn - 1)) & 1 = 1
  GROUP BY tenant_id, visit_id, mask
),
-- The values the subset shares (null where its sets differ, flagged in `conflicts`) and its sign.
signed AS (
  SELECT
    tenant_id, step, members, visit_loads, visit_viewable, all_engaged,
    queries, clicks, article_clicks, cta_clicks, heartbeats,
    CASE WHEN n_ai_agent = 1 THEN ai_agent END AS ai_agent,
    CASE WHEN n_placement_id = 1 THEN placement_id END AS placement_id,
    CASE WHEN n_deployment_type = 1 THEN deployment_type END AS deployment_type,
    CASE WHEN n_creative_id = 1 THEN creative_id END AS creative_id,
    CASE WHEN n_line_item_id = 1 THEN line_item_id END AS line_item_id,
    CASE WHEN n_publisher_id = 1 THEN publisher_id END AS publisher_id,
    (n_ai_agent > 1)::INT + 2 * (n_placement_id > 1)::INT + 4 * (n_deployment_type > 1)::INT
      + 8 * (n_creative_id > 1)::INT + 16 * (n_line_item_id > 1)::INT + 32 * (n_publisher_id > 1)::INT
      AS conflicts,
    CASE WHEN members % 2 = 1 THEN 1 ELSE -1 END AS sign,
    members = 1 AS single
  FROM subsets
)
SELECT
  'c' AS kind,
  tenant_id,
  CAST(NULL AS BIGINT) AS visit_id,
  step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id, conflicts,
  sum(sign)::BIGINT AS sessions,
  sum(sign * visit_viewable::INT)::BIGINT AS viewable_sessions,
  sum(sign * all_engaged::INT)::BIGINT AS engaged_sessions,
  sum(sign * visit_loads)::BIGINT AS loads,
  sum(queries) FILTER (WHERE single)::BIGINT AS queries,
  sum(clicks) FILTER (WHERE single)::BIGINT AS clicks,
  sum(article_clicks) FILTER (WHERE single)::BIGINT AS article_clicks,
  sum(cta_clicks) FILTER (WHERE single)::BIGINT AS cta_clicks,
  sum(heartbeats) FILTER (WHERE single)::BIGINT AS heartbeats,
  false AS viewable,
  CAST(NULL AS TIMESTAMP) AS first_step,
  CAST(NULL AS TIMESTAMP) AS last_step,
  false AS cut_only
FROM signed
GROUP BY tenant_id, step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id, conflicts
UNION ALL
SELECT
  'u' AS kind,
  tenant_id,
  CAST(NULL AS BIGINT) AS visit_id,
  first_step AS step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id, 0 AS conflicts,
  count(*)::BIGINT AS sessions,
  count(*) FILTER (WHERE viewable)::BIGINT AS viewable_sessions,
  count(*) FILTER (WHERE queries > 0)::BIGINT AS engaged_sessions,
  sum(loads)::BIGINT, sum(queries)::BIGINT, sum(clicks)::BIGINT, sum(article_clicks)::BIGINT,
  sum(cta_clicks)::BIGINT, sum(heartbeats)::BIGINT,
  false,
  first_step,
  last_step,
  false
FROM long_visits
GROUP BY tenant_id, first_step, last_step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id
UNION ALL
SELECT
  'n' AS kind,
  tenant_id,
  CAST(NULL AS BIGINT) AS visit_id,
  step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id, 0 AS conflicts,
  0::BIGINT, 0::BIGINT, 0::BIGINT,
  loads, queries, clicks, article_clicks, cta_clicks, heartbeats, false,
  CAST(NULL AS TIMESTAMP), CAST(NULL AS TIMESTAMP), false
FROM facts
WHERE visit_id IS NULL
UNION ALL
SELECT
  'f' AS kind,
  tenant_id, visit_id, step, ai_agent, placement_id, deployment_type, creative_id, line_item_id, publisher_id,
  0 AS conflicts,
  0::BIGINT, 0::BIGINT, 0::BIGINT,
  loads, queries, clicks, article_clicks, cta_clicks, heartbeats, viewable,
  first_step, last_step,
  NOT one_step AND one_set AS cut_only
FROM shaped
WHERE NOT (one_step AND visit_rows <= 3)
ORDER BY tenant_id, kind, step
