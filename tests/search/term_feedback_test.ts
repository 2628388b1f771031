import assert from "node:assert/strict";
import { indexArticle } from "./_index_fixtures.ts";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { ForwardTerms, NO_TERM_FEEDBACK, type TermFeedback } from "../../core/search/rank/feedback.ts";
import { articleBag, DataModelIndex, FORWARD_TERMS_PER_DOC } from "../../core/search/index/index.ts";
import {
  FUSION_V2,
  fusionForAlgorithm,
  retrievalFusion,
  TERM_FEEDBACK_CANDIDATE,
} from "../../core/search/rank/retrieval_mode.ts";
import { terms } from "../../core/search/text/tokenizer.ts";

const article = indexArticle;

const one = [{ weight: 1, b: 0.75 }];

Deno.test("ForwardTerms.expand() is RM3: score-weighted term shares of the feedback documents, interpolated", () => {
  const bm25 = new Bm25Index({ fields: one });
  const forward = new ForwardTerms(8);
  const docs = ["storm flood flood harbour", "storm flood", "cup final", "harbour wall"];
  docs.forEach((d, i) => {
    const bag = Bm25Index.bag(terms(d));
    bm25.add(i, bag);
    forward.set(i, bag, one, bm25);
  });
  const query = Bm25Index.bag(terms("storm"));
  const feedback: TermFeedback = { docs: 2, terms: 2, originalWeight: 0.6, rerank: 0 };
  // Documents 0 and 1 with scores 2 and 1. P(t|d): doc 0 storm 1/4, flood 2/4, harbour 1/4;
  // doc 1 storm 1/2, flood 1/2. Weights: flood 2 x 0.5 + 1 x 0.5 = 1.5; storm 2 x 0.25 + 0.5 = 1;
  // harbour 0.5 (dropped: 2 terms kept). Expansion shares: flood 0.6, storm 0.4.
  const out = forward.expand(query, [0, 1], [2, 1], bm25, feedback);
  assert.deepEqual([...out.keys()].sort(), [terms("flood")[0]!, terms("storm")[0]!].sort());
  assert.ok(Math.abs(out.get(terms("storm")[0]!)! - (0.6 + 0.4 * 0.4)) < 1e-9);
  assert.ok(Math.abs(out.get(terms("flood")[0]!)! - 0.4 * 0.6) < 1e-9);
  const total = [...out.values()].reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(total - 1) < 1e-9, "both sides normalised to sum 1");
});

Deno.test("ForwardTerms.expand() skips terms found in one document only and keeps the query without feedback", () => {
  const bm25 = new Bm25Index({ fields: one });
  const forward = new ForwardTerms(8);
  ["storm zyxwv", "storm flood", "flood tide"].forEach((d, i) => {
    const bag = Bm25Index.bag(terms(d));
    bm25.add(i, bag);
    forward.set(i, bag, one, bm25);
  });
  const query = Bm25Index.bag(terms("storm"));
  const on: TermFeedback = { docs: 1, terms: 5, originalWeight: 0.5, rerank: 0 };
  const out = forward.expand(query, [0], [1], bm25, on);
  assert.equal(out.has("zyxwv"), false, "a term of one document says nothing shared");
  assert.equal(forward.expand(query, [], [], bm25, on), query, "no feedback documents: the query itself");
});

Deno.test("ForwardTerms keeps each document's most frequent terms, field-weighted, and forgets a cleared slot", () => {
  const bm25 = new Bm25Index({ fields: [{ weight: 2, b: 0.5 }, { weight: 1, b: 0.75 }] });
  const forward = new ForwardTerms(1);
  const fields = [{ weight: 2, b: 0.5 }, { weight: 1, b: 0.75 }];
  // "harbour" once in the title (weight 2) outweighs "flood" once in the body.
  const bag = Bm25Index.fieldBag([terms("harbour"), terms("flood")]);
  bm25.add(0, bag);
  bm25.add(1, bag);
  forward.set(0, bag, fields, bm25);
  forward.set(1, bag, fields, bm25);
  const q = Bm25Index.bag(terms("flood"));
  const f: TermFeedback = { docs: 1, terms: 3, originalWeight: 0.5, rerank: 0 };
  assert.deepEqual([...forward.expand(q, [0], [1], bm25, f).keys()].sort(), [terms("flood")[0]!, "harbour"].sort());
  forward.clear(0);
  assert.equal(forward.expand(q, [0], [1], bm25, f), q, "a cleared slot adds nothing");
});

