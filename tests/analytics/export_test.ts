import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture, parseCsv } from "./_fixture.ts";

Deno.test("logs export: text/csv streams every row of the window, newest first, not a page", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const json = await (await world.w.app.request("/v1/analytics/ask-ai/logs?limit=500", { headers: bearer(world.key) }))
    .json();
  for (
    const [qs, headers] of [
      ["?limit=2&page=3", { accept: "text/csv" }],
      ["?format=csv&limit=2", {}],
    ] as const
  ) {
    const res = await world.w.app.request(`/v1/analytics/ask-ai/logs${qs}`, {
      headers: { ...bearer(world.key), ...headers },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/csv/);
    assert.match(res.headers.get("content-disposition")!, /attachment; filename="ask-ai-logs\.csv"/);
    const rows = parseCsv(await res.text());
    assert.deepEqual(rows[0], [
      "timestamp",
      "widget_id",
      "placement_id",
      "deployment_type",
      "ai_agent",
      "referring_url",
      "interaction_type",
      "prompt",
      "response",
    ]);
    const data = rows.slice(1);
    assert.equal(data.length, json.count);
    assert.deepEqual(data.map((r) => r[0]), json.data.map((d: { timestamp: string }) => d.timestamp));
    assert.deepEqual(data.map((r) => r[7]), json.data.map((d: { prompt: string }) => d.prompt));
  }
});

Deno.test("logs export: CSV cells that look like formulas are defused, quotes and newlines survive", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const prompts = ['=HYPERLINK("http://evil.example","x")', "+1+1", "@SUM(A1)", 'say "hi"\nand bye', "-2"];
  await world.w.deps.events.record(prompts.map((p, i) => ({
    event_type: "query",
    ts: `2026-11-22T09:0${i}:00Z`,
    ai_agent: "am_main",
    interaction_type: "free_form",
    prompt: p,
    response: "ok",
  })));
  await world.w.deps.events.flush();
  const res = await world.w.app.request("/v1/analytics/ask-ai/logs?format=csv&start_date=2026-11-22", {
    headers: bearer(world.key),
  });
  const rows = parseCsv(await res.text()).slice(1);
  const got = rows.map((r) => r[7]);
  for (const p of prompts) {
    const expected = /^[=+\-@]/.test(p) ? "'" + p : p;
    assert.ok(got.includes(expected), `${p} -> ${JSON.stringify(got)}`);
  }
});

Deno.test("logs export: format=parquet holds every row, typed, newest first", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const res = await world.w.app.request("/v1/analytics/ask-ai/logs?format=parquet", { headers: bearer(world.key) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/vnd.apache.parquet");
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
  const path = `${world.w.dataDir}/check.parquet`;
  await Deno.writeFile(path, bytes);
  const rows = await world.w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(`SELECT prompt FROM read_parquet('${path}')`)).getRowObjectsJS()
  );
  const json = await (await world.w.app.request("/v1/analytics/ask-ai/logs?limit=500", { headers: bearer(world.key) }))
    .json();
  assert.deepEqual(rows.map((r) => r.prompt), json.data.map((d: { prompt: string }) => d.prompt));
});

Deno.test("breakdown export: CSV and Parquet carry the rows; bad format is a 400; exports need the key", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const res = await world.w.app.request("/v1/analytics/ask-ai/breakdown?dimension=placement_id&format=csv", {
    headers: bearer(world.key),
  });
  assert.equal(res.status, 200);
  const rows = parseCsv(await res.text());
  assert.equal(rows[0]![0], "key");
  assert.equal(rows[0]!.length, 14);
  assert.deepEqual(rows.slice(1).map((r) => r[0]), ["pl_1", "", "pl_2"]); // ties on sessions by key
  const pq = await world.w.app.request("/v1/analytics/ask-ai/breakdown?dimension=intent", {
    headers: { ...bearer(world.key), accept: "application/vnd.apache.parquet" },
  });
  assert.equal(pq.status, 200);
  const bytes = new Uint8Array(await pq.arrayBuffer());
  assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
  const bad = await world.w.app.request("/v1/analytics/ask-ai/logs?format=xlsx", { headers: bearer(world.key) });
  assert.equal(bad.status, 400);
  assert.ok(!(await bad.text()).includes("xlsx"));
  const anon = await world.w.app.request("/v1/analytics/ask-ai/logs?format=csv");
  assert.equal(anon.status, 401);
  // Another tenant's export holds none of this tenant's rows.
  const other = await world.w.app.request("/v1/analytics/ask-ai/logs?format=csv", { headers: bearer(world.other.key) });
  assert.equal(parseCsv(await other.text()).length, 1);
});
