/**
 * A click on an answer's citation belongs to the AI model that answered, like the answer's query
 * event and its citation impressions: `widget_id` (which scopes to the widget's AI model) counts
 * the question and the click its answer led to together, whichever route asked.
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { mcpWorld } from "../mcp/_world.ts";

Deno.test("ask-ai widget_id: a click on the citation of a server answer counts with that answer's query", async () => {
  await using w = await mcpWorld();
  // The tenant's own server asks the model the demo widget is bound to (no widget named).
  const res = await w.app.request(`/app/aimodel/${w.ids.aiModelId}`, {
    method: "POST",
    headers: { ...bearer(w.apiKey), "content-type": "application/json" },
    body: JSON.stringify({ query: "What did the city council decide about the budget?" }),
  });
  assert.equal(res.status, 200);
  const { citations } = await res.json();
  assert.ok(citations.length >= 1);
  const follow = await w.app.request(new URL(citations[0].source_url).pathname, { redirect: "manual" });
  assert.equal(follow.status, 302);
  await follow.body?.cancel();
  await w.deps.events.stop(); // hands in the buffered impressions and flushes the log

  const scoped = await w.app.request(`/v1/analytics/ask-ai?widget_id=${w.ids.widgetId}`, { headers: bearer(w.apiKey) });
  assert.equal(scoped.status, 200);
  const { summary } = await scoped.json();
  assert.equal(summary.engagement_queries, 1);
  assert.equal(summary.article_clicks, 1, "the click its answer led to");
  assert.equal(summary.total_clicks, 1);
  assert.equal(summary.query_to_click_rate, 100);
});
