-- Ask AI metrics of a filtered block of events per value of one column ($dimension); events
-- without a value are grouped under ''. A session counts once in every group it has block events in;
-- the row with key NULL is the whole block (each session once), the breakdown's summary.
-- Sessions are those of ask_ai_by_time, with its fast path: events are grouped by ingestion visit
-- and value, and only the sessions with an event flagged `visit_late` in the window (or from files
-- before the flag) are read again and derived in time order (events summed per session, keyed by
-- the hash of its id, 15-minute step and value; only those rows put in order). A session is
-- viewable when any of its events in the window is MRC-viewable; per-session figures by a join.
-- The block is every event in the local window ($start_ts .. $end_ts, the UTC instants of its local midnights) that
-- matches the filters. Event counts (queries, clicks, heartbeats) are the block's events. Session
-- figures count the sessions the block's events belong to, once per
-- group: a session's widget loads and viewability come from the whole session, so a block that holds
-- only the later part of its sessions (deployment_type=sponsored_conversation, whose sessions start
-- with an `embed` load) still reports the sessions, loads and viewable sessions its queries and
-- clicks belong to, and every rate matches its counts. One scan: every tenant event in the window,
-- the filters as the flag `blk`.
-- Per ingestion visit (null: events without a session) and value.
WITH fg AS (
  SELECT any_value(vk) AS vkey, any_value(k) AS k, min(sk) AS sk, max(sk) AS sk_hi,
    count(*) FILTER (WHERE blk AND event_type = 'widget_load' AND visit_id IS NULL) AS loose_loads,
    count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'heartbeat' AND visit_id IS NOT NULL) AS heartbeats,
    count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
    bool_or(event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000) AS viewable,
    bool_or(blk) AS inb
  FROM (
    SELECT
      -- The ingestion visit and its UTC day, as in ask_ai_by_time.
      visit_id + (epoch_us(ts) // 86400000000 % 512) * 9007199254740992 AS vk,
      visit_id, hash(session_id) AS sk, event_type, click_type, in_view_pct, in_view_ms,
      coalesce(CASE $dimension
        WHEN 'widget_id' THEN widget_id
        WHEN 'placement_id' THEN placement_id
        WHEN 'deployment_type' THEN deployment_type
        WHEN 'interaction_type' THEN interaction_type
        WHEN 'referring_url' THEN referring_url
        WHEN 'ai_agent' THEN ai_agent
        WHEN 'intent' THEN intent_type
        WHEN 'category' THEN category
      END, '') AS k,
      (
        -- @include ask_ai_filters
      ) AS blk
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND (visit_id IS NOT NULL OR session_id IS NULL)
  )
  GROUP BY hash(vk, k)
),
fv AS (
  SELECT vkey, min(sk) AS sk, max(sk_hi) AS sk_hi,
    sum(loads) AS loads, bool_or(viewable) AS viewable, bool_or(inb) AS inb, sum(queries) > 0 AS engaged
  FROM fg
  WHERE vkey IS NOT NULL
  GROUP BY vkey
),
-- The sessions derived in time order (as in ask_ai_by_time): an event flagged `visit_late` in the
-- window (or from a file before the flag), events without a visit id, or two sessions that drew
-- the same random visit id.
redo AS (
  -- @include late_sessions
  UNION
  SELECT sk FROM fv WHERE sk <> sk_hi
  UNION
  SELECT sk_hi FROM fv WHERE sk <> sk_hi
),
ks AS (
  SELECT sk, step, k,
    min(ts) AS t0,
    max(ts) AS t1,
    count(*) FILTER (WHERE blk AND event_type = 'query') AS queries,
    count(*) FILTER (WHERE blk AND event_type = 'click') AS clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'article') AS article_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'click' AND click_type = 'cta') AS cta_clicks,
    count(*) FILTER (WHERE blk AND event_type = 'heartbeat') AS heartbeats,
    count(*) FILTER (WHERE event_type = 'widget_load') AS loads,
    bool_or(event_type = 'widget_viewable' AND in_view_pct >= 50 AND in_view_ms >= 1000) AS viewable,
    bool_or(blk) AS inb
  FROM (
    SELECT
      hash(session_id) AS sk,
      ts, event_type, click_type, in_view_pct, in_view_ms,
      time_bucket(INTERVAL 15 MINUTE, ts) AS step,
      coalesce(CASE $dimension
        WHEN 'widget_id' THEN widget_id
        WHEN 'placement_id' THEN placement_id
        WHEN 'deployment_type' THEN deployment_type
        WHEN 'interaction_type' THEN interaction_type
        WHEN 'referring_url' THEN referring_url
        WHEN 'ai_agent' THEN ai_agent
        WHEN 'intent' THEN intent_type
        WHEN 'category' THEN category
      END, '') AS k,
      (
        -- @include ask_ai_filters
      ) AS blk
    FROM events
    WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
      AND ts >= CAST($start_ts AS TIMESTAMP)
      AND ts < CAST($end_ts AS TIMESTAMP)
      AND tenant_id = $tenant_id
      AND session_id IS NOT NULL
  )
  SEMI JOIN redo USING (sk)
  GROUP BY sk, step, k
),
-- Visits of the derived sessions in time order, as ask_ai_by_time derives them: a step more than 30
-- minutes after the session's previous step's last event (or its day's first step) opens a visit.
opened AS (
  SELECT
    sk, step,
    coalesce(min(t0) - lag(max(t1)) OVER w > INTERVAL 30 MINUTE, true) AS opens
  FROM ks
  GROUP BY sk, step
  WINDOW w AS (PARTITION BY sk, CAST(step AS DATE) ORDER BY step)
),
visit_of AS (
  SELECT
    sk, step,
    -- A key of its own per derived visit (session, UTC day, number), negative: below every visit id.
    -(hash(sk, CAST(step AS DATE),
      sum(opens::INT) OVER (PARTITION BY sk, CAST(step AS DATE) ORDER BY step ROWS UNBOUNDED PRECEDING)) >> 2
    )::BIGINT - 1 AS vkey
  FROM opened
),
-- Per visit and value: the kept ingestion visits and events without a session, then the derived visits.
g AS (
  SELECT vkey, k, loose_loads, queries, clicks, article_clicks, cta_clicks, heartbeats, loads, viewable, inb
  FROM fg
  WHERE vkey IS NULL
  UNION ALL
  SELECT vkey, k, loose_loads, queries, clicks, article_clicks, cta_clicks, heartbeats, loads, viewable, inb
  FROM fg
  ANTI JOIN redo USING (sk)
  WHERE vkey IS NOT NULL
  UNION ALL
  SELECT
    v.vkey, ks.k,
    0,
    sum(queries),
    sum(clicks),
    sum(article_clicks),
    sum(cta_clicks),
    sum(heartbeats),
    sum(loads),
    bool_or(viewable),
    bool_or(inb)
  FROM ks
  JOIN visit_of v USING (sk, step)
  GROUP BY v.vkey, ks.k
),
v AS (
  SELECT vkey, loads, viewable, inb, engaged
  FROM fv
  ANTI JOIN redo USING (sk)
  UNION ALL
  SELECT vkey, sum(loads), bool_or(viewable), bool_or(inb), sum(queries) > 0
  FROM g
  WHERE vkey < 0
  GROUP BY vkey
),
s AS (
  SELECT g.k, g.inb, g.queries, v.loads, v.viewable
  FROM g JOIN v USING (vkey)
),
per_k AS (
  SELECT k,
    sum(loose_loads) AS widget_loads, 0 AS viewable_sessions, sum(queries) AS engagement_queries,
    sum(clicks) AS total_clicks, sum(article_clicks) AS article_clicks, sum(cta_clicks) AS cta_clicks,
    0 AS sessions, 0 AS engaged_sessions, sum(heartbeats) AS heartbeats
  FROM g
  GROUP BY k
  UNION ALL
  SELECT k,
    sum(loads), count(*) FILTER (WHERE viewable), 0, 0, 0, 0, count(*), count(*) FILTER (WHERE queries > 0), 0
  FROM s
  WHERE inb
  GROUP BY k
  UNION ALL
  -- The whole block once (key NULL): a session counts once here however many groups it is in.
  SELECT NULL,
    sum(loose_loads), 0, sum(queries), sum(clicks), sum(article_clicks), sum(cta_clicks), 0, 0, sum(heartbeats)
  FROM g
  UNION ALL
  SELECT NULL, sum(loads), count(*) FILTER (WHERE viewable), 0, 0, 0, 0, count(*), count(*) FILTER (WHERE engaged), 0
  FROM v
  WHERE inb
),
totals AS (
  SELECT k AS key,
    sum(widget_loads)::BIGINT AS widget_loads,
    sum(viewable_sessions)::BIGINT AS viewable_sessions,
    sum(engagement_queries)::BIGINT AS engagement_queries,
    sum(total_clicks)::BIGINT AS total_clicks,
    sum(article_clicks)::BIGINT AS article_clicks,
    sum(cta_clicks)::BIGINT AS cta_clicks,
    sum(sessions)::BIGINT AS sessions,
    sum(engaged_sessions)::BIGINT AS engaged_sessions,
    sum(heartbeats)::BIGINT AS heartbeats
  FROM per_k
  GROUP BY 1
  HAVING sum(engagement_queries) + sum(total_clicks) + sum(heartbeats) + sum(sessions) + sum(widget_loads) > 0
),
-- The values a caller gets: a dimension may hold millions of values (placements and referrers come from
-- pages), so with $top only the first $limit in the breakdown's order ($sort, $descending; ties by key, as
-- analytics/breakdown.ts sorts), and with $keyed only the values in $keys (an earlier window's rows for
-- the current rows). Rates as summaryOf computes them (analytics/metrics.ts).
ranked AS (
  SELECT *,
    CASE $sort
      WHEN 'widget_loads' THEN widget_loads
      WHEN 'viewable_sessions' THEN viewable_sessions
      WHEN 'engagement_queries' THEN engagement_queries
      WHEN 'total_clicks' THEN total_clicks
      WHEN 'article_clicks' THEN article_clicks
      WHEN 'cta_clicks' THEN cta_clicks
      WHEN 'sessions' THEN sessions
      WHEN 'total_session_time_seconds' THEN heartbeats * $heartbeat_seconds
      WHEN 'avg_session_duration_seconds' THEN
        CASE WHEN sessions = 0 THEN 0 ELSE round(heartbeats * $heartbeat_seconds / sessions) END
      WHEN 'viewability_rate' THEN
        CASE WHEN sessions = 0 THEN 0 ELSE round(viewable_sessions * 10000.0 / sessions) / 100 END
      WHEN 'engagement_rate' THEN
        CASE WHEN widget_loads = 0 THEN 0 ELSE round(engagement_queries * 10000.0 / widget_loads) / 100 END
      WHEN 'engagement_session_rate' THEN
        CASE WHEN sessions = 0 THEN 0 ELSE round(engaged_sessions * 10000.0 / sessions) / 100 END
      WHEN 'query_to_click_rate' THEN
        CASE WHEN engagement_queries = 0 THEN 0 ELSE round(total_clicks * 10000.0 / engagement_queries) / 100 END
      ELSE 0
    END::DOUBLE AS sort_value
  FROM totals
  WHERE key IS NOT NULL AND (NOT $keyed OR list_contains($keys, key))
)
-- The whole block (key NULL) always.
SELECT * FROM totals WHERE key IS NULL
UNION ALL
SELECT * EXCLUDE (sort_value) FROM (
  SELECT * FROM ranked
  ORDER BY
    CASE WHEN $descending THEN -sort_value ELSE sort_value END,
    CASE WHEN $descending AND $sort = 'key' THEN key END DESC NULLS LAST,
    key
  LIMIT $limit
)
