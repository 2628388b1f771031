import assert from "node:assert/strict";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { demoArticles, generateArticles } from "../../fixtures/articles.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

Deno.test("generateArticles() is deterministic, spread over 60 days, with a burst in the last 24 hours", () => {
  const now = new Date("2026-11-22T12:00:00Z");
  const a = generateArticles({ count: 2000, now, seed: 3 });
  assert.deepEqual(a, generateArticles({ count: 2000, now, seed: 3 }));
  assert.notDeepEqual(a.slice(0, 5), generateArticles({ count: 5, now, seed: 4 }));
  const ages = a.map((x) => (now.getTime() - Date.parse(x.pubdate)) / 86_400_000);
  assert.ok(Math.min(...ages) >= 0 && Math.max(...ages) <= 60);
  assert.ok(Math.max(...ages) > 50);
  assert.equal(new Set(a.map((x) => x.url)).size, a.length);
  assert.ok(new Set(a.map((x) => x.site_domain)).size >= 5);
  assert.ok(new Set(a.map((x) => x.author)).size >= 10);
  const fresh = a.filter((x) => now.getTime() - Date.parse(x.pubdate) < 86_400_000);
  const storm = fresh.filter((x) => x.story === "coastal storm").length;
  assert.ok(storm > fresh.length / 2, `${storm} of ${fresh.length}`);
});

Deno.test("the demo seed step ingests a few hundred articles per demo data model, searchable at once", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [seedDemoArticles]);
  const { news, tech } = demoArticles(w.clock.now());
  assert.equal(await w.deps.search.count(seeded.ids.dataModelId), news.length);
  assert.equal(await w.deps.search.count(seeded.ids.secondDataModelId), tech.length);
  const res = await w.app.request(`/app/v2/search?data_model_id=${seeded.ids.dataModelId}`, {
    method: "POST",
    headers: { ...bearer(seeded.apiKey!), "content-type": "application/json" },
    body: JSON.stringify({ query: "coastal storm flooding", search_algorithm: "trending", similarity_top_k: 3 }),
  });
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body.response.results.length, 3);
  assert.match(body.response.message, /trending keywords: .*storm/);
});
