import assert from "node:assert/strict";
import { LocalEmbeddings } from "../../core/search/embeddings/wink.ts";
import { evaluate, formatReport, loadBeir, ndcgAt, recallAt } from "../../cli/eval.ts";
import { SHARED_EMBEDDINGS_CACHE } from "../_basics.ts";

Deno.test("ndcgAt() and recallAt() follow the BEIR definitions", () => {
  const rels = new Map([["a", 2], ["b", 1], ["z", 0]]);
  assert.equal(ndcgAt(["a", "b", "c"], rels, 10), 1);
  const swapped = ndcgAt(["b", "a"], rels, 10);
  const expected = (1 + 3 / Math.log2(3)) / (3 + 1 / Math.log2(3));
  assert.ok(Math.abs(swapped - expected) < 1e-12);
  assert.equal(ndcgAt(["c"], rels, 10), 0);
  assert.equal(recallAt(["c", "b"], rels, 100), 0.5);
  assert.equal(recallAt(["b"], new Map(), 100), 0);
});

Deno.test("ndcgAt() on a hand-computed ranking: 2.5 / (3 + 1/log2 3) = 0.68853", () => {
  // Ranked b (gain 2^1-1 = 1 at rank 1), x (0), a (gain 2^2-1 = 3 at rank 3, discount log2 4 = 2):
  // DCG = 1 + 0 + 1.5 = 2.5. Ideal a, b: 3 + 1/log2 3 = 3.63093. nDCG = 0.68853.
  const rels = new Map([["a", 2], ["b", 1]]);
  assert.equal(ndcgAt(["b", "x", "a"], rels, 10).toFixed(5), "0.68853");
  // Cut at k = 2: a falls out, DCG = 1.
  assert.equal(ndcgAt(["b", "x", "a"], rels, 2).toFixed(5), (1 / 3.6309298).toFixed(5));
});

Deno.test("evaluate() on the tiny BEIR fixture: vector and hybrid beat BM25 on paraphrased queries", async () => {
  const data = await loadBeir(new URL("../../fixtures/beir-tiny", import.meta.url).pathname);
  assert.equal(data.corpus.length, 24);
  assert.equal(data.queries.length, 10);
  const scores = await evaluate(data, new LocalEmbeddings({ cachePath: SHARED_EMBEDDINGS_CACHE }));
  for (const m of ["bm25", "vector", "hybrid"] as const) {
    assert.ok(scores[m].ndcg10 >= 0 && scores[m].ndcg10 <= 1);
    assert.ok(scores[m].recall100 >= 0 && scores[m].recall100 <= 1);
  }
  assert.ok(scores.hybrid.ndcg10 > scores.bm25.ndcg10);
  assert.ok(scores.vector.ndcg10 > 0.8, String(scores.vector.ndcg10));
  assert.ok(scores.hybrid.recall100 >= 0.9, String(scores.hybrid.recall100));
  assert.ok(scores.p50Ms > 0);
  // Each query's figures, in the queries' order, average to the method's.
  assert.deepEqual(scores.perQuery!.map((q) => q.id), data.queries.map((q) => q.id));
  for (const m of ["bm25", "vector", "hybrid"] as const) {
    const mean = scores.perQuery!.reduce((s, q) => s + q[m], 0) / data.queries.length;
    assert.ok(Math.abs(mean - scores[m].ndcg10) < 1e-12, m);
  }
  const report = formatReport(data, scores, "beir-tiny");
  assert.match(
    report,
    /^beir-tiny: corpus 24 documents, 10 queries with qrels\nmethod +nDCG@10 +recall@100\nbm25 +0\.\d{4} +0\.\d{4}/,
  );
});

Deno.test("deno task eval prints the three methods per folder and their mean, and writes --json", async () => {
  const json = await Deno.makeTempFile({ suffix: ".json" });
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "cli/eval.ts",
      "fixtures/beir-tiny",
      "fixtures/beir-tiny/",
      "--json",
      json,
    ],
    cwd: new URL("../..", import.meta.url).pathname,
    env: { EMBEDDINGS_CACHE_PATH: SHARED_EMBEDDINGS_CACHE },
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  for (const m of ["bm25", "vector", "hybrid"]) {
    assert.match(text, new RegExp(`^${m} +\\d\\.\\d{4} +\\d\\.\\d{4}$`, "m"));
  }
  assert.match(text, /^mean +\d\.\d{4} +\d\.\d{4} +\d\.\d{4} +\d+\.\d{2}$/m);
  const written = JSON.parse(await Deno.readTextFile(json));
  await Deno.remove(json);
  assert.equal(written.collections.length, 2);
  assert.equal(written.mean.hybrid.ndcg10, written.collections[0].scores.hybrid.ndcg10, "the mean of two equal runs");
  assert.match(written.provider, /^wink-sg-100d@/);
});

Deno.test("loadBeir(): the shipped collections load whole, and every judged document is in its corpus", async () => {
  const expected = { cisi: [1460, 76], cranfield: [1400, 225], cacm: [3204, 52] } as const;
  for (const [name, [documents, judgedQueries]] of Object.entries(expected)) {
    const data = await loadBeir(new URL(`../../fixtures/beir/${name}`, import.meta.url).pathname);
    assert.equal(data.corpus.length, documents, name);
    assert.equal(data.queries.length, judgedQueries, name);
    assert.ok(data.queries.every((q) => q.text.length > 0), `${name}: every query has text`);
    const ids = new Set(data.corpus.map((d) => d.id));
    assert.equal(ids.size, documents, `${name}: document ids are unique`);
    for (const [q, rels] of data.qrels) {
      for (const [d, gain] of rels) assert.ok(ids.has(d) && gain >= 1, `${name}: ${q} judges ${d} (${gain})`);
    }
  }
});
