/**
 * Retention on reads that go through no ranking: an article past its data model's max age is not
 * found by URL (MCP `get_article`, REST `/article`) and not counted by `articles count`, before the
 * sweep deletes it, exactly as every ranking already leaves it out.
 */
import assert from "node:assert/strict";
import { runAdmin } from "../../cli/commands.ts";
import { bearer } from "../_helpers.ts";
import { mcpWorld } from "../mcp/_world.ts";

Deno.test("retention: an expired article is not found by get_article (MCP and REST) nor counted by `articles count`, before any sweep", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const ago = (h: number) => new Date(w.clock.now().getTime() - h * 3_600_000).toISOString();
  const report = await w.deps.search.ingest(dm, [
    { url: "https://alpha.example/tides", title: "Tide tables", body: "High tide at noon.", pubdate: ago(30 * 24 - 1) },
    { url: "https://alpha.example/ferry", title: "Ferry times", body: "Ferries every hour.", pubdate: ago(2) },
  ]);
  assert.equal(report.failed, 0);
  await w.deps.repos.dataModels.update({ ...dm, maxAgeDays: 30 });
  const before = (await runAdmin(w.deps, ["articles", "count", "--data-model", dm.id])) as { articles: number };
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const getArticle = (url: string) =>
    client.callTool({ name: "get_article", arguments: { data_model_id: dm.id, url } });
  const rest = async (url: string) => {
    const res = await w.app.request(`/v1/data-models/${dm.id}/article?url=${encodeURIComponent(url)}`, {
      headers: bearer(w.apiKey),
    });
    const body = await res.json();
    delete body.request_id;
    return { status: res.status, body };
  };
  const served = await getArticle("https://alpha.example/tides");
  assert.equal(served.isError, undefined, JSON.stringify(served.content));
  assert.equal((await rest("https://alpha.example/tides")).status, 200);
  assert.ok(before.articles >= 2, "the world's own articles and these two");

  // "Tide tables" passes its 30-day cut-off in an hour; no sweep runs, so it is still stored.
  w.clock.advance(2 * 3_600_000);
  assert.ok(await w.deps.search.articleByUrl(dm.id, "https://alpha.example/tides"), "still in KV");
  const missing = await getArticle("https://alpha.example/never-published");
  assert.equal(missing.isError, true);
  assert.deepEqual(await getArticle("https://alpha.example/tides"), missing, "the same answer as a missing article");
  const restMissing = await rest("https://alpha.example/never-published");
  assert.equal(restMissing.status, 404);
  assert.deepEqual(await rest("https://alpha.example/tides"), restMissing);
  assert.equal((await getArticle("https://alpha.example/ferry")).isError, undefined);
  assert.deepEqual(await runAdmin(w.deps, ["articles", "count", "--data-model", dm.id]), {
    dataModelId: dm.id,
    articles: before.articles - 1,
  });
});
