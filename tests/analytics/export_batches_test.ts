import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadGeneratedDays, parseCsv } from "./_fixture.ts";
import { startServer } from "../../routes/server.ts";

Deno.test("logs export over many days: every row of the local window, in the JSON order, under filters and a zone", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  await loadGeneratedDays(world, { from: "2026-11-10", to: "2026-11-22", events: 250, seed: 90 });
  // A second file in one day folder (a later flush), with rows at the same instant as each other.
  await deps.events.record(["a", "b", "c"].map((p) => ({
    event_type: "query",
    ts: "2026-11-15T18:30:00Z",
    ai_agent: "am_main",
    interaction_type: "search",
    prompt: `Tie ${p}`,
  })));
  await deps.events.flush();
  deps.analytics.refresh();

  for (
    const qs of [
      "start_date=2026-11-11&end_date=2026-11-21&timezone=Asia/Kolkata",
      "start_date=2026-11-10&end_date=2026-11-22&timezone=America/New_York&placement_id=pl_top",
      "start_date=2026-11-12&end_date=2026-11-20&widget_id=wd_second&interaction_type=free_form",
    ]
  ) {
    const json: { timestamp: string; prompt: string; placement_id: string; ai_agent: string }[] = [];
    for (let page = 1;; page++) {
      const res = await world.w.app.request(`/v1/analytics/ask-ai/logs?${qs}&limit=500&page=${page}`, {
        headers: bearer(world.key),
      });
      const body = await res.json();
      json.push(...body.data);
      if (page >= body.total_pages) break;
    }
    assert.ok(json.length > 50, `${qs}: ${json.length} rows`);
    const csv = await world.w.app.request(`/v1/analytics/ask-ai/logs?${qs}&format=csv`, { headers: bearer(world.key) });
    assert.equal(csv.status, 200);
    const data = parseCsv(await csv.text()).slice(1);
    assert.equal(data.length, json.length, qs);
    assert.deepEqual(
      data.map((r) => [r[0], r[2], r[4], r[7]]),
      json.map((d) => [d.timestamp, d.placement_id, d.ai_agent, d.prompt]),
    );
  }
  // Served by Deno.serve, which frees each piece once written (core/owned_chunks.ts): the same bytes.
  const qs = "start_date=2026-11-10&end_date=2026-11-22&format=csv";
  const inProcess = await (await world.w.app.request(`/v1/analytics/ask-ai/logs?${qs}`, {
    headers: bearer(world.key),
  })).text();
  const server = startServer(world.w.app.fetch);
  try {
    const served = await fetch(`${server.url}/v1/analytics/ask-ai/logs?${qs}`, { headers: bearer(world.key) });
    assert.equal(served.status, 200);
    const text = await served.text();
    // Rows of all seven two-day batches, so several pieces went through the release.
    assert.equal(new Set(parseCsv(text).slice(1).map((r) => r[0]!.slice(0, 10))).size, 13);
    assert.equal(text, inProcess);
  } finally {
    await server.shutdown();
  }
  // A download cancelled after its first piece: the write in flight finishes and its folder goes.
  const res = await world.w.app.request("/v1/analytics/ask-ai/logs?start_date=2026-11-10&format=csv", {
    headers: bearer(world.key),
  });
  const reader = res.body!.getReader();
  assert.ok((await reader.read()).value!.length > 0);
  await reader.cancel();
  // A Parquet export is written to the same scratch folder and removed once sent.
  const pq = await world.w.app.request("/v1/analytics/ask-ai/logs?start_date=2026-11-10&format=parquet", {
    headers: bearer(world.key),
  });
  assert.equal(new TextDecoder().decode(new Uint8Array(await pq.arrayBuffer()).subarray(0, 4)), "PAR1");
  // Nothing is left in the scratch folder.
  const left = [];
  for await (const e of Deno.readDir(`${deps.analytics.eventsDir}/.tmp`)) left.push(e.name);
  assert.deepEqual(left, []);
});
