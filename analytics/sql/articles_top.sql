-- Recirculation: articles by clicks on our tracking links, with impressions (times shown in search
-- results) and the two per article; $level = 'article' groups by data model and article, 'site' by
-- the host of the article URL.
WITH e AS (
  SELECT
    data_model_id,
    article_id,
    article_url,
    regexp_extract(article_url, '^https?://([^/:?#]+)', 1) AS site,
    event_type
  FROM events
  WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
    AND ts >= CAST($start_ts AS TIMESTAMP)
    AND ts < CAST($end_ts AS TIMESTAMP)
    AND tenant_id = $tenant_id
    AND (event_type = 'result_impression' OR (event_type = 'click' AND click_type = 'article'))
    AND article_url IS NOT NULL
    -- An article row needs the article's ids; a click known only by its URL still counts for its site.
    AND ($level = 'site' OR (data_model_id IS NOT NULL AND article_id IS NOT NULL))
    AND ($data_model_id IS NULL OR data_model_id = $data_model_id)
)
SELECT
  CASE WHEN $level = 'site' THEN NULL ELSE coalesce(data_model_id, '') END AS data_model_id,
  CASE WHEN $level = 'site' THEN NULL ELSE coalesce(article_id, '') END AS article_id,
  CASE WHEN $level = 'site' THEN NULL ELSE any_value(article_url) END AS url,
  coalesce(site, '') AS site,
  count(*) FILTER (WHERE event_type = 'click')::BIGINT AS clicks,
  count(*) FILTER (WHERE event_type = 'result_impression')::BIGINT AS impressions
FROM e
GROUP BY 1, 2, 4
ORDER BY clicks DESC, impressions DESC, 4, 1, 2
LIMIT $limit
