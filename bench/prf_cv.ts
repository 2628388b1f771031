/**
 * Term feedback (RM3) measured: hybrid nDCG@10 of the service's ranking path (DataModelIndex:
 * term feedback, vector feedback, fusion of version 2) with
 * 1. untuned settings (Anserini's RM3 defaults) on every collection: unbiased, nothing was chosen;
 * 2. a grid of settings picked by 5-fold cross-validation over the first collection's queries
 *    (pick on four folds, score on the fifth; fold = query position mod 5, as
 *    bench/relevance_cv.ts), so the gain reported is held out, per family of settings;
 * 3. one fixed setting (BENCH_PRF="docs,terms,original,rerank,forward", or the best re-rank of
 *    200 on all dev queries: fitted) on every collection.
 * docs/relevance.md records a run. BENCH_GRID=0 stops after step 1.
 *
 *   deno run -A bench/prf_cv.ts fixtures/beir/cisi fixtures/beir-tiny
 */
import { embeddingText } from "../core/search/store/articles.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { beirArticle, type BeirDataset, beirFields, loadBeir, ndcgAt } from "../cli/eval.ts";
import { NO_TERM_FEEDBACK, type TermFeedback } from "../core/search/rank/feedback.ts";
import { articleBag, DataModelIndex } from "../core/search/index/index.ts";
import { FUSION_V2 } from "../core/search/rank/retrieval_mode.ts";
import { terms } from "../core/search/text/tokenizer.ts";
import { crossValidate, fmt, mean, repeatedGain } from "./_cv.ts";

const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const dirs = Deno.args.length ? Deno.args : ["fixtures/beir/cisi", "fixtures/beir-tiny"];
const FORWARD = [16, 32, 64];
// Candidates the ranking is asked for: 100 as `deno task eval` (nDCG@10 of its first 10).
const K = Number(Deno.env.get("BENCH_K") ?? 100);

const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();

interface Setting extends TermFeedback {
  forward: number;
}

interface Collection {
  name: string;
  data: BeirDataset;
  /** One index per forward store size. */
  indexes: Map<number, { index: DataModelIndex; ids: string[] }>;
  queryVectors: Float32Array[];
}

async function prepare(dir: string): Promise<Collection> {
  const data = await loadBeir(dir);
  const docs = data.corpus.map(beirFields);
  const vectors = await embeddings.embed(docs.map(embeddingText));
  const indexes = new Map<number, { index: DataModelIndex; ids: string[] }>();
  for (const forward of FORWARD) {
    const index = new DataModelIndex("dm_cv", embeddings.dims, {
      removeCommonDirection: embeddings.removeCommonDirection ?? false,
      exactVectors: true,
      forwardTerms: forward,
    });
    const ids: string[] = [];
    // Upserts one by one, as `deno task eval` does (same vectors' common direction, same figures).
    {
      data.corpus.forEach((d, i) => {
        const article = beirArticle(d);
        ids[index.upsert(article, vectors[i]!, articleBag(docs[i]!))] = d.id;
      });
    }
    indexes.set(forward, { index, ids });
  }
  const queryVectors = await embeddings.embed(data.queries.map((q) => q.text));
  return { name: dir.replace(/\/+$/, "").split("/").at(-1)!, data, indexes, queryVectors };
}

/** Per-query hybrid nDCG@10 of the service's ranking with one term feedback setting. */
function perQuery(c: Collection, s: Setting): number[] {
  const { index, ids } = c.indexes.get(s.forward)!;
  // The ranking as it was when this was measured: version 2 before score regularization.
  const fusion = { ...FUSION_V2, regularize: undefined, termFeedback: s };
  return c.data.queries.map((q, qi) => {
    const rep = { bag: Bm25Index.bag(terms(q.text)), vector: c.queryVectors[qi]! };
    const expanded = index.withTermFeedback(rep, fusion.termFeedback, { pool: K });
    const fed = index.withFeedback(expanded, fusion.feedbackDocs, fusion.feedbackWeight, { pool: K });
    const ranked = index.hybrid(fed, { k: K, fusion }).slice(0, 10).map((h) => ids[h.slot]!);
    return ndcgAt(ranked, c.data.qrels.get(q.id)!, 10);
  });
}

const show = (s: Setting) =>
  s.docs === 0
    ? "off"
    : `docs ${s.docs}, terms ${s.terms}, original ${s.originalWeight}, ${
      s.rerank ? `re-rank ${s.rerank}` : "full pass"
    }, forward ${s.forward}`;

const collections: Collection[] = [];
for (const d of dirs) collections.push(await prepare(d));
const dev = collections[0]!;