Deno.test("Bm25Index.scoreSlots() gives exactly score()'s values for the slots asked, 0 for retired ones", () => {
  const bm25 = new Bm25Index({ fields: one });
  const docs = ["storm storm flood", "storm harbour wall", "cup final goal", "budget vote storm", "flood tide"];
  docs.forEach((d, i) => bm25.add(i, Bm25Index.bag(terms(d))));
  const q = new Map([[terms("storm")[0]!, 0.7], [terms("flood")[0]!, 0.3]]);
  const all = bm25.score(q);
  const want = new Map([...all.slots].map((s, i) => [s, all.scores[i]!]));
  const got = bm25.scoreSlots(q, [4, 2, 0, 3]);
  assert.deepEqual([...got].map((x) => x.toFixed(5)), [4, 2, 0, 3].map((s) => (want.get(s) ?? 0).toFixed(5)));
  bm25.retire(0);
  assert.equal(bm25.scoreSlots(q, [0])[0], 0);
});

Deno.test("withTermFeedback(): re-ranks the first matches by the expanded query; a full pass also finds new ones", () => {
  const index = new DataModelIndex("dm_tf", 2, { exactVectors: true, forwardTerms: FORWARD_TERMS_PER_DOC });
  const texts = [
    ["Storm warning", "storm storm"], // 0: the query word only, twice
    ["Storm floods the harbour", "storm flood harbour sea wall"], // 1
    ["Harbour flood defences", "storm flood harbour wall"], // 2
    ["Sea wall breached by flood", "flood harbour sea wall"], // 3: no query word
    ["Cup final", "goal match"], // 4
  ];
  texts.forEach(([t, b], i) =>
    index.upsert(article(i, t!, b), Float32Array.of(1, 0), articleBag({ title: t!, summary: "", body: b! }))
  );
  const rep = { bag: Bm25Index.bag(terms("storm")), vector: null };
  const plain = index.lexicalTop(rep.bag, 5);
  assert.equal(plain.slots[0], 0, "plain BM25F: the document saying storm twice");
  const feedback: TermFeedback = { docs: 3, terms: 4, originalWeight: 0.3, rerank: 50 };
  const reranked = index.withTermFeedback(rep, feedback);
  assert.ok(reranked.bag.size > 1, "the query gained terms");
  assert.equal(reranked.asked, rep.bag, "the words asked for travel with it (explain's matched_terms)");
  assert.equal(index.withFeedback({ ...reranked, vector: Float32Array.of(1, 0) }, 2, 1).asked, rep.bag);
  assert.deepEqual([...reranked.lexical!.slots].sort(), [...plain.slots].sort(), "re-rank: the same candidates");
  assert.notEqual(reranked.lexical!.slots[0], 0, "a document sharing the feedback vocabulary moves up");
  const full = index.withTermFeedback(rep, { ...feedback, rerank: 0 });
  assert.ok([...full.lexical!.slots].includes(3), "a full pass finds the document without the query word");
  // Off, or a version that does not ask for it: unchanged.
  assert.equal(index.withTermFeedback(rep, NO_TERM_FEEDBACK), rep);
  assert.equal(index.withTermFeedback(rep, undefined), rep);
  const none = new DataModelIndex("dm_none", 2);
  assert.equal(none.forward, null, "the service's indexes keep no forward store");
  assert.equal(none.withTermFeedback(rep, feedback), rep, "no forward store: no feedback");
});

Deno.test("retrievalFusion(), fusionForAlgorithm(): term feedback is not in any ranking version; only the semantic orders take it", () => {
  for (const v of ["1", "2"]) {
    for (const t of [undefined, "hybrid", "keyword", "semantic"]) {
      assert.equal(retrievalFusion(t, v).termFeedback, undefined, `${t} v${v}`);
    }
  }
  const withIt = { ...FUSION_V2, termFeedback: TERM_FEEDBACK_CANDIDATE };
  // Where scores are read as "how much of what was asked" (a relevance share, keyword blends): none.
  assert.deepEqual(fusionForAlgorithm(withIt, "semantic"), withIt);
  assert.deepEqual(fusionForAlgorithm(withIt, "most_recent_semantic"), withIt);
  assert.equal(fusionForAlgorithm(withIt, "most_recent").termFeedback, undefined);
  assert.equal(fusionForAlgorithm(withIt, "trending").termFeedback, undefined);
});
