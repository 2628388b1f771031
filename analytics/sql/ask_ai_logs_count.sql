-- Number of Ask AI log rows matching the filters (for total_pages and count).
SELECT count(*)::BIGINT AS count
FROM events
WHERE date BETWEEN CAST($from_date AS DATE) AND CAST($to_date AS DATE)
  AND (
    -- @include ask_ai_log_filters
  )
