import assert from "node:assert/strict";
import { compactDay, recoverCompactions } from "../../analytics/compaction.ts";
import { generateDay } from "../../fixtures/events.ts";
import { main as fixturesCli } from "../../fixtures/events_cli.ts";
import { demoEventsStep } from "../../fixtures/demo_events.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import type { FixtureArticleRef, FixtureReadership } from "../../fixtures/readership_events.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { parquetFiles, parquetIdCounts } from "./_count.ts";

const scope = {
  tenantId: "tn_f",
  widgets: [{ id: "wd_f", aiModelId: "am_f", deploymentType: "embed", origin: "https://n.example" }],
  campaigns: [{ id: "cp_f", creativeIds: ["cr_1"], prompts: [{ id: "pm_f", text: "Where should I travel?" }] }],
};

Deno.test("generateDay() is deterministic for a seed and stays inside its day", () => {
  const a = generateDay({ scope, date: "2026-11-01", events: 2000, seed: 7 });
  const b = generateDay({ scope, date: "2026-11-01", events: 2000, seed: 7 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, generateDay({ scope, date: "2026-11-01", events: 2000, seed: 8 }));
  assert.ok(a.length >= 2000 && a.length < 2100);
  const start = Date.parse("2026-11-01T00:00:00Z");
  for (const e of a) assert.ok(e.ts_ms >= start && e.ts_ms < start + 86_400_000);
  const types = new Set(a.map((e) => e.event_type));
  for (const t of ["widget_load", "widget_viewable", "query", "heartbeat", "click", "sponsored_impression"]) {
    assert.ok(types.has(t as never), t);
  }
});

/** A readership scope over six made-up articles in two data models. */
function readershipScope(): FixtureReadership {
  const refs: FixtureArticleRef[] = Array.from({ length: 6 }, (_, i) => ({
    dataModelId: i < 4 ? "dm_a" : "dm_b",
    id: `ar_${i}`,
    url: `https://n.example/a/${i}`,
  }));
  const hash = (q: string) => [...q].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  return {
    aiModelId: "am_f",
    search: (dm, q) => refs.filter((r) => r.dataModelId === dm).slice(hash(q) % 2),
    cite: (q) => [refs[hash(q) % 6]!, refs[(hash(q) + 1) % 6]!],
    agents: [
      { identity: "payproxy:bot-1", weight: 3, clickRate: 0.2, dataModelIds: ["dm_a"] },
      { identity: "mcp", weight: 1, clickRate: 0.1, dataModelIds: ["dm_a", "dm_b"] },
    ],
    own: { dataModelIds: ["dm_a", "dm_b"], clickRate: 0.2 },
  };
}

Deno.test("generateDay() with readership: impressions, then clicks only on articles that caller was shown", () => {
  const withReaders = { ...scope, readership: readershipScope() };
  const a = generateDay({ scope: withReaders, date: "2026-11-01", events: 3000, seed: 7 });
  assert.deepEqual(a, generateDay({ scope: withReaders, date: "2026-11-01", events: 3000, seed: 7 }));
  // The widget traffic keeps its volume; the API traffic comes on top.
  const widget = a.filter((e) => e.source === "widget");
  assert.ok(widget.length >= 3000 && widget.length < 3100);
  const impressions = a.filter((e) => e.event_type === "result_impression");
  assert.ok(impressions.length > 100);
  assert.ok(impressions.every((e) => e.session_id === null && e.article_id && e.position! >= 1));
  const callers = new Set(a.map((e) => e.agent_identity));
  for (const c of ["payproxy:bot-1", "mcp", null]) assert.ok(callers.has(c), String(c));
  assert.ok(a.some((e) => e.event_type === "api_call" && e.agent_identity === "payproxy:bot-1"));
  assert.ok(a.some((e) => e.event_type === "query" && e.agent_identity === "mcp"));
  // Every article click follows an impression of the same article to the same caller, earlier or at once.
  const shown = new Map<string, number>();
  let clicks = 0;
  for (const e of a) {
    const key = `${e.agent_identity} ${e.data_model_id} ${e.article_id} ${e.article_url}`;
    if (e.event_type === "result_impression") shown.set(key, (shown.get(key) ?? 0) + 1);
    if (e.event_type === "click" && e.click_type === "article") {
      clicks++;
      assert.ok((shown.get(key) ?? 0) > 0, `click on an article not shown: ${key}`);
      shown.set(key, shown.get(key)! - 1);
    }
  }
  assert.ok(clicks > 20);
  // Without readership the day is what it always was (the benchmarks' data does not move).
  const plain = generateDay({ scope, date: "2026-11-01", events: 3000, seed: 7 });
  assert.ok(plain.every((e) => e.event_type !== "result_impression" && e.source === "widget"));
});

Deno.test("fixtures CLI: --days --events --out writes the service's layout, the same events for the same seed", async () => {
  const out = await Deno.makeTempDir({ prefix: "fixtures-" });
  const out2 = await Deno.makeTempDir({ prefix: "fixtures-" });
  try {
    assert.equal(await fixturesCli(["--days", "3", "--events", "900", "--out", out, "--end", "2026-11-03"]), 0);
    assert.equal(await fixturesCli(["--days", "3", "--events", "900", "--out", out2, "--end", "2026-11-03"]), 0);
    const files = await parquetFiles(`${out}/events`);
    assert.deepEqual(files.map((f) => f.split("/")[0]), ["date=2026-11-01", "date=2026-11-02", "date=2026-11-03"]);
    const { AnalyticsDb } = await import("../../analytics/duckdb.ts");
    const db = await AnalyticsDb.open();
    try {
      const a = await parquetIdCounts(db, `${out}/events`);
      const b = await parquetIdCounts(db, `${out2}/events`);
      assert.ok(a.size >= 900);
      assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    } finally {
      db.close();
    }
    assert.equal(await fixturesCli(["--days", "0", "--events", "1", "--out", out]), 2);
    assert.equal(await fixturesCli(["--days", "1", "--events", "1"]), 2);
  } finally {
    await Deno.remove(out, { recursive: true });
    await Deno.remove(out2, { recursive: true });
  }
});

Deno.test("demo seed: 30 days of events so every analytics endpoint shows data on first start", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [demoEventsStep]);
  const key = seeded.apiKey!;
  const files = await parquetFiles(w.deps.analytics.eventsDir);
  assert.equal(files.length, 30);
  const get = async (p: string) => {
    const res = await w.app.request(`/v1/analytics/${p}`, { headers: bearer(key) });
    assert.equal(res.status, 200, p);
    return await res.json();
  };
  const askAi = await get("ask-ai?start_date=2026-10-24&end_date=2026-11-22");
  assert.ok(askAi.summary.widget_loads > 0);
  assert.ok(askAi.daily_breakdown.every((d: { widget_loads: number }) => d.widget_loads > 0));
  assert.ok((await get("ask-ai/logs")).count > 0);
  const sponsored = await get("sponsored-conversations");
  assert.ok(sponsored.summary.impressions > 0);
  assert.deepEqual(sponsored.campaign_breakdown[0].creative_ids, ["cr_1001", "cr_1002"]);
  assert.ok(sponsored.prompt_breakdown.some((p: { impressions: number }) => p.impressions > 0));
  assert.ok((await get("session-intelligence")).session_intelligence.summary.total_engaged_sessions > 0);
});

