-- The sponsored-conversation rollups' optional filters (an unset one matches every row), as one
-- predicate: included by each sponsored rollup inside parentheses (`-- @include sponsored_filters`).
($ai_agent IS NULL OR ai_agent = $ai_agent)
AND ($placement_id IS NULL OR placement_id = $placement_id)
AND ($prompt_id IS NULL OR prompt_id = $prompt_id)
AND ($creative_id IS NULL OR creative_id = $creative_id)
AND ($line_item_id IS NULL OR line_item_id = $line_item_id)
AND ($publisher_id IS NULL OR publisher_id = $publisher_id)
