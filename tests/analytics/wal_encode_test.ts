/**
 * Left by round 6: each accepted event row was JSON-encoded twice on ingest, once to check that it
 * fits a log chunk (enrich.ts) and again to store it (wal.ts). Now it is encoded once and the
 * checked bytes are the stored ones; the stored bytes are pinned here so the change kept them.
 */
import assert from "node:assert/strict";
import { analyticsWorld } from "./_fixture.ts";

const EVENTS = [
  {
    event_id: "evt-pin-1",
    event_type: "query",
    ai_agent: "am_main",
    prompt: 'caf\ud800 "tea"\n',
    ts: "2026-11-22T11:00:00.000Z",
  },
  {
    event_id: "evt-pin-2",
    event_type: "widget_load",
    widget_id: "wd_main",
    ts: "2026-11-22T11:00:01.000Z",
    referring_url: "https://news.example/a?b=c",
  },
];

/** The log's bytes for {@link EVENTS}, as they were before the change (the tenant id varies per world). */
const pinned = (tenantId: string) =>
  `{"event_id":"evt-pin-1","ts_ms":1795345200000,"tenant_id":"${tenantId}","widget_id":null,"ai_agent":"am_main",` +
  `"placement_id":null,"deployment_type":null,"session_id":null,"event_type":"query","interaction_type":null,` +
  `"click_type":null,"prompt":"caf\ufffd \\"tea\\"\\n","response":null,"referring_url":null,"article_url":null,` +
  `"data_model_id":null,"article_id":null,"position":null,"campaign_id":null,"prompt_id":null,"prompt_text":null,` +
  `"creative_id":null,"line_item_id":null,"publisher_id":null,"ad_partner":null,"intent_type":"other",` +
  `"category":"general","topic":"caf","agent_identity":null,"source":"server","in_view_pct":null,"in_view_ms":null,` +
  `"visit_id":null,"visit_start":false,"visit_viewable":false,"visit_query_no":null,"sponsored_start":false,` +
  `"client_key":null,"visit_late":false}\n` +
  `{"event_id":"evt-pin-2","ts_ms":1795345201000,"tenant_id":"${tenantId}","widget_id":"wd_main",` +
  `"ai_agent":"am_main","placement_id":null,"deployment_type":"embed","session_id":null,"event_type":"widget_load",` +
  `"interaction_type":null,"click_type":null,"prompt":null,"response":null,` +
  `"referring_url":"https://news.example/a","article_url":null,"data_model_id":null,"article_id":null,` +
  `"position":null,"campaign_id":null,"prompt_id":null,"prompt_text":null,"creative_id":null,"line_item_id":null,` +
  `"publisher_id":null,"ad_partner":null,"intent_type":null,"category":null,"topic":null,"agent_identity":null,` +
  `"source":"server","in_view_pct":null,"in_view_ms":null,"visit_id":null,"visit_start":false,` +
  `"visit_viewable":false,"visit_query_no":null,"sponsored_start":false,"client_key":null,"visit_late":false}\n`;

Deno.test("EventPipeline.ingest(): each row is JSON-encoded once, and the log holds the same bytes as before", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const tenantId = (await w.deps.repos.widgets.get("wd_main"))!.tenantId;
  const encoded = new Map<string, number>();
  const stringify = JSON.stringify;
  JSON.stringify = function (value: unknown, ...rest: unknown[]) {
    const id = (value as { event_id?: unknown } | null)?.event_id;
    if (typeof id === "string" && "ts_ms" in (value as object)) encoded.set(id, (encoded.get(id) ?? 0) + 1);
    return (stringify as (...a: unknown[]) => string)(value, ...rest);
  } as typeof JSON.stringify;
  try {
    assert.equal(await w.deps.events.ingest(EVENTS, { source: "server", tenantId }), 2);
  } finally {
    JSON.stringify = stringify;
  }
  assert.deepEqual(Object.fromEntries(encoded), { "evt-pin-1": 1, "evt-pin-2": 1 });

  const chunks = await w.deps.events.wal.take(10);
  assert.equal(chunks.length, 1);
  assert.deepEqual(chunks[0]!.bytes, new TextEncoder().encode(pinned(tenantId)));
});
