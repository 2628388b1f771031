import assert from "node:assert/strict";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { stem } from "../../core/search/text/stemmer.ts";
import { summarize } from "../../core/search/text/summarize.ts";
import { terms, words } from "../../core/search/text/tokenizer.ts";
import { TopK } from "../../core/search/index/topk.ts";

Deno.test("terms() lowercases, folds accents, drops stopwords and stems with Porter2", () => {
  assert.deepEqual(terms("The Markets rallied at the Café"), ["market", "ralli", "cafe"]);
  assert.deepEqual(terms("Universities' studies"), ["univers", "studi"]);
  assert.deepEqual(terms("Москва и Zürich 2026"), ["москва", "zurich", "2026"]);
  assert.deepEqual(words("The Café, don't stop"), ["café", "stop"]);
});

Deno.test("stem() brings inflections of a word to one term and keeps words with digits", () => {
  for (
    const group of [["council", "councils", "council's"], ["decide", "decided", "decides", "deciding"], [
      "rate",
      "rates",
      "rated",
      "rating",
    ], ["hop", "hopping", "hopped"]]
  ) {
    assert.equal(new Set(group.map(stem)).size, 1, group.join(" "));
  }
  assert.equal(stem("covid19"), "covid19");
  assert.notEqual(stem("news"), stem("new"));
});

Deno.test("Bm25Index scores rarer and more frequent terms higher, and forgets removed documents", () => {
  const idx = new Bm25Index();
  const docs = ["storm storm flood", "storm harbour", "cup final goal", "budget vote"];
  docs.forEach((d, i) => idx.add(i, Bm25Index.bag(terms(d))));
  const q = Bm25Index.bag(terms("storm flood"));
  const r = idx.score(q);
  const score = new Map([...r.slots].map((s, i) => [s, r.scores[i]!]));
  assert.deepEqual([...score.keys()].sort(), [0, 1]);
  assert.ok(score.get(0)! > score.get(1)!);
  idx.remove(0, Bm25Index.bag(terms(docs[0]!)));
  assert.equal(idx.size, 3);
  assert.deepEqual([...idx.score(q).slots], [1]);
  assert.equal(idx.score(q, (s) => s !== 1).slots.length, 0);
});

Deno.test("TopK keeps the k best, best first, ties by lower id", () => {
  const top = new TopK(3);
  [[5, 0.1], [2, 0.9], [7, 0.5], [1, 0.5], [9, 0.05], [3, 0.7]].forEach(([id, s]) => top.push(id!, s!));
  assert.deepEqual(top.drain(), [{ id: 2, score: 0.9 }, { id: 3, score: 0.7 }, { id: 1, score: 0.5 }]);
});

Deno.test("summarize() picks the sentences that carry the topic, in their order, within the limit", () => {
  const body = "The port strike ended on Monday after dock workers accepted a pay deal. " +
    "It was sunny. Ships queued outside the harbour for days during the strike. " +
    "Dock workers said the pay deal protects jobs from automation at the port. Lunch was served.";
  const s = summarize("Port strike ends with pay deal", body, { maxSentences: 2 });
  assert.equal(
    s,
    "The port strike ended on Monday after dock workers accepted a pay deal. " +
      "Dock workers said the pay deal protects jobs from automation at the port.",
  );
  assert.ok(summarize("t", body, { maxChars: 80 }).length <= 80);
});

Deno.test("summarize() never repeats a sentence the body repeats", () => {
  const body = "Scientists say warm oceans fuel storms. The storm flooded the harbour streets overnight. " +
    "Scientists say warm oceans fuel storms. Crews evacuated the harbour streets before the storm surge.";
  const s = summarize("Storm floods harbour", body, { maxSentences: 3 });
  assert.equal(s.split("Scientists say warm oceans fuel storms.").length - 1, 1);
});
