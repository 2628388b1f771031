import assert from "node:assert/strict";
import { runAdmin } from "../../cli/commands.ts";
import { bearer, engineOf } from "../_helpers.ts";
import { mcpWorld } from "../mcp/_world.ts";
import { RetentionSweeper } from "../../core/search/store/retention.ts";
import { hoursAgo, search } from "../search/_world.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("retention: old articles leave search at once, then the index and KV on the sweep", async () => {
  await using w = await sourcesWorld();
  const day = 24;
  const report = await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/old", title: "Old flood barrier story", pubdate: hoursAgo(w, 40 * day) },
    { url: "https://alpha.example/new", title: "New flood barrier story", pubdate: hoursAgo(w, 2 * day) },
  ]);
  assert.equal(report.created, 2);
  const put = await w.api("/retention", { method: "PUT", body: { max_age_days: 30 } });
  assert.equal(put.status, 200);
  assert.deepEqual(await put.json(), { max_age_days: 30 });
  assert.equal((await w.api("/retention", { method: "PUT", body: { max_age_days: 0 } })).status, 422);

  for (const algorithm of ["semantic", "most_recent", "trending", "most_recent_semantic"]) {
    const r = await search(w, { query: "flood barrier", search_algorithm: algorithm });
    assert.deepEqual(
      r.json.response.results.map((x: { title: string }) => x.title),
      ["New flood barrier story"],
      algorithm,
    );
  }
  // Items older than the retention are not ingested again (a feed replaying its archive).
  const late = await w.deps.search.ingest((await w.deps.repos.dataModels.get(w.dm.id))!, [
    { url: "https://alpha.example/older", title: "Older story", pubdate: hoursAgo(w, 31 * day) },
  ]);
  assert.equal(late.results[0]!.error, "pubdate: older than max_age_days");

  // Two processes: only the lease holder sweeps (the other learns of the deletions from the change log).
  const sweeper = (owner: string) =>
    new RetentionSweeper({
      kv: w.deps.kv,
      clock: w.clock,
      log: w.log,
      engine: w.deps.search,
      dataModels: () => w.deps.repos.dataModels.listAll(),
      dataModel: (id) => w.deps.repos.dataModels.get(id),
      owner,
    }, { intervalMs: 3600_000, leaseMs: 60_000 });
  await w.deps.kv.set(["retention_lease", w.dm.id], { owner: "other", until: w.clock.now().getTime() + 60_000 });
  const skipped = await sweeper("me").sweep();
  assert.deepEqual(skipped, [{ dataModelId: w.dm.id, deleted: 0, trimmed: 0 }]);
  assert.equal(await w.deps.search.count(w.dm.id), 2, "searches filter it; the holder deletes it");
  assert.ok(await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/old"), "still in KV");

  w.clock.advance(60_000);
  const deleted = await sweeper("me").sweep();
  assert.deepEqual(deleted, [{ dataModelId: w.dm.id, deleted: 1, trimmed: 0 }]);
  assert.equal(await w.deps.search.count(w.dm.id), 1);
  assert.equal(await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/old"), null);
  await engineOf(w.deps).registry.rebuild(w.dm.id);
  assert.equal(await w.deps.search.count(w.dm.id), 1);
  // The change log is trimmed by the same sweep once its entries are older than its retention.
  w.clock.advance(2 * 3_600_000);
  const trimmed = await sweeper("me").sweep();
  assert.deepEqual(trimmed, [{ dataModelId: w.dm.id, deleted: 0, trimmed: 3 }]);
  // Search without retention set would still not find it: it is gone.
  await w.api("/retention", { method: "PUT", body: { max_age_days: null } });
  const r = await search(w, { query: "old flood barrier" });
  assert.deepEqual(r.json.response.results.map((x: { title: string }) => x.title), ["New flood barrier story"]);
});

Deno.test("retention: old articles leave answer retrieval at once too (answers, related questions), not only search rankings", async () => {
  await using w = await sourcesWorld();
  const day = 24;
  const report = await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/old",
      title: "Old flood barrier story",
      body: "The flood barrier was closed.",
      pubdate: hoursAgo(w, 40 * day),
    },
    {
      url: "https://alpha.example/new",
      title: "New flood barrier story",
      body: "The flood barrier was opened.",
      pubdate: hoursAgo(w, 2 * day),
    },
  ]);
  assert.equal(report.created, 2);
  assert.equal((await w.deps.search.retrieve([w.dm.id], "flood barrier", { k: 5 })).length, 2);
  assert.equal((await w.api("/retention", { method: "PUT", body: { max_age_days: 30 } })).status, 200);
  // Before any sweep: the retention bound holds for retrieval as for every ranking.
  const found = await w.deps.search.retrieve([w.dm.id], "flood barrier", { k: 5 });
  assert.deepEqual(found.map((a) => a.title), ["New flood barrier story"]);
});

