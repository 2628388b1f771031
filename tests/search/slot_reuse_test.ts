import assert from "node:assert/strict";
import type { Article } from "../../core/search/store/articles.ts";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { liveSince } from "../../core/search/engine.ts";
import { DataModelIndex } from "../../core/search/index/index.ts";
import { terms } from "../../core/search/text/tokenizer.ts";
import { engineOf } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

const article = (i: number, title: string): Article => ({
  id: `ar_${i}`,
  dataModelId: "dm_t",
  url: `https://alpha.example/${i}`,
  title,
  site: "Alpha",
  siteDomain: "alpha.example",
  pubdate: "2026-11-01T00:00:00.000Z",
  pubdateUnix: 1_793_491_200 + i,
  previewContent: "",
  summary: "",
  body: "",
  createdAt: "",
  updatedAt: "",
});

const hits = (index: DataModelIndex, q: string) => [...index.bm25.score(Bm25Index.bag(terms(q))).slots].sort();

Deno.test("DataModelIndex: removed slots stop scoring at once and are reused after compaction", () => {
  const index = new DataModelIndex("dm_t", 2);
  for (let i = 0; i < 8; i++) index.upsert(article(i, i % 2 ? "storm warning" : "budget vote"), Float32Array.of(1, 0));
  const removed = index.removeSlots([1, 3]);
  assert.deepEqual(removed.map((c) => c.id), ["ar_1", "ar_3"]);
  assert.deepEqual(hits(index, "storm"), [5, 7]);
  assert.equal(index.bm25.size, 6);
  assert.equal(index.liveCount, 6);
  assert.equal(index.slotOf("https://alpha.example/1"), undefined);
  // Removing again is a no-op.
  assert.deepEqual(index.removeSlots([1]), []);
  // Below the compaction threshold a new article takes a new slot.
  assert.equal(index.upsert(article(8, "harbour storm"), Float32Array.of(0, 1)), 8);
  index.compact();
  assert.equal(index.compactions, 1);
  assert.equal(index.bm25.df("storm"), 3, "the removed articles' postings are gone");
  // Freed slots are reused, lowest first; the reused slot scores only its new terms.
  assert.equal(index.upsert(article(9, "storm surge"), Float32Array.of(0, 1)), 1);
  assert.equal(index.upsert(article(10, "ferry"), Float32Array.of(0, 1)), 3);
  assert.equal(index.size, 9);
  assert.equal(index.liveCount, 9);
  assert.deepEqual(hits(index, "storm"), [1, 5, 7, 8]);
  assert.deepEqual(hits(index, "ferry"), [3]);
  const found = index.hybrid({ bag: Bm25Index.bag(terms("surge")), vector: Float32Array.of(0, 1) }, { k: 10 });
  assert.equal(index.cards[found[0]!.slot]!.id, "ar_9");
});

Deno.test("DataModelIndex: replacing articles again and again keeps the index size bounded", () => {
  const index = new DataModelIndex("dm_t", 2);
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 100; i++) index.upsert(article(i, `story ${i} round ${round}`), Float32Array.of(1, 0));
  }
  assert.equal(index.liveCount, 100);
  assert.ok(index.size <= 100 + Math.max(64, 100 / 8) + 100, `size ${index.size}`);
  assert.ok(index.compactions > 0);
  assert.deepEqual(hits(index, "round").length, 100);
});

Deno.test("retention: a continuously fed model with max_age_days reuses expired slots instead of growing", async () => {
  await using w = await searchWorld();
  const engine = engineOf(w.deps);
  const dm = { ...w.dm, maxAgeDays: 3 };
  const perDay = 100;
  for (let day = 0; day < 30; day++) {
    w.clock.advance(86_400_000);
    const items = Array.from({ length: perDay }, (_, i) => ({
      url: `https://alpha.example/d${day}/${i}`,
      title: `Day ${day} story ${i} about tides`,
      pubdate: w.clock.now().toISOString(),
    }));
    assert.equal((await engine.ingest(dm, items)).created, perDay);
    await engine.expire(dm.id, liveSince(dm, w.clock)!);
  }
  const index = await engine.registry.index(dm.id);
  // Four days live; without reuse the index would hold 30 days of slots.
  assert.equal(index.liveCount, 4 * perDay);
  assert.ok(index.size <= 6 * perDay, `index holds ${index.size} slots`);
  assert.ok(index.compactions > 0);
  const res = await engine.recommend(dm, { query: "tides", similarity_top_k: 50 }, { tenantId: dm.tenantId });
  assert.ok(res.response.results.every((r) => /^Day (2[6-9]) /.test(r.title ?? "")), "only live days are found");
});