const OFF: Setting = { ...NO_TERM_FEEDBACK, forward: FORWARD[0]! };
const grid: Setting[] = [OFF];
for (const forward of FORWARD) {
  for (const docs of [2, 3, 5, 10]) {
    for (const nTerms of [5, 10, 20, 40]) {
      for (const originalWeight of [0.5, 0.6, 0.7, 0.8]) {
        for (const rerank of [0, 100, 200, 500]) grid.push({ docs, terms: nTerms, originalWeight, rerank, forward });
      }
    }
  }
}
// Settings fixed before looking at any collection (Anserini's RM3 defaults: 10 documents, 10
// terms, original 0.5): their score on every query is itself unbiased, no fold needed.
console.log("## untuned settings (not chosen on any collection), every collection");
for (const forward of FORWARD) {
  for (const rerank of [0, 200]) {
    const s: Setting = { docs: 10, terms: 10, originalWeight: 0.5, rerank, forward };
    const line = collections.map((c) => {
      const off = mean(perQuery(c, OFF)), on = mean(perQuery(c, s));
      return `${c.name} ${fmt(on)} (${on >= off ? "+" : ""}${fmt(on - off)})`;
    });
    console.log(`${show(s).padEnd(70)} ${line.join("  ")}`);
  }
}
if (Deno.env.get("BENCH_GRID") === "0") Deno.exit(0);

const t0 = performance.now();
const cands = grid.map((key) => ({ key, scores: perQuery(dev, key) }));
const base = mean(cands[0]!.scores);
console.log(`# dev ${dev.name}: ${dev.data.corpus.length} documents, ${dev.data.queries.length} queries`);
console.log(`${grid.length} settings scored in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
console.log(`hybrid without term feedback: ${fmt(base)}`);
console.log("\n## best 12 settings on all dev queries (fitted, not held out)");
for (const c of [...cands].sort((a, b) => mean(b.scores) - mean(a.scores)).slice(0, 12)) {
  console.log(`${show(c.key).padEnd(70)} ${fmt(mean(c.scores))}`);
}

// Held out: the whole grid, and each second-pass kind on its own (what latency allows).
const families: [string, (s: Setting) => boolean][] = [
  ["all settings", () => true],
  ["full second pass", (s) => s.rerank === 0],
  ["re-rank of the first 100", (s) => s.rerank === 100],
  ["re-rank of the first 200", (s) => s.rerank === 200],
  ["re-rank of the first 500", (s) => s.rerank === 500],
  ["re-rank of the first 200, forward 32", (s) => s.rerank === 200 && s.forward === 32],
];
console.log("\n## 5-fold cross-validation on the dev queries (held-out hybrid nDCG@10; off is a candidate)");
const picked = new Map<string, Setting[]>();
for (const [label, keep] of families) {
  const family = cands.filter((c) => c.key === OFF || keep(c.key));
  const cv = crossValidate(family);
  const offFolds = crossValidate([cands[0]!]).perFold;
  picked.set(label, cv.picks);
  console.log(
    `${label}: held out ${fmt(cv.cv)} (off ${fmt(base)}, ${cv.cv >= base ? "+" : ""}${fmt(cv.cv - base)}); per fold ${
      cv.perFold.map((x, i) => `${fmt(x)} vs ${fmt(offFolds[i]!)}`).join(", ")
    }`,
  );
  for (const p of cv.picks) console.log(`  pick: ${show(p)}`);
  const r = repeatedGain(family, cands[0]!.scores);
  console.log(
    `  over 50 random fold assignments: held-out gain mean ${fmt(r.mean)}, 10th to 90th percentile ${fmt(r.low)} to ${
      fmt(r.high)
    }, positive in ${(r.positive * 100).toFixed(0)} %`,
  );
}

// One fixed setting (see the header), scored on every collection.
const env = Deno.env.get("BENCH_PRF");
let chosen: Setting;
if (env) {
  const [docs, t, o, r, f] = env.split(",").map(Number);
  chosen = {
    docs: docs!,
    terms: t!,
    originalWeight: o!,
    rerank: r!,
    forward: f!,
  };
} else {
  chosen = cands.filter((c) => c.key.rerank === 200).sort((a, b) => mean(b.scores) - mean(a.scores))[0]!.key;
}
console.log(`\n## fixed setting on every collection: ${show(chosen)}`);
for (const c of collections) {
  const off = mean(perQuery(c, { ...OFF }));
  const on = mean(perQuery(c, chosen));
  console.log(`${c.name.padEnd(12)} off ${fmt(off)}  on ${fmt(on)}  (${on >= off ? "+" : ""}${fmt(on - off)})`);
}