Deno.test("retention: an article past max_age_days stops counting in /categories and MCP list_data_models as the clock passes its cut-off, before any sweep", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const ago = (h: number) => new Date(w.clock.now().getTime() - h * 3_600_000).toISOString();
  const report = await w.deps.search.ingest(dm, [
    { url: "https://alpha.example/a", title: "Tide tables", categories: ["Harbour"], pubdate: ago(30 * 24 - 1) },
    {
      url: "https://alpha.example/b",
      title: "Ferry times",
      categories: ["Harbour", "Transport"],
      pubdate: ago(29 * 24),
    },
    { url: "https://alpha.example/c", title: "Bus lanes", categories: ["Transport"], pubdate: ago(2) },
  ]);
  assert.equal(report.failed, 0);
  await w.deps.repos.dataModels.update({ ...dm, maxAgeDays: 30 });
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const counts = async () => {
    const res = await w.app.request(`/v1/data-models/${dm.id}/categories`, { headers: bearer(w.apiKey) });
    assert.equal(res.status, 200);
    const rest = (await res.json()).categories;
    const listed = await client.callTool({ name: "list_data_models", arguments: {} });
    // deno-lint-ignore no-explicit-any
    const entry = (listed.structuredContent as any).data_models.find((m: { id: string }) => m.id === dm.id);
    return { rest, mcp: entry.top_categories };
  };
  const both = (categories: { category: string; count: number }[]) => ({ rest: categories, mcp: categories });
  assert.deepEqual(await counts(), both([{ category: "Harbour", count: 2 }, { category: "Transport", count: 2 }]));

  // "Tide tables" passes its cut-off (30 days) in an hour; no sweep runs.
  w.clock.advance(2 * 3_600_000);
  assert.deepEqual(await counts(), both([{ category: "Transport", count: 2 }, { category: "Harbour", count: 1 }]));
  // Two more days: "Ferry times" too.
  w.clock.advance(2 * 86_400_000);
  assert.deepEqual(await counts(), both([{ category: "Transport", count: 1 }]));
  // A longer retention keeps them again (nothing was deleted yet).
  await w.deps.repos.dataModels.update({ ...dm, maxAgeDays: 60 });
  assert.deepEqual(await counts(), both([{ category: "Harbour", count: 2 }, { category: "Transport", count: 2 }]));
});

Deno.test("retention: a sweep deletes by the retention in force when it takes the lease, not by its round's older list", async () => {
  await using w = await sourcesWorld();
  await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/old", title: "Old flood barrier story", pubdate: hoursAgo(w, 40 * 24) },
  ]);
  assert.equal((await w.api("/retention", { method: "PUT", body: { max_age_days: 30 } })).status, 200);
  const sweeper = new RetentionSweeper({
    kv: w.deps.kv,
    clock: w.clock,
    log: w.log,
    engine: w.deps.search,
    dataModels: async () => {
      const listed = await w.deps.repos.dataModels.listAll();
      // The round has its list; before it reaches this data model the operator keeps it forever.
      assert.equal((await w.api("/retention", { method: "PUT", body: { max_age_days: null } })).status, 200);
      return listed;
    },
    dataModel: (id) => w.deps.repos.dataModels.get(id),
  }, { intervalMs: 3600_000, leaseMs: 60_000 });
  assert.deepEqual(await sweeper.sweep(), [{ dataModelId: w.dm.id, deleted: 0, trimmed: 0 }]);
  assert.ok(await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/old"), "kept, as now configured");
  const r = await search(w, { query: "old flood barrier" });
  assert.deepEqual(r.json.response.results.map((x: { title: string }) => x.title), ["Old flood barrier story"]);
});

Deno.test("PUT retention concurrent with a licence change keeps both (neither write undoes the other)", async () => {
  await using w = await sourcesWorld();
  for (let round = 0; round < 10; round++) {
    const days = 30 + round;
    const license = round % 2 === 0 ? "full_text" : "summary";
    const [put] = await Promise.all([
      w.api("/retention", { method: "PUT", body: { max_age_days: days } }),
      runAdmin(w.deps, ["data-model", "license", "--data-model", w.dm.id, "--license", license]),
    ]);
    assert.equal(put.status, 200, `round ${round}`);
    const saved = (await w.deps.repos.dataModels.get(w.dm.id))!;
    assert.equal(saved.maxAgeDays, days, `round ${round}: the retention stuck`);
    assert.equal(saved.license, license, `round ${round}: the licence stuck`);
  }
});
