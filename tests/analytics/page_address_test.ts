/**
 * `referring_url` holds the page as origin and path only (docs/events-and-metrics.md), whoever
 * names it: a widget event, a server batch, or a question asked with `referring_url` or `Referer`.
 * A page's query string and fragment may carry a reader's e-mail or a session token, and the tenant
 * reads this column.
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { ORIGIN, widgetWorld } from "../widget/_world.ts";

const PAGE = "https://dailyledger.example/transit/fares";
const WITH_SECRETS = `${PAGE}?email=ana%40example.com&token=s3cr3t#comments`;

async function loggedPages(w: Awaited<ReturnType<typeof widgetWorld>>, key: string, widgetId: string) {
  await w.deps.events.flush();
  const res = await w.app.request(`/v1/analytics/ask-ai/logs?widget_id=${widgetId}`, { headers: bearer(key) });
  assert.equal(res.status, 200);
  const { data } = await res.json();
  return (data as { referring_url: string; prompt: string }[]).map((r) => [r.prompt, r.referring_url]).sort();
}

Deno.test("referring_url: every stored page is origin and path, whoever sends it", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  // The page's whole address, from the widget, from the tenant's server and on a question asked.
  const widgetBatch = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json" },
    body: JSON.stringify({
      widget_id: a.widget.id,
      events: [{
        event_type: "query",
        session_id: "sess-w",
        interaction_type: "free_form",
        prompt: "from the widget",
        response: "r",
        referring_url: WITH_SECRETS,
      }],
    }),
  });
  assert.equal(widgetBatch.status, 202, await widgetBatch.clone().text());
  const serverBatch = await w.app.request("/v1/events", {
    method: "POST",
    headers: { ...bearer(a.key), "content-type": "application/json" },
    body: JSON.stringify({
      events: [{
        event_type: "query",
        widget_id: a.widget.id,
        interaction_type: "free_form",
        prompt: "from the server",
        response: "r",
        referring_url: WITH_SECRETS,
      }],
    }),
  });
  assert.equal(serverBatch.status, 202, await serverBatch.clone().text());
  for (const [prompt, how] of [["asked with referring_url", "body"], ["asked with Referer", "header"]] as const) {
    const res = await w.app.request(`/app/aimodel/${a.model.id}`, {
      method: "POST",
      headers: {
        ...bearer(a.key),
        "content-type": "application/json",
        "x-widget-id": a.widget.id,
        ...(how === "header" ? { referer: WITH_SECRETS } : {}),
      },
      body: JSON.stringify({ query: prompt, ...(how === "body" ? { referring_url: WITH_SECRETS } : {}) }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  assert.deepEqual(await loggedPages(w, a.key, a.widget.id), [
    ["asked with Referer", PAGE],
    ["asked with referring_url", PAGE],
    ["from the server", PAGE],
    ["from the widget", PAGE],
  ]);
});
