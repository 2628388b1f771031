-- Trending signals of a data model in a window: what was asked of its AI models (query events),
-- what was searched in it (the api_call of each served result page) and which of its articles
-- were clicked, one row per distinct (channel, sender, session, text).
-- A sender (client network key, agent identity, else session, else the event itself) keeps at
-- most $per_sender rows per channel, its newest, so no sender or batch fills the signal.
WITH signals AS (
  SELECT
    CASE WHEN event_type = 'click' THEN 'click' WHEN source = 'widget' THEN 'widget' ELSE 'server' END AS channel,
    CASE
      WHEN event_type = 'click' THEN article_url
      ELSE lower(trim(coalesce(prompt, prompt_text, '')))
    END AS text,
    coalesce(client_key, agent_identity, session_id, event_id) AS sender,
    coalesce(session_id, agent_identity, event_id) AS session,
    max(ts) AS last_ts
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($start_ts AS TIMESTAMP)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND (
      (event_type = 'query' AND list_contains($ai_agents, ai_agent)
        AND list_contains($interaction_types, interaction_type))
      OR (event_type = 'api_call' AND interaction_type = 'search' AND data_model_id = $data_model_id)
      OR (event_type = 'click' AND click_type = 'article' AND data_model_id = $data_model_id)
    )
  GROUP BY ALL
),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY channel, sender ORDER BY last_ts DESC, text) AS n
  FROM signals
  WHERE text IS NOT NULL AND text <> ''
)
SELECT channel, text, sender, session
FROM ranked
WHERE n <= $per_sender
ORDER BY last_ts DESC, text
LIMIT $limit
