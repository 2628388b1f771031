import assert from "node:assert/strict";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { DataModelIndex } from "../../core/search/index/index.ts";
import { normalized } from "../../core/search/index/vector_index.ts";
import { regularizationOn, regularizeScores } from "../../core/search/rank/regularize.ts";
import {
  FUSION_V1,
  FUSION_V2,
  fusionForAlgorithm,
  retrievalFusion,
  SCORE_REGULARIZATION,
} from "../../core/search/rank/retrieval_mode.ts";
import { terms } from "../../core/search/text/tokenizer.ts";
import { indexArticle, leaningVectors } from "./_index_fixtures.ts";

const article = indexArticle;

const close = (a: number, b: number) => Math.abs(a - b) < 1e-6;

Deno.test("regularizeScores(): each of the first `top` moves toward its nearest neighbours' mean score, then re-sorts", () => {
  // a and b are alike, c is alike to neither; d is past `top` and stays last, unchanged.
  const cands = [{ id: "c", score: 1 }, { id: "a", score: 0.8 }, { id: "b", score: 0.7 }, { id: "d", score: 0.6 }];
  const sim = Float32Array.of(
    1,
    0.1,
    0.2, //  c
    0.1,
    1,
    0.9, //  a
    0.2,
    0.9,
    1, //  b
  );
  const out = regularizeScores(cands, sim, { top: 3, neighbours: 1, weight: 0.5 });
  // c: 0.5 x 1 + 0.5 x b's 0.7 = 0.85; a: 0.5 x 0.8 + 0.5 x 0.7 = 0.75; b: 0.5 x 0.7 + 0.5 x 0.8 = 0.75.
  assert.deepEqual(out.map((c) => c.id), ["c", "a", "b", "d"], "ties keep their earlier order");
  assert.ok(close(out[0]!.score, 0.85) && close(out[1]!.score, 0.75) && close(out[2]!.score, 0.75));
  assert.equal(out[3], cands[3], "past `top`: the candidate itself");
  assert.equal(cands[0]!.score, 1, "the input is not changed");

  // Two neighbours each: c's mean is (0.8 + 0.7) / 2, so the isolated top candidate falls below a.
  const two = regularizeScores(cands, sim, { top: 3, neighbours: 2, weight: 0.8 });
  // c: 0.2 x 1 + 0.8 x 0.75 = 0.8; a: 0.2 x 0.8 + 0.8 x 0.85 = 0.84; b: 0.2 x 0.7 + 0.8 x 0.9 = 0.86.
  assert.deepEqual(two.map((c) => c.id), ["b", "a", "c", "d"]);
  assert.ok(close(two[0]!.score, 0.86) && close(two[1]!.score, 0.84) && close(two[2]!.score, 0.8));
});

Deno.test("regularizeScores(): a candidate without a vector keeps its score and is no one's neighbour; off leaves the order", () => {
  const cands = [{ id: "x", score: 0.9 }, { id: "a", score: 0.5 }, { id: "b", score: 0.4 }];
  // x has no vector: its zero similarities would otherwise make it a neighbour of a and b.
  const sim = Float32Array.of(0, 0, 0, 0, 1, -0.2, 0, -0.2, 1);
  const out = regularizeScores(cands, sim, { top: 3, neighbours: 1, weight: 0.5 }, (i) => i !== 0);
  assert.deepEqual(out.map((c) => [c.id, c.score]), [["x", 0.9], ["a", 0.45], ["b", 0.45]]);
  for (
    const off of [{ top: 1, neighbours: 3, weight: 0.5 }, { top: 50, neighbours: 0, weight: 0.5 }, {
      top: 50,
      neighbours: 3,
      weight: 0,
    }]
  ) {
    assert.equal(regularizationOn(off), false);
    assert.deepEqual(regularizeScores(cands, sim, off), cands);
  }
  // No candidate, or only one, with a vector (an index without embeddings): every score stays.
  for (const withVector of [-1, 1]) {
    assert.deepEqual(
      regularizeScores(cands, sim, { top: 3, neighbours: 10, weight: 0.5 }, (i) => i === withVector),
      cands,
    );
  }
  assert.equal(regularizationOn(SCORE_REGULARIZATION), true);
  assert.deepEqual(regularizeScores([], new Float32Array(0), SCORE_REGULARIZATION), []);
});

