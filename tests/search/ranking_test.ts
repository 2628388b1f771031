import assert from "node:assert/strict";
import { Bm25Index } from "../../core/search/index/bm25.ts";
import { DataModelIndex } from "../../core/search/index/index.ts";
import { FUSION_V1, FUSION_V2 } from "../../core/search/rank/retrieval_mode.ts";
import { terms } from "../../core/search/text/tokenizer.ts";
import { normalized } from "../../core/search/index/vector_index.ts";
import { indexArticle, leaningVectors } from "./_index_fixtures.ts";
import { search, searchWorld } from "./_world.ts";

const article = indexArticle;

Deno.test("BM25F with one field of weight 1 scores exactly as plain BM25", () => {
  const docs = ["storm storm flood", "storm harbour wall", "cup final goal", "budget vote storm"];
  const plain = new Bm25Index(), fielded = new Bm25Index({ fields: [{ weight: 1, b: 0.75 }] });
  docs.forEach((d, i) => {
    plain.add(i, Bm25Index.bag(terms(d)));
    fielded.add(i, Bm25Index.fieldBag([terms(d)]));
  });
  const q = Bm25Index.bag(terms("storm flood"));
  const a = plain.score(q), b = fielded.score(q);
  assert.deepEqual([...a.slots], [...b.slots]);
  // The hand-computed score of doc 0: idf(storm) = ln(1 + 1.5/3.5), idf(flood) = ln(1 + 3.5/1.5),
  // every document has 3 terms, so |d| / avgdl = 1 and the length norm is 1; tf(storm) = 2.
  const norm = 1;
  const expected = Math.log(1 + 1.5 / 3.5) * (2 * 2.2) / (2 + 1.2 * norm) +
    Math.log(1 + 3.5 / 1.5) * (1 * 2.2) / (1 + 1.2 * norm);
  assert.ok(Math.abs(b.scores[[...b.slots].indexOf(0)]! - expected) < 1e-5);
});

Deno.test("BM25F: a term in the title outweighs the same term once in the body; replacing forgets every field", () => {
  const index = new DataModelIndex("dm_t", 4);
  index.upsert(article(0, "Harbour news", "The storm reached the coast overnight and more."), null);
  index.upsert(article(1, "Storm over the coast", "Harbour news from the town and more."), null);
  const r = index.bm25.score(Bm25Index.bag(terms("storm")));
  const by = new Map([...r.slots].map((s, i) => [s, r.scores[i]!]));
  assert.ok(by.get(1)! > by.get(0)!, "title match first");
  // The replaced version's slot is retired without its terms: it never scores again.
  const slot = index.upsert(article(1, "Quiet day", "Nothing happened."), null);
  assert.deepEqual([...index.bm25.score(Bm25Index.bag(terms("storm"))).slots], [0]);
  assert.deepEqual([...index.bm25.score(Bm25Index.bag(terms("quiet day"))).slots], [slot]);
  assert.equal(index.liveCount, 2);
});

Deno.test("removing the common direction: cosines equal those of the projected, renormalised vectors", () => {
  const dims = 8;
  // 32 rows: the index computes its direction when it reaches 16 and 32 rows, so from all of them.
  const { common, vecs } = leaningVectors(7, dims, 32);
  const index = new DataModelIndex("dm_v", dims, { removeCommonDirection: true, exactVectors: true });
  vecs.forEach((v, i) => index.upsert(article(i, `t${i}`), v));
  const q = vecs[3]!.map((x, j) => x + 0.3 * (j === 0 ? 1 : 0));
  const qn = normalized(q);
  const cos = Float32Array.from(index.cosines(qn));
  // The reference: the principal direction from the index, vectors projected off it.
  const u = index.vectors.principalDirection(index.size)!;
  assert.ok(Math.abs([...u].reduce((s, x, j) => s + x * common[j]!, 0)) > 0.95, "finds the shared direction");
  const project = (v: Float32Array) => {
    const dot = v.reduce((s, x, j) => s + x * u[j]!, 0);
    return normalized(v.map((x, j) => x - dot * u[j]!));
  };
  const pq = project(qn);
  vecs.forEach((v, i) => {
    const pv = project(v);
    const expected = pv.reduce((s, x, j) => s + x * pq[j]!, 0);
    assert.ok(Math.abs(cos[i]! - expected) < 1e-4, `slot ${i}: ${cos[i]} vs ${expected}`);
  });
  // Without removal the shared direction makes everything look alike.
  const plain = new DataModelIndex("dm_p", dims);
  vecs.forEach((v, i) => plain.upsert(article(i, `t${i}`), v));
  const plainCos = [...plain.cosines(qn)];
  assert.ok(Math.min(...plainCos) > Math.min(...cos), "removal spreads the cosines");
});

