import assert from "node:assert/strict";
import type { Article } from "../../core/search/store/articles.ts";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { DataModelIndex } from "../../core/search/index/index.ts";
import { IvfIndex } from "../../core/search/index/ivf.ts";
import { quantize, VectorIndex } from "../../core/search/index/vector_index.ts";
import { terms } from "../../core/search/text/tokenizer.ts";
import { prng } from "../../fixtures/prng.ts";

const DIMS = 32;

/** A seeded corpus of topical vectors: `topics` random centres, each row a centre plus noise, stored as int8. */
function corpus(rows: number, topics: number, seed: number): Float32Array[] {
  const rand = prng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: topics }, () => Float32Array.from({ length: DIMS }, gauss));
  return Array.from({ length: rows }, () => {
    const c = centres[Math.floor(rand() * topics)]!;
    const v = Float32Array.from(c, (x) => x + 0.8 * gauss());
    // What the service indexes: the int8 form it stores.
    const { q, scale } = quantize(v);
    return Float32Array.from(q, (x) => x * scale);
  });
}

const article = (i: number, title = `story ${i}`): Article => ({
  id: `ar_${i}`,
  dataModelId: "dm_ann",
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

function exactTop(index: VectorIndex, query: Float32Array, rows: number, k: number): number[] {
  const cos = index.scan(query, rows);
  return index.best(cos, k)!.map((e) => e.id);
}

const unit = (v: Float32Array) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v, (x) => x / n);
};

Deno.test("IvfIndex.search() finds at least 95 % of the exact scan's top 50 on a seeded topical corpus", async () => {
  // Queries from the same topics as the rows, held out from the index.
  const all = corpus(20_050, 60, 7), rows = all.slice(0, 20_000);
  const source = new VectorIndex(DIMS, rows.length, { helper: null });
  rows.forEach((v, i) => source.set(i, v));
  const ivf = await IvfIndex.build(source, rows.length, null, { lists: 64, probes: 6 });
  assert.equal(ivf.rows, rows.length);
  const queries = all.slice(20_000).map(unit);
  let found = 0, asked = 0;
  for (const q of queries) {
    const exact = new Set(exactTop(source, q, rows.length, 50));
    const approx = ivf.search(q, 50)!;
    assert.equal(approx.length, 50);
    for (const e of approx) if (exact.has(e.id)) found++;
    asked += 50;
    // The scores are the exact scan's cosines of those rows (same int8 rows, same kernel).
    const cos = source.scan(q, rows.length);
    for (const e of approx) assert.ok(Math.abs(e.score - cos[e.id]!) < 1e-5);
  }
  assert.ok(found / asked >= 0.95, `recall@50 ${found / asked}`);
});

Deno.test("IvfIndex with every list probed returns exactly the exact scan's top k", async () => {
  const rows = corpus(3_000, 20, 3);
  const source = new VectorIndex(DIMS, rows.length, { helper: null });
  rows.forEach((v, i) => source.set(i, v));
  const ivf = await IvfIndex.build(source, rows.length, null, { lists: 16, probes: 16 });
  for (const q of corpus(10, 20, 5).map(unit)) {
    assert.deepEqual(ivf.search(q, 20)!.map((e) => e.id), exactTop(source, q, rows.length, 20));
  }
});