Deno.test("DataModelIndex.similarities() are the ranking's cosines between the rows (common direction removed)", () => {
  const dims = 8;
  const { vecs } = leaningVectors(11, dims, 32);
  for (const exactVectors of [true, false]) {
    const index = new DataModelIndex("dm_s", dims, { removeCommonDirection: true, exactVectors });
    vecs.forEach((v, i) => index.upsert(article(i, `t${i}`), v));
    index.upsert(article(32, "no vector"), null);
    const slots = [0, 5, 32, 17, 9];
    const { cosines, hasVector } = index.similarities(slots);
    assert.deepEqual([...hasVector], [1, 1, 0, 1, 1]);
    slots.forEach((a, i) => {
      slots.forEach((b, j) => {
        const expected = hasVector[i] === 0 || hasVector[j] === 0
          ? 0
          : i === j
          ? 1
          : index.vectors.cosine(a, index.vectors.row(b));
        assert.ok(Math.abs(cosines[i * 5 + j]! - expected) < 1e-4, `${a}, ${b}: ${cosines[i * 5 + j]} vs ${expected}`);
      });
    });
  }
});

Deno.test("hybrid(): version 2 returns its fused candidates regularized (an isolated word match falls below a cluster)", () => {
  const index = new DataModelIndex("dm_r", 2, { exactVectors: true });
  // Three flood stories that are alike; one story that says "flood" twice in passing but is about football.
  const flood = [0, 1, 2].map((i) => normalized(Float32Array.of(1, 0.1 * i)));
  index.upsert(article(0, "flood warning river"), flood[0]!);
  index.upsert(article(1, "river flood"), flood[1]!);
  index.upsert(article(2, "flood defences"), flood[2]!);
  index.upsert(article(3, "flood flood football"), normalized(Float32Array.of(0, 1)));
  for (let i = 4; i < 12; i++) index.upsert(article(i, `other story ${i}`), normalized(Float32Array.of(-1, i / 10)));
  const rep = { bag: Bm25Index.bag(terms("flood")), vector: normalized(Float32Array.of(0.6, 0.8)) };
  const plain = index.hybrid(rep, { k: 12, fusion: { ...FUSION_V2, feedbackDocs: 0, regularize: undefined } });
  assert.equal(plain[0]!.slot, 3, "fused alone, the word count wins");
  const reg = { top: 12, neighbours: 2, weight: 0.5 };
  const smoothed = index.hybrid(rep, { k: 12, fusion: { ...FUSION_V2, feedbackDocs: 0, regularize: reg } });
  const near = index.similarities(plain.map((c) => c.slot));
  const expected = regularizeScores(plain, near.cosines, reg, (i) => near.hasVector[i] === 1);
  assert.deepEqual(smoothed.map((c) => c.slot), expected.map((c) => c.slot));
  assert.notEqual(smoothed[0]!.slot, 3, "regularized, a flood story is first");
  // k below `top`: the same first k.
  const three = index.hybrid(rep, { k: 3, fusion: { ...FUSION_V2, feedbackDocs: 0, regularize: reg } });
  assert.deepEqual(three.map((c) => c.slot), expected.slice(0, 3).map((c) => c.slot));
  for (const c of smoothed) assert.ok(c.score > 0 && c.score <= 1, "scores stay in [0, 1]");

  // Articles without vectors (no embeddings): the words alone rank, unchanged.
  const words = new DataModelIndex("dm_w", 2, { exactVectors: true });
  ["flood warning river", "river flood", "flood flood football", "other"].forEach((t, i) =>
    words.upsert(article(i, t), null)
  );
  const lexical = { bag: rep.bag, vector: null };
  assert.deepEqual(
    words.hybrid(lexical, { k: 4, fusion: FUSION_V2 }),
    words.hybrid(lexical, { k: 4, fusion: { ...FUSION_V2, regularize: undefined } }),
  );
});

