import assert from "node:assert/strict";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { ARTICLE_FIELDS, BM25_K1 } from "../../core/search/index/index.ts";
import { prng } from "../../fixtures/prng.ts";

/** 3,000 documents over a Zipf-like vocabulary: a few very common terms, many rare ones. */
function corpus(seed: number) {
  const rand = prng(seed);
  const vocab = Array.from({ length: 400 }, (_, i) => `w${i}`);
  const pick = () => vocab[Math.floor(vocab.length * rand() ** 3)]!;
  const index = new Bm25Index({ k1: BM25_K1, fields: ARTICLE_FIELDS });
  const bags: Map<string, number[]>[] = [];
  for (let d = 0; d < 3000; d++) {
    const fields = [3, 12, 60].map((len) => Array.from({ length: 1 + Math.floor(rand() * len) }, pick));
    const bag = Bm25Index.fieldBag(fields);
    bags.push(bag);
    index.add(d, bag);
  }
  return { index, bags, vocab };
}

/** The reference: every document scored, sorted best first (lower slot first on ties), cut at k. */
function exhaustive(index: Bm25Index, query: Map<string, number>, k: number, allow?: (s: number) => boolean) {
  const all = index.score(query, allow);
  return [...all.slots].map((s, i) => ({ s, x: all.scores[i]! })).sort((a, b) => b.x - a.x || a.s - b.s).slice(0, k);
}

function assertSameTop(index: Bm25Index, query: Map<string, number>, k: number, allow?: (s: number) => boolean) {
  const want = exhaustive(index, query, k, allow);
  const got = index.top(query, k, allow);
  const label = `${[...query.keys()].join(" ")} k=${k}${allow ? " filtered" : ""}`;
  assert.equal(got.slots.length, want.length, label);
  const all = index.score(query, allow);
  const exact = new Map([...all.slots].map((s, i) => [s, all.scores[i]!]));
  for (let i = 0; i < want.length; i++) {
    // Same scores in the same order (summed in another term order: equal to float rounding), each
    // the document's own full score.
    assert.ok(Math.abs(got.scores[i]! - want[i]!.x) < 1e-4, `${label}: #${i} ${got.scores[i]} vs ${want[i]!.x}`);
    assert.ok(Math.abs(got.scores[i]! - exact.get(got.slots[i]!)!) < 1e-4, `${label}: slot ${got.slots[i]} full score`);
  }
}

Deno.test("Bm25Index.top() returns exactly the best k of scoring every posting, with and without a prefilter", () => {
  const { index, vocab } = corpus(17);
  const rand = prng(4);
  // Rare and common terms together (the pruned case), common terms only, one term, unknown terms.
  const queries = [
    ["w0", "w1", "w350"],
    ["w2", "w300", "w399", "w5"],
    ["w0", "w1", "w2"],
    ["w120"],
    ["w0", "nope"],
    ...Array.from(
      { length: 20 },
      () => Array.from({ length: 2 + Math.floor(rand() * 4) }, () => vocab[Math.floor(rand() * 400)]!),
    ),
  ];
  for (const terms of queries) {
    const query = Bm25Index.bag(terms);
    for (const k of [1, 5, 10, 50, 400, 5000]) assertSameTop(index, query, k);
    assertSameTop(index, query, 10, (s) => s % 3 !== 0);
  }
  assert.equal(index.top(Bm25Index.bag(["nope"]), 5).slots.length, 0);
  assert.equal(index.top(Bm25Index.bag(["w0"]), 0).slots.length, 0);
});

Deno.test("Bm25Index.top() stays exact after documents are removed, retired and reused out of slot order, and with weighted terms", () => {
  const { index, bags } = corpus(23);
  const queries = [["w0", "w1", "w250"], ["w3", "w390"], ["w0", "w7", "w150", "w151"]];
  const check = () => {
    for (const terms of queries) for (const k of [3, 10, 50]) assertSameTop(index, Bm25Index.bag(terms), k);
  };
  // Re-adding a low slot appends it after higher ones: top() must put the postings back in order.
  for (const d of [5, 900, 17, 2500, 42]) {
    index.remove(d, bags[d]!);
    index.add(d, bags[(d * 7) % 3000]!);
  }
  check();
  // Retired documents keep their postings until compact(), but are never returned.
  for (let d = 100; d < 400; d++) index.retire(d);
  check();
  assert.ok(!index.top(Bm25Index.bag(["w0"]), 3000).slots.some((s) => s >= 100 && s < 400));
  // Freed slots take new documents below the highest slot.
  const freed = index.compact();
  assert.equal(freed.length, 300);
  for (const d of freed.slice(0, 150)) index.add(d, bags[(d * 13) % 3000]!);
  check();
  // Trend-style weights; a weight that is not positive gives no bound: scored in full.
  assertSameTop(index, new Map([["w0", 0.2], ["w200", 3]]), 10);
  assertSameTop(index, new Map([["w0", 1], ["w200", -1]]), 10);
});
