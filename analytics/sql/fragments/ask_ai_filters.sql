-- The Ask AI rollups' optional filters (an unset one matches every row), as one predicate: included by
-- the rollups that apply them, as a WHERE condition or as the in-scope flag of each event
-- (`-- @include ask_ai_filters` inside parentheses).
($ai_agent IS NULL OR ai_agent = $ai_agent)
AND ($placement_id IS NULL OR placement_id = $placement_id)
AND ($deployment_type IS NULL OR deployment_type = $deployment_type)
AND ($creative_id IS NULL OR creative_id = $creative_id)
AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