Deno.test("withFeedback() moves the query vector toward its best lexical matches, and only with a vector", () => {
  const index = new DataModelIndex("dm_f", 2);
  index.upsert(article(0, "Storm floods harbour"), Float32Array.of(0, 1));
  index.upsert(article(1, "Budget vote"), Float32Array.of(1, 0));
  const rep = { bag: Bm25Index.bag(terms("storm")), vector: Float32Array.of(1, 0) };
  const fed = index.withFeedback(rep, 10, 1);
  assert.ok(Math.abs(fed.vector![0]! - Math.SQRT1_2) < 1e-6 && Math.abs(fed.vector![1]! - Math.SQRT1_2) < 1e-6);
  assert.equal(index.withFeedback(rep, 0, 1), rep, "off");
  // The lexical scores it computed travel with the query, and a prefiltered ranking filters them.
  assert.deepEqual([...fed.lexical!.slots], [0]);
  assert.deepEqual(index.hybrid(fed, { k: 2, allow: (s) => s !== 0 }).map((c) => c.bm25), [0]);
  const none = { bag: rep.bag, vector: null };
  assert.equal(index.withFeedback(none, 10, 1), none);
  const noMatch = { bag: Bm25Index.bag(terms("volcano")), vector: rep.vector };
  assert.equal(index.withFeedback(noMatch, 10, 1).vector, noMatch.vector, "no match: the vector is unchanged");
});

Deno.test("hybrid(): version 2 leans on BM25 (vectors 15 %), version 1 blends equally", () => {
  // f32 vectors scored as they are, so the expected blends are exact.
  const index = new DataModelIndex("dm_h", 2, { exactVectors: true });
  // Slot 0 matches the words; slot 1 only the vector.
  index.upsert(article(0, "storm harbour"), Float32Array.of(0.6, 0.8));
  index.upsert(article(1, "unrelated words"), Float32Array.of(1, 0));
  index.upsert(article(2, "more words"), Float32Array.of(0, 1));
  const rep = { bag: Bm25Index.bag(terms("storm")), vector: Float32Array.of(1, 0) };
  // The blend itself: score regularization, which then smooths it, is tested in regularize_test.ts.
  const v2 = index.hybrid(rep, { k: 3, fusion: { ...FUSION_V2, feedbackDocs: 0, regularize: undefined } });
  assert.equal(v2[0]!.slot, 0);
  assert.ok(Math.abs(v2[0]!.score - (0.85 + 0.15 * (0.6 - 0) / 1)) < 1e-6);
  const v1 = index.hybrid(rep, { k: 3, fusion: FUSION_V1 });
  assert.equal(v1[0]!.slot, 0);
  assert.ok(Math.abs(v1[0]!.score - (0.5 + 0.5 * 0.6)) < 1e-6);
  assert.ok(Math.abs(v1[1]!.score - 0.5) < 1e-6 && v1[1]!.slot === 1);
  const z = index.hybrid(rep, {
    k: 3,
    fusion: { ...FUSION_V2, normalise: "zscore", feedbackDocs: 0, regularize: undefined },
  });
  assert.equal(z[0]!.slot, 0);
  for (const c of z) assert.ok(c.score > 0 && c.score <= 1);
});

Deno.test("POST /app/v2/search accepts search_version (1, 2, v1, v2) and refuses others with 400 text/plain", async () => {
  await using w = await searchWorld();
  await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/storm", title: "Coastal storm floods the harbour", body: "Heavy rain." },
    { url: "https://alpha.example/cars", title: "Car sales rise", body: "Dealers sold more automobiles." },
  ]);
  const at = async (version: string) => {
    const res = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}&search_version=${version}`, {
      method: "POST",
      headers: { authorization: `Bearer ${w.key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "storm" }),
    });
    return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
  };
  for (const v of ["1", "2", "v1", "v2"]) assert.equal((await at(v)).status, 200, v);
  const plain = await search(w, { query: "storm" });
  const ranked = (results: { url: string; score: number }[]) => results.map((r) => `${r.url} ${r.score}`);
  assert.deepEqual(ranked(JSON.parse((await at("v2")).text).response.results), ranked(plain.json.response.results));
  for (const bad of ["3", "v9", "%3Cscript%3E"]) {
    const r = await at(bad);
    assert.equal(r.status, 400, bad);
    assert.match(r.type ?? "", /^text\/plain/);
    assert.equal(r.text, "search_version must be one of 1, 2, v1, v2");
  }
});