Deno.test("retrievalFusion(), fusionForAlgorithm(): regularization is in hybrid version 2, for the semantic orders only", () => {
  assert.deepEqual(FUSION_V2.regularize, { top: 50, neighbours: 10, weight: 0.5 });
  for (const t of [undefined, "hybrid"]) assert.deepEqual(retrievalFusion(t, "2").regularize, SCORE_REGULARIZATION);
  for (const t of ["keyword", "semantic"]) assert.equal(retrievalFusion(t, "2").regularize, undefined, t);
  assert.equal(FUSION_V1.regularize, undefined);
  assert.equal(retrievalFusion("hybrid", "1").regularize, undefined);
  assert.deepEqual(fusionForAlgorithm(FUSION_V2, "semantic"), FUSION_V2);
  assert.deepEqual(fusionForAlgorithm(FUSION_V2, "most_recent_semantic"), FUSION_V2);
  // Where scores are read as "how much of what was asked" (a relevance share, keyword blends): none.
  assert.equal(fusionForAlgorithm(FUSION_V2, "most_recent").regularize, undefined);
  assert.equal(fusionForAlgorithm(FUSION_V2, "trending").regularize, undefined);
});

Deno.test("DataModelIndex.similarities() with a term share mixes in the cosine of the articles' stored terms", () => {
  const index = new DataModelIndex("dm_t", 2, { exactVectors: true, forwardTerms: 32 });
  const bodies = ["flood river flood rain", "flood rain storm", "football match goal goal", "river bank"];
  const vecs = [[1, 0], [0.8, 0.6], [0, 1], [0.6, 0.8]].map((v) => Float32Array.from(v));
  bodies.forEach((body, i) => index.upsert(article(i, "", body), vecs[i]!));
  // Each article's stored terms as `(1 + ln tf) x idf`, normalised (tf from the body, field weight 1).
  const weights = bodies.map((body) => {
    const w = new Map([...Bm25Index.bag(terms(body))].map(([t, tf]) => [t, (1 + Math.log(tf)) * index.bm25.idf(t)]));
    const norm = Math.hypot(...w.values());
    return new Map([...w].map(([t, x]) => [t, x / norm]));
  });
  const termCosine = (a: number, b: number) =>
    a === b ? 1 : [...weights[a]!].reduce((sum, [t, x]) => sum + x * (weights[b]!.get(t) ?? 0), 0);
  const slots = [0, 1, 2, 3];
  const vectorsAlone = index.similarities(slots).cosines;
  assert.deepEqual(index.similarities(slots, 0).cosines, vectorsAlone);
  for (const share of [0.5, 1]) {
    const { cosines } = index.similarities(slots, share);
    for (const a of slots) {
      for (const b of slots) {
        const expected = (1 - share) * vectorsAlone[a * 4 + b]! + share * termCosine(a, b);
        assert.ok(Math.abs(cosines[a * 4 + b]! - expected) < 1e-5, `${share} ${a},${b}: ${cosines[a * 4 + b]}`);
      }
    }
  }
  assert.ok(termCosine(0, 1) > 0 && termCosine(0, 2) === 0, "the fixture has overlapping and disjoint articles");
  // An index that keeps no terms takes the vectors' cosine alone, whatever the share.
  const plain = new DataModelIndex("dm_p", 2, { exactVectors: true });
  bodies.forEach((body, i) => plain.upsert(article(i, "", body), vecs[i]!));
  assert.deepEqual(plain.similarities(slots, 1).cosines, vectorsAlone);
});