Deno.test("DataModelIndex with an ANN: new, replaced and removed articles reach it, before and after a rebuild", async () => {
  const rows = corpus(4_000, 30, 11);
  const index = new DataModelIndex("dm_ann", DIMS, { ann: { minRows: 1_000 } });
  await index.bulkLoad(() => {
    for (let i = 0; i < rows.length; i++) index.upsert(article(i), rows[i]!);
    return Promise.resolve();
  });
  await index.annReady();
  assert.ok(index.annStatus, "the ANN is in use");
  assert.equal(index.annStatus!.rows, rows.length);
  const probe = unit(Float32Array.from({ length: DIMS }, (_, j) => (j % 3 === 0 ? 1 : -0.5)));
  const query = { bag: new Map<string, number>(), vector: probe };
  const scans = { ...index.vectors.scanPaths };
  index.hybrid(query, { k: 5 });
  assert.equal(index.vectors.scanPaths.ivf, scans.ivf + 1, "the IVF index answered, counted");
  assert.equal(index.vectors.scanPaths.simd, scans.simd, "without a full scan");
  // A new article along the query is its best match at once.
  const slot = index.upsert(article(9_001, "fresh"), probe);
  let top = index.hybrid(query, { k: 5 });
  assert.equal(top[0]!.slot, slot);
  assert.ok(Math.abs(top[0]!.cosine - 1) < 1e-3);
  // Replaced by a vector pointing away, it is no longer the best; removed, it is gone.
  const replaced = index.upsert(article(9_001, "fresh"), Float32Array.from(probe, (x) => -x));
  top = index.hybrid(query, { k: 5 });
  assert.notEqual(index.cards[top[0]!.slot]!.id, "ar_9001");
  const again = index.upsert(article(9_002, "again"), probe);
  assert.equal(index.hybrid(query, { k: 1 })[0]!.slot, again);
  index.removeSlots([again]);
  assert.ok(index.hybrid(query, { k: 50 }).every((c) => c.slot !== again && c.slot !== replaced || c.cosine < 0.99));
  assert.ok(index.hybrid(query, { k: 50 }).every((c) => index.cards[c.slot]!.id !== "ar_9002"));
  // Doubling the index rebuilds the ANN in the background; the article added meanwhile is found.
  const builds = index.annBuilds;
  for (let i = 0; i < rows.length + 10; i++) index.upsert(article(10_000 + i), rows[i % rows.length]!);
  const during = index.upsert(article(20_000, "during"), probe);
  await index.annReady();
  assert.equal(index.annBuilds, builds + 1);
  assert.equal(index.hybrid(query, { k: 1 })[0]!.slot, during);
});

Deno.test("DataModelIndex with an ANN ranks like the exact scan and explains with exact cosines", async () => {
  const rows = corpus(6_000, 40, 21);
  const words = ["storm", "budget", "ferry", "harbour", "council", "vote", "flood", "tennis"];
  const titles = rows.map((_, i) => `${words[i % 8]} ${words[(i * 7 + 3) % 8]} report`);
  const make = (ann: boolean) => new DataModelIndex("dm_ann", DIMS, { ann: ann ? { minRows: 1_000 } : null });
  const approx = make(true), exact = make(false);
  for (const index of [approx, exact]) {
    await index.bulkLoad(() => {
      for (let i = 0; i < rows.length; i++) index.upsert(article(i, titles[i]), rows[i]!);
      return Promise.resolve();
    });
    await index.annReady();
  }
  assert.ok(approx.annStatus && !exact.annStatus);
  let same = 0, total = 0;
  for (const [i, v] of corpus(20, 40, 77).entries()) {
    const query = { bag: Bm25Index.bag(terms(`${words[i % 8]} report`)), vector: unit(v) };
    const cos = approx.rankingCosines(query.vector);
    const a = approx.hybrid(query, { k: 10, cos });
    const e = exact.hybrid(query, { k: 10 });
    const want = new Set(e.map((c) => c.slot));
    same += a.filter((c) => want.has(c.slot)).length;
    total += e.length;
    // Every returned slot's cosine is in the array an explanation reads, and it is the exact one.
    const full = exact.cosines(query.vector);
    for (const c of a) assert.ok(Math.abs(cos[c.slot]! - full[c.slot]!) < 1e-4);
    // Slots a ranking took from elsewhere (trending's keyword matches) get theirs on demand.
    const others = [i * 37, i * 37 + 1, 5_999 - i];
    approx.ensureCosines(cos, others, query.vector);
    for (const s of others) assert.ok(Math.abs(cos[s]! - full[s]!) < 1e-4);
  }
  assert.ok(same / total >= 0.95, `overlap@10 ${same / total}`);
});

Deno.test("DataModelIndex with an ANN falls back to the exact scan under a narrow filter", async () => {
  const rows = corpus(3_000, 20, 5);
  const approx = new DataModelIndex("dm_ann", DIMS, { ann: { minRows: 1_000 } });
  const exact = new DataModelIndex("dm_ann", DIMS, { ann: null });
  for (const index of [approx, exact]) {
    await index.bulkLoad(() => {
      for (let i = 0; i < rows.length; i++) index.upsert(article(i), rows[i]!);
      return Promise.resolve();
    });
    await index.annReady();
  }
  const allow = (s: number) => s % 97 === 0; // 31 rows: fewer than the 50 candidates a side takes
  const query = { bag: new Map<string, number>(), vector: unit(rows[5]!) };
  const a = approx.hybrid(query, { k: 10, allow }).map((c) => c.slot);
  const e = exact.hybrid(query, { k: 10, allow }).map((c) => c.slot);
  assert.deepEqual(a, e);
  assert.ok(a.every(allow));
});
