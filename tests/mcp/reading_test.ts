/**
 * What agents read over MCP with a tenant key: highlights and filters on search_articles, the
 * get_article tool, data models' top categories in list_data_models, and follow-up turns on ask.
 */
import assert from "node:assert/strict";
import { mcpWorld } from "./_world.ts";

// deno-lint-ignore no-explicit-any
type Structured = any;

Deno.test("MCP (tenant key): search_articles highlights, get_article full text, top categories, ask follow-ups", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const r = await w.deps.search.ingest(dm, [{
    url: "https://alpha.example/parks",
    title: "Parks get new playgrounds",
    body_html: "<h2>Playgrounds</h2><p>The council will build six playgrounds.</p><ul><li>North park</li></ul>",
    categories: ["Local", "Parks"],
  }]);
  assert.equal(r.failed, 0);
  const client = await w.connect(`Bearer ${w.apiKey}`);

  const found = await client.callTool({
    name: "search_articles",
    arguments: {
      data_model_id: dm.id,
      query: "council playgrounds",
      highlights: { max_characters: 60, per_result: 1 },
      categories: ["parks"],
    },
  });
  assert.equal(found.isError, undefined, JSON.stringify(found.content));
  const results = (found.structuredContent as Structured).response.results;
  assert.equal(results.length, 1);
  assert.equal(results[0].url, "https://alpha.example/parks");
  assert.ok(results[0].highlights[0].text.length <= 60);
  assert.match((found.content as { text: string }[])[0]!.text, /> .*playgrounds/);

  const article = await client.callTool({
    name: "get_article",
    arguments: { data_model_id: dm.id, url: "https://alpha.example/parks" },
  });
  assert.equal(article.isError, undefined, JSON.stringify(article.content));
  assert.match((article.structuredContent as Structured).text, /^## Playgrounds\n\nThe council will build/);
  assert.match((article.structuredContent as Structured).text, /^- North park$/m);

  const listed = await client.callTool({ name: "list_data_models", arguments: {} });
  const entry = (listed.structuredContent as Structured).data_models.find((m: { id: string }) => m.id === dm.id);
  assert.deepEqual(entry.top_categories.map((c: { category: string }) => c.category).sort(), ["Local", "Parks"]);

  const asked = await client.callTool({
    name: "ask",
    arguments: {
      ai_model_id: w.ids.aiModelId,
      query: "and the housing?",
      messages: [{ role: "user", content: "What did the city council decide about the budget?" }],
      explain: true,
      related_questions: true,
    },
  });
  assert.equal(asked.isError, undefined, JSON.stringify(asked.content));
  const out = asked.structuredContent as Structured;
  assert.match(out.explain.query, /housing.*\(.*council.*\)/);
  assert.equal(out.related_questions.length, 3);
});
