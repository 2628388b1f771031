/**
 * Term proximity measured as a re-ranking of the service's hybrid candidates: each of a query's
 * 100 candidates (version 2 as `deno task eval` ranks them) gets a proximity score from its
 * title and body opening (the BM25F fields, stemmed, stopwords dropped): how often two different
 * query terms occur within `window` terms of each other, saturated as BM25 saturates a term
 * frequency (p / (p + 1.2)). The new order is `hybrid + weight x proximity`. Window and weight are
 * chosen by 5-fold cross-validation over the first collection's queries (pick on four folds,
 * score on the fifth; "off" is a candidate), by query position and over 50 random fold
 * assignments: the gain reported is held out. The fitted best is then scored on every
 * collection. The index keeps no positions: this reads the documents' text, an upper bound on
 * what bigram or proximity postings could give. A second family re-fuses the same candidates by
 * reciprocal rank (RRF: `w / (c + lexical rank) + (1 - w) / (c + vector rank)`), the fusion
 * LanceDB and others use, chosen the same way (BENCH_FAMILY=proximity|rrf|all, default all).
 *
 *   deno run -A bench/proximity_cv.ts fixtures/beir/cisi fixtures/beir-tiny
 */
import { embeddingText } from "../core/search/store/articles.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { beirArticle, type BeirDataset, beirFields, loadBeir, ndcgAt } from "../cli/eval.ts";
import { articleBag, DataModelIndex } from "../core/search/index/index.ts";
import { FUSION_V2 } from "../core/search/rank/retrieval_mode.ts";
import { terms } from "../core/search/text/tokenizer.ts";
import { prng } from "../fixtures/prng.ts";

const FOLDS = 5;
const K = 100;
const BODY_CHARS = 6000;
const WINDOWS = [1, 2, 4, 8];
const WEIGHTS = [0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5];
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const dirs = Deno.args.length ? Deno.args : ["fixtures/beir/cisi", "fixtures/beir-tiny"];
const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();

interface Scored {
  rels: Map<string, number>;
  /** The hybrid candidates: ids, hybrid scores and, per window, proximity scores. */
  ids: string[];
  hybrid: number[];
  proximity: Map<number, number[]>;
  /** Each candidate's rank on the lexical and on the vector side (1 = best, among the candidates). */
  lexRank: number[];
  vecRank: number[];
}

function ranks(xs: number[]): number[] {
  const order = xs.map((x, i) => ({ x, i })).sort((a, b) => b.x - a.x || a.i - b.i);
  const out = new Array<number>(xs.length);
  order.forEach((e, r) => (out[e.i] = r + 1));
  return out;
}

/** Pairs of different query terms within `window` positions, saturated. */
function proximity(doc: string[], query: Set<string>, window: number): number {
  let pairs = 0;
  for (let i = 0; i < doc.length; i++) {
    if (!query.has(doc[i]!)) continue;
    for (let j = i + 1; j <= Math.min(doc.length - 1, i + window); j++) {
      if (doc[j] !== doc[i] && query.has(doc[j]!)) pairs++;
    }
  }
  return pairs / (pairs + 1.2);
}

async function score(data: BeirDataset): Promise<Scored[]> {
  const docs = data.corpus.map(beirFields);
  const vectors = await embeddings.embed(docs.map(embeddingText));
  const index = new DataModelIndex("dm_prox", embeddings.dims, {
    removeCommonDirection: embeddings.removeCommonDirection ?? false,
    exactVectors: true,
  });
  const ids: string[] = [];
  const tokens = new Map<string, string[]>();
  data.corpus.forEach((d, i) => {
    const article = beirArticle(d);
    ids[index.upsert(article, vectors[i]!, articleBag(docs[i]!))] = d.id;
    tokens.set(d.id, terms(`${d.title} . ${d.text.slice(0, BODY_CHARS)}`));
  });
  const out: Scored[] = [];
  for (const q of data.queries) {
    const [vector] = await embeddings.embed([q.text]);
    const bag = Bm25Index.bag(terms(q.text));
    const fed = index.withFeedback({ bag, vector: vector! }, FUSION_V2.feedbackDocs, FUSION_V2.feedbackWeight, {
      pool: K,
    });
    // The ranking as it was when this was measured: version 2 before score regularization.
    const top = index.hybrid(fed, { k: K, fusion: { ...FUSION_V2, regularize: undefined } });
    const qset = new Set(bag.keys());
    const cand = top.map((c) => ids[c.slot]!);
    out.push({
      rels: data.qrels.get(q.id)!,
      ids: cand,
      hybrid: top.map((c) => c.score),
      proximity: new Map(WINDOWS.map((w) => [w, cand.map((id) => proximity(tokens.get(id)!, qset, w))])),
      lexRank: ranks(top.map((c) => c.bm25)),
      vecRank: ranks(top.map((c) => c.cosine)),
    });
  }
  return out;
}

