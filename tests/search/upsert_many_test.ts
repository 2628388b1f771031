import assert from "node:assert/strict";
import { engineOf } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

Deno.test("ingest of many articles: batched commits keep ids of known URLs and create the rest", async () => {
  await using w = await searchWorld();
  const item = (i: number, title: string) => ({ url: `https://alpha.example/n/${i}`, title, body: `Story ${i}.` });
  const first = await w.deps.search.ingest(w.dm, Array.from({ length: 10 }, (_, i) => item(i * 5, `Early ${i}`)));
  assert.equal(first.created, 10);
  const ids = new Map(first.results.map((r) => [r.url, r.id]));
  // 50 items over two commits (at most 48 articles each): every fifth URL is known.
  const report = await w.deps.search.ingest(w.dm, Array.from({ length: 50 }, (_, i) => item(i, `Late ${i}`)));
  assert.equal(report.created, 40);
  assert.equal(report.updated, 10);
  for (const r of report.results) {
    if (ids.has(r.url)) assert.equal(r.id, ids.get(r.url), "a known URL keeps its id");
  }
  assert.equal(await w.deps.search.count(w.dm.id), 50);
  const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/n/45");
  assert.equal(stored!.title, "Late 45");
});

Deno.test("ingest of many large articles: commits close by size under KV's limit and log every article", async () => {
  await using w = await searchWorld();
  // 20,000-character bodies (the most kept): about 40 KB each, so about ten per commit.
  const body = "The tide rose over the harbour wall. ".repeat(600);
  const report = await w.deps.search.ingest(
    w.dm,
    Array.from({ length: 60 }, (_, i) => ({ url: `https://alpha.example/big/${i}`, title: `Big ${i}`, body })),
  );
  assert.equal(report.created, 60);
  assert.equal(await w.deps.search.count(w.dm.id), 60);
  const seqs: number[] = [];
  for await (const e of w.deps.kv.list({ prefix: ["article_change", w.dm.id] })) seqs.push(e.key[2] as number);
  assert.deepEqual(seqs, Array.from({ length: 60 }, (_, i) => i + 1));
  const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/big/59");
  assert.ok(stored!.terms, "the terms are stored with the article");
});

Deno.test("ArticleRepo.list() streams every article across batches, in key order", async () => {
  await using w = await searchWorld();
  const report = await w.deps.search.ingest(
    w.dm,
    Array.from({ length: 7 }, (_, i) => ({ url: `https://alpha.example/p/${i}`, title: `Page ${i}` })),
  );
  const ids = report.results.map((r) => r.id!).sort();
  for (const batchSize of [1, 2, 3, 7, 500]) {
    const listed: string[] = [];
    for await (const a of engineOf(w.deps).articles.list(w.dm.id, batchSize)) listed.push(a.id);
    assert.deepEqual(listed, ids, `batch size ${batchSize}`);
  }
});
