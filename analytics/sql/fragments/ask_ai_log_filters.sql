-- Which query events the Ask AI log routes list (the page, its count, the CSV and Parquet exports), as one
-- predicate: included by each of their statements after WHERE (`-- @include ask_ai_log_filters`).
ts >= CAST($start_ts AS TIMESTAMP)
AND ts < CAST($end_ts AS TIMESTAMP)
AND tenant_id = $tenant_id
AND event_type = 'query'
AND list_contains($interaction_types, interaction_type)
AND ($ai_agent IS NULL OR ai_agent = $ai_agent)
AND ($placement_id IS NULL OR placement_id = $placement_id)
AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