interface Setting {
  kind: "off" | "proximity" | "rrf";
  window: number;
  weight: number;
  c: number;
}
const FAMILY = Deno.env.get("BENCH_FAMILY") ?? "all";
const proximitySettings = WINDOWS.flatMap((window) =>
  WEIGHTS.slice(1).map((weight) => ({ kind: "proximity" as const, window, weight, c: 0 }))
);
const rrfSettings = [10, 30, 60].flatMap((c) =>
  [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95].map((weight) => ({ kind: "rrf" as const, window: 0, weight, c }))
);
const settings: Setting[] = [
  { kind: "off", window: 0, weight: 0, c: 0 },
  ...(FAMILY === "rrf" ? [] : proximitySettings),
  ...(FAMILY === "proximity" ? [] : rrfSettings),
];

function ndcg(q: Scored, s: Setting): number {
  const score = (i: number) =>
    s.kind === "rrf"
      ? s.weight / (s.c + q.lexRank[i]!) + (1 - s.weight) / (s.c + q.vecRank[i]!)
      : q.hybrid[i]! + (s.kind === "proximity" ? s.weight * q.proximity.get(s.window)![i]! : 0);
  const order = q.ids.map((id, i) => ({ id, score: score(i), i }));
  order.sort((a, b) => b.score - a.score || a.i - b.i);
  return ndcgAt(order.map((e) => e.id), q.rels, 10);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const label = (s: Setting) =>
  s.kind === "off"
    ? "off"
    : s.kind === "rrf"
    ? `rrf c ${s.c}, lexical ${s.weight}`
    : `proximity window ${s.window}, weight ${s.weight}`;

// Held out: per fold, the setting best on the other folds, scored on this one.
function heldOut(queries: Scored[], foldOf: (i: number) => number): { score: number; picks: string[] } {
  const scores: number[] = new Array(queries.length);
  const picks: string[] = [];
  for (let f = 0; f < FOLDS; f++) {
    const train = queries.filter((_, i) => foldOf(i) !== f);
    let best = settings[0]!, bestScore = -1;
    for (const s of settings) {
      const m = mean(train.map((q) => ndcg(q, s)));
      if (m > bestScore + 1e-12) best = s, bestScore = m;
    }
    picks.push(label(best));
    queries.forEach((q, i) => {
      if (foldOf(i) === f) scores[i] = ndcg(q, best);
    });
  }
  return { score: mean(scores), picks };
}

const collections = [];
for (const dir of dirs) {
  const data = await loadBeir(dir);
  collections.push({ name: dir.replace(/\/+$/, "").split("/").at(-1)!, queries: await score(data) });
}
const dev = collections[0]!;
const off = mean(dev.queries.map((q) => ndcg(q, settings[0]!)));
const byPosition = heldOut(dev.queries, (i) => i % FOLDS);
console.log(
  `${dev.name}: hybrid (off) ${off.toFixed(4)}; held out, folds by position ${byPosition.score.toFixed(4)} (${
    (byPosition.score - off).toFixed(4)
  }); picks: ${byPosition.picks.join(" | ")}`,
);
const gains: number[] = [];
for (let r = 0; r < 50; r++) {
  const rand = prng(1000 + r);
  const folds = dev.queries.map((_, i) => ({ i, key: rand() })).sort((a, b) => a.key - b.key);
  const foldOf = new Array<number>(dev.queries.length);
  folds.forEach((e, rank) => (foldOf[e.i] = rank % FOLDS));
  gains.push(heldOut(dev.queries, (i) => foldOf[i]!).score - off);
}
gains.sort((a, b) => a - b);
console.log(
  `  50 random fold assignments: mean gain ${mean(gains).toFixed(4)} (10th to 90th percentile ${
    gains[5]!.toFixed(4)
  } to ${gains[44]!.toFixed(4)}), positive in ${gains.filter((g) => g > 0).length * 2} %`,
);
let fitted = settings[0]!, fittedScore = -1;
for (const s of settings) {
  const m = mean(dev.queries.map((q) => ndcg(q, s)));
  if (m > fittedScore + 1e-12) fitted = s, fittedScore = m;
}
for (const c of collections) {
  console.log(
    `${c.name}: off ${mean(c.queries.map((q) => ndcg(q, settings[0]!))).toFixed(4)}, fitted on ${dev.name} (${
      label(fitted)
    }) ${mean(c.queries.map((q) => ndcg(q, fitted))).toFixed(4)}`,
  );
}