Deno.test("demo seed with its articles: top articles and agent readership have data, clicks never exceed impressions", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [seedDemoArticles, demoEventsStep]);
  const get = async (p: string) => {
    const res = await w.app.request(`/v1/analytics/${p}`, { headers: bearer(seeded.apiKey!) });
    assert.equal(res.status, 200, p);
    return await res.json();
  };
  const top = await get("articles?start_date=2026-10-24&end_date=2026-11-22&limit=500");
  assert.ok(top.articles.length >= 10);
  for (const a of top.articles) {
    assert.ok(a.title.length > 0, `a real article: ${a.url}`);
    assert.ok(a.clicks <= a.impressions, `${a.url}: ${a.clicks} clicks, ${a.impressions} impressions`);
  }
  assert.ok(top.articles[0].clicks > 0);
  assert.ok(top.sites.length >= 3);
  const agents = await get("agents?start_date=2026-10-24&end_date=2026-11-22");
  const names = agents.agents.map((a: { agent_identity: string }) => a.agent_identity).sort();
  assert.deepEqual(names, [
    "mcp",
    "payproxy:ag_travelplanner01",
    "payproxy:newsbrief-agent",
    "zeroclick:shopping-helper",
  ]);
  for (const a of agents.agents) {
    assert.ok(a.searches > 0 && a.answers > 0 && a.results_surfaced > 0, a.agent_identity);
    assert.ok(a.clicks <= a.results_surfaced);
  }
  // A few readers are active right now.
  const live = await get("realtime");
  assert.ok(live.last_30_minutes.active_sessions >= 3, JSON.stringify(live));
  // The widget traffic is still the demo's 30 days.
  const askAi = await get("ask-ai?start_date=2026-10-24&end_date=2026-11-22");
  assert.ok(askAi.daily_breakdown.every((d: { sessions: number }) => d.sessions > 0));
});

Deno.test("recoverCompactions() finishes a compaction that crashed after writing the merged file", async () => {
  await using w = await createTestWorld();
  const { deps } = w;
  for (let i = 0; i < 3; i++) {
    await deps.events.record([{ event_id: `cmp-${i}-000001`, event_type: "widget_load", tenant_id: "tn_x" }]);
    await deps.events.flush();
  }
  const dir = `${deps.analytics.eventsDir}/date=2026-11-22`;
  const inputs = (await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]!);
  const backup = await Deno.makeTempDir();
  for (const f of inputs) await Deno.copyFile(`${dir}/${f}`, `${backup}/${f}`);
  await compactDay({ kv: deps.kv, db: deps.duckdb, clock: w.clock }, deps.analytics.eventsDir, "2026-11-22", 2);
  const merged = (await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]!);
  assert.equal(merged.length, 1);
  // Re-create the crash state: manifest "written", merged file still under .tmp, inputs present.
  const output = merged[0]!;
  await Deno.rename(`${dir}/${output}`, `${dir}/${output}.tmp`);
  for (const f of inputs) await Deno.copyFile(`${backup}/${f}`, `${dir}/${f}`);
  await Deno.remove(backup, { recursive: true });
  await deps.kv.set(["ev_compaction", "2026-11-22"], { date: "2026-11-22", output, inputs, state: "written" });
  await recoverCompactions(deps.kv, deps.analytics.eventsDir);
  assert.deepEqual((await parquetFiles(deps.analytics.eventsDir)).map((f) => f.split("/")[1]), [output]);
  const counts = await parquetIdCounts(deps.duckdb, deps.analytics.eventsDir);
  assert.equal(counts.size, 3);
  assert.equal((await deps.kv.get(["ev_compaction", "2026-11-22"])).value, null);
});
