/**
 * Ranking families not measured before, each chosen by cross-validation with "off" among the
 * choices, over the service's ranking path (DataModelIndex: term feedback, vector feedback,
 * fusion of version 2 as it was before score regularization, 100 candidates as `deno task eval`):
 *
 * 1. Score regularization (the cluster hypothesis; Diaz, "Regularizing ad hoc retrieval
 *    scores", CIKM 2005): the best `top` fused candidates are re-scored as
 *    `(1 - a) x own score + a x mean score of its k nearest neighbours among them` (form `mean`,
 *    one step of Diaz's smoothing; with vector neighbours also 2 or 3 steps, and neighbours
 *    weighted by similarity) or `own + a x mean of similarity x score` (form `sim`, only boosts);
 *    neighbours by the cosine of the index's document vectors (common direction removed, as the
 *    ranking takes it: what the default ranking now does), of the documents' whole BM25F term
 *    bags (log tf x idf), of the 32 terms a forward store keeps per document, the mean of the
 *    vector and forward-store cosines, or of 100-dimension LSI vectors.
 * 2. Verbose-query term weighting on the lexical side: each query term's weight (its frequency
 *    in the query) is multiplied by a weight that needs no training data: its idf within the
 *    collection (`idf^g`), its smooth-inverse-frequency weight from the word vectors' Zipf rank
 *    (`sif^g`, the vector side's own word weight), or the rank's Zipf idf (`log(1 + rank / 20)^g`);
 *    repeated terms saturate as BM25's k3 (`(k3 + 1) qtf / (k3 + qtf)`) or count linearly.
 * 3. Combinations of 1 and 2 with term feedback (RM3: Anserini's defaults and the neighbourhood
 *    of the setting fitted on CISI before, see docs/relevance.md), chosen jointly.
 * 4. LSI fitted on the collection (bench/_lsi.ts) as a third side blended into the candidates'
 *    scores, over version 2 before regularization and over the shipped ranking (BENCH_LSI=0: not).
 *
 * The gain reported is held out: 5 folds by query position over the first collection's queries
 * (pick on four folds, score on the fifth), and over 50 random fold assignments. A family may be
 * limited to the settings that lose nothing on the other collections (a constraint from outside
 * the first collection's queries). Each family's setting fitted on all of the first collection's
 * queries is then scored on every collection (BENCH_DEBUG=1: per query where it changes).
 *
 *   deno run -A bench/cluster_cv.ts fixtures/beir/cisi fixtures/beir-tiny   (about 75 s)
 */
import { embeddingText } from "../core/search/store/articles.ts";
import { loadWordVectors, LocalEmbeddings, rankIdf, sifWeight } from "../core/search/embeddings/wink.ts";
import { beirArticle, type BeirDataset, beirFields, loadBeir, ndcgAt } from "../cli/eval.ts";
import { NO_TERM_FEEDBACK, type TermFeedback } from "../core/search/rank/feedback.ts";
import { articleBag, type Candidate, DataModelIndex } from "../core/search/index/index.ts";
import { FUSION_V2, SCORE_REGULARIZATION } from "../core/search/rank/retrieval_mode.ts";
import { termsWithWords } from "../core/search/text/tokenizer.ts";
import { crossValidate, fmt, mean, repeatedGain, signed } from "./_cv.ts";
import { buildLsi, foldIn, type Lsi, lsiCosine } from "./_lsi.ts";
import { regularizeScores } from "../core/search/rank/regularize.ts";

const K = 100;
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const dirs = Deno.args.length ? Deno.args : ["fixtures/beir/cisi", "fixtures/beir-tiny"];
const JOINT_ALL = Deno.env.get("BENCH_JOINT") === "all";
// The ranking the families are added to: version 2 before score regularization (family 1).
const BASE = { ...FUSION_V2, regularize: undefined };

const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();
const wordVectors = await loadWordVectors(cachePath);
const vocabulary = wordVectors.index.size;

// ---- settings ---------------------------------------------------------------------------------

/** Lexical query weighting (family 2). */
interface Weighting {
  kind: "off" | "idf" | "sif" | "zipf";
  gamma: number;
  /** BM25's k3 (query term frequency saturation); 0: linear, as the service counts it. */
  k3: number;
}
/** Score regularization (family 1). */
interface Regularization {
  /**
   * Neighbours by `vector` cosine, by `terms` (cosine of the whole BM25F bags, log tf x idf), by
   * `forward` (the same over the 32 terms a forward store keeps per document, what an index
   * could hold), or `mix` (the mean of the vector and forward cosines).
   */
  by: "off" | Neighbours;
  /**
   * `mean`: `(1 - a) x own + a x mean of the neighbours' scores` (Diaz 2005, one step);
   * `sim`: `own + a x mean of similarity x score over the neighbours` (only boosts: a document
   * whose neighbours are unlike it keeps its score).
   */
  form: "mean" | "sim";
  /**
   * Steps of Diaz's iteration (mean form): each step smooths toward the neighbours' scores of
   * the step before, anchored to the candidate's own fused score (1: one step).
   */
  steps: number;
  /** Mean form: the neighbours' scores weighted by their (positive) similarity instead of equally. */
  weighted: boolean;
  top: number;
  k: number;
  alpha: number;
}
type Neighbours = "vector" | "terms" | "forward" | "mix" | "lsi";
interface Setting {
  weighting: Weighting;
  rm3: TermFeedback;
  reg: Regularization;
}

const WEIGHTING_OFF: Weighting = { kind: "off", gamma: 0, k3: 0 };
const REG_OFF: Regularization = { by: "off", form: "mean", steps: 1, weighted: false, top: 0, k: 0, alpha: 0 };
const weightings: Weighting[] = [];
for (const k3 of [0, 3, 10, 30]) {
  weightings.push({ kind: "off", gamma: 0, k3 });
  for (const gamma of [0.25, 0.5, 1]) weightings.push({ kind: "idf", gamma, k3 });
  for (const gamma of [0.5, 1, 2]) weightings.push({ kind: "sif", gamma, k3 });
  for (const gamma of [0.5, 1]) weightings.push({ kind: "zipf", gamma, k3 });
}
// Term feedback: off, Anserini's defaults, and the neighbourhood of the setting fitted on CISI.
const rm3s: TermFeedback[] = [
  NO_TERM_FEEDBACK,
  { docs: 10, terms: 10, originalWeight: 0.5, rerank: 200 },
  { docs: 3, terms: 10, originalWeight: 0.7, rerank: 200 },
  { docs: 5, terms: 10, originalWeight: 0.7, rerank: 200 },
  { docs: 3, terms: 20, originalWeight: 0.8, rerank: 200 },
];
const regs: Regularization[] = [REG_OFF];
for (const by of ["vector", "terms", "forward", "mix", "lsi"] as const) {
  for (const top of [20, 50, 100]) {
    for (const k of [3, 5, 10]) {
      for (const alpha of [0.1, 0.2, 0.3, 0.5, 0.7]) {
        regs.push({ by, form: "mean", steps: 1, weighted: false, top, k, alpha });
      }
      for (const alpha of [0.1, 0.2, 0.3, 0.5, 1]) {
        regs.push({ by, form: "sim", steps: 1, weighted: false, top, k, alpha });
      }
    }
  }
}
// Vector neighbours, Diaz's iteration (2 or 3 steps) and similarity-weighted neighbours: measured
// after the one-step forms, alone only (not in the joint grids).
const regsIterated: Regularization[] = [];
for (const top of [20, 50, 100]) {
  for (const k of [3, 5, 10]) {
    for (const alpha of [0.1, 0.2, 0.3, 0.5, 0.7]) {
      for (const [steps, weighted] of [[1, true], [2, false], [2, true], [3, false], [3, true]] as const) {
        regsIterated.push({ by: "vector", form: "mean", steps, weighted, top, k, alpha });
      }
    }
  }
}

const showW = (w: Weighting) => `${w.kind === "off" ? "qtf" : `${w.kind}^${w.gamma}`}${w.k3 ? `, k3 ${w.k3}` : ""}`;
const showR = (r: TermFeedback) => r.docs === 0 ? "" : `rm3 ${r.docs}/${r.terms}/${r.originalWeight}/${r.rerank}`;
const showG = (g: Regularization) =>
  g.by === "off"
    ? ""
    : `reg ${g.form} ${g.by} top ${g.top} k ${g.k} a ${g.alpha}${g.steps > 1 ? `, ${g.steps} steps` : ""}${
      g.weighted ? ", weighted" : ""
    }`;
const show = (s: Setting) => [showW(s.weighting), showR(s.rm3), showG(s.reg)].filter(Boolean).join("; ");

// ---- collections --------------------------------------------------------------------------------

interface Collection {
  name: string;
  data: BeirDataset;
  index: DataModelIndex;
  ids: string[];
  queryVectors: Float32Array[];
  /** Per query: term -> [count, sum of its words' weights] per weighting kind. */
  queryTerms: { term: string; count: number; sif: number; zipf: number }[][];
  /** Document-document similarities (slot x slot), by vectors and by term bags. */
  simVector: Float32Array;
  simTerms: Float32Array;
  simForward: Float32Array;
  simMix: Float32Array;
  simLsi: Float32Array;
  /** Each slot's terms summed over the fields (for LSI). */
  bags: Map<string, number>[];
}

function wordRank(word: string): number {
  return wordVectors.index.get(word) ?? vocabulary;
}

async function prepare(dir: string): Promise<Collection> {
  const data = await loadBeir(dir);
  const docs = data.corpus.map(beirFields);
  const vectors = await embeddings.embed(docs.map(embeddingText));
  const index = new DataModelIndex("dm_cluster", embeddings.dims, {
    removeCommonDirection: embeddings.removeCommonDirection ?? false,
    exactVectors: true,
    forwardTerms: 32,
  });
  const ids: string[] = [];
  const bags: Map<string, number>[] = [];
  data.corpus.forEach((d, i) => {
    const article = beirArticle(d);
    const packed = articleBag(docs[i]!);
    const slot = index.upsert(article, vectors[i]!, packed);
    ids[slot] = d.id;
    const bag = new Map<string, number>();
    packed.terms.forEach((t, j) => {
      let tf = 0;
      for (let f = 0; f < 3; f++) tf += packed.tfs[j * 3 + f]!;
      bag.set(t, tf);
    });
    bags[slot] = bag;
  });
  const n = index.size;
  // Vector neighbours: the cosine the ranking takes (common direction removed from both rows).
  const simVector = new Float32Array(n * n);
  const rows = Array.from({ length: n }, (_, s) => index.vectors.row(s));
  for (let a = 0; a < n; a++) {
    for (let b = a; b < n; b++) {
      const c = a === b ? 1 : index.vectors.cosine(a, rows[b]!);
      simVector[a * n + b] = simVector[b * n + a] = c;
    }
  }
  // Term neighbours: cosine of log-tf x idf bags.
  const tfidf = bags.map((bag) => {
    const v = new Map<string, number>();
    let norm = 0;
    for (const [t, tf] of bag) {
      const w = (1 + Math.log(tf)) * index.bm25.idf(t);
      v.set(t, w);
      norm += w * w;
    }
    norm = Math.sqrt(norm) || 1;
    for (const [t, w] of v) v.set(t, w / norm);
    return v;
  });
  const simTerms = new Float32Array(n * n);
  const postings = new Map<string, { slot: number; w: number }[]>();
  tfidf.forEach((v, s) => {
    for (const [t, w] of v) {
      let p = postings.get(t);
      if (!p) postings.set(t, p = []);
      p.push({ slot: s, w });
    }
  });
  tfidf.forEach((v, a) => {
    for (const [t, w] of v) for (const e of postings.get(t)!) simTerms[a * n + e.slot]! += w * e.w;
  });
  // Forward-store neighbours: the same cosine over each document's stored (most frequent) terms.
  const forward = index.forward!;
  const fwdRows = Array.from({ length: n }, (_, s) => {
    const { ids, tfs } = forward.row(s);
    const v = new Map<number, number>();
    let norm = 0;
    for (let j = 0; j < ids.length && ids[j]! >= 0; j++) {
      const w = (1 + Math.log(tfs[j]!)) * index.bm25.idf(index.bm25.termName(ids[j]!));
      v.set(ids[j]!, w);
      norm += w * w;
    }
    norm = Math.sqrt(norm) || 1;
    for (const [t, w] of v) v.set(t, w / norm);
    return v;
  });
  const simForward = new Float32Array(n * n);
  for (let a = 0; a < n; a++) {
    for (let b = a; b < n; b++) {
      let dot = 0;
      const [x, y] = fwdRows[a]!.size < fwdRows[b]!.size ? [fwdRows[a]!, fwdRows[b]!] : [fwdRows[b]!, fwdRows[a]!];
      for (const [t, w] of x) dot += w * (y.get(t) ?? 0);
      simForward[a * n + b] = simForward[b * n + a] = dot;
    }
  }
  const simMix = simVector.map((v, i) => (v + simForward[i]!) / 2);
  // LSI neighbours: cosines of the documents' 100-dimension LSI vectors (a compact term space).
  const lsi = buildLsi(bags, 100);
  const simLsi = new Float32Array(n * n);
  for (let a = 0; a < n; a++) {
    for (let b = a; b < n; b++) {
      let dot = 0;
      for (let j = 0; j < lsi.k; j++) dot += lsi.docs[a * lsi.k + j]! * lsi.docs[b * lsi.k + j]!;
      simLsi[a * n + b] = simLsi[b * n + a] = dot;
    }
  }
  const queryVectors = await embeddings.embed(data.queries.map((q) => q.text));
  const queryTerms = data.queries.map((q) => {
    const byTerm = new Map<string, { term: string; count: number; sif: number; zipf: number }>();
    termsWithWords(q.text, (term, word) => {
      let e = byTerm.get(term);
      if (!e) byTerm.set(term, e = { term, count: 0, sif: 0, zipf: 0 });
      const rank = wordRank(word);
      e.count++;
      e.sif += sifWeight(rank, vocabulary);
      e.zipf += rankIdf(rank);
    });
    return [...byTerm.values()];
  });
  return {
    name: dir.replace(/\/+$/, "").split("/").at(-1)!,
    data,
    index,
    ids,
    queryVectors,
    queryTerms,
    simVector,
    simTerms,
    simForward,
    simMix,
    simLsi,
    bags,
  };
}

// ---- the ranking --------------------------------------------------------------------------------

function weightedBag(c: Collection, qi: number, w: Weighting): Map<string, number> {
  const bag = new Map<string, number>();
  for (const e of c.queryTerms[qi]!) {
    const qtf = w.k3 > 0 ? ((w.k3 + 1) * e.count) / (w.k3 + e.count) : e.count;
    const mean = w.kind === "sif" ? e.sif / e.count : w.kind === "zipf" ? e.zipf / e.count : 0;
    const factor = w.kind === "idf" ? c.index.bm25.idf(e.term) ** w.gamma : w.kind === "off" ? 1 : mean ** w.gamma;
    bag.set(e.term, qtf * factor);
  }
  return bag;
}

/** The hybrid candidates of a query (service's ranking path) under a weighting and term feedback. */
function candidates(c: Collection, qi: number, w: Weighting, rm3: TermFeedback): Candidate[] {
  const rep = { bag: weightedBag(c, qi, w), vector: c.queryVectors[qi]! };
  const expanded = c.index.withTermFeedback(rep, rm3, { pool: K });
  const fed = c.index.withFeedback(expanded, FUSION_V2.feedbackDocs, FUSION_V2.feedbackWeight, { pool: K });
  return c.index.hybrid(fed, { k: K, fusion: BASE });
}

// Per candidate list, data model and depth: each candidate's nearest neighbours among the
// first `top` (indexes into the list, nearest first), computed once for every k and weight.
const neighbourCache = new WeakMap<Candidate[], Map<string, Int32Array[]>>();
const MAX_K = 10;

function similarities(c: Collection, by: Neighbours): Float32Array {
  return by === "vector"
    ? c.simVector
    : by === "terms"
    ? c.simTerms
    : by === "forward"
    ? c.simForward
    : by === "lsi"
    ? c.simLsi
    : c.simMix;
}

function neighbours(c: Collection, cands: Candidate[], by: Neighbours, m: number): Int32Array[] {
  let perList = neighbourCache.get(cands);
  if (!perList) neighbourCache.set(cands, perList = new Map());
  const key = `${by}:${m}`;
  let lists = perList.get(key);
  if (lists) return lists;
  const n = c.index.size, sim = similarities(c, by);
  lists = [];
  for (let i = 0; i < m; i++) {
    const a = cands[i]!.slot;
    const near: { j: number; s: number }[] = [];
    for (let j = 0; j < m; j++) if (j !== i) near.push({ j, s: sim[a * n + cands[j]!.slot]! });
    near.sort((x, y) => y.s - x.s || x.j - y.j);
    lists.push(Int32Array.from(near.slice(0, MAX_K), (e) => e.j));
  }
  perList.set(key, lists);
  return lists;
}

/** The candidates' order after score regularization (slots, best first). */
function regularized(c: Collection, cands: Candidate[], g: Regularization): number[] {
  if (g.by === "off" || cands.length < 2) return cands.map((x) => x.slot);
  const m = Math.min(g.top, cands.length), n = c.index.size;
  const sim = similarities(c, g.by);
  const near = neighbours(c, cands, g.by, m);
  const own = cands.slice(0, m).map((x) => x.score);
  let f = own;
  for (let step = 0; step < (g.form === "mean" ? g.steps : 1); step++) {
    f = own.map((y, i) => {
      const list = near[i]!, k = Math.min(g.k, list.length), a = cands[i]!.slot;
      let sum = 0, total = 0;
      for (let r = 0; r < k; r++) {
        const j = list[r]!, w = Math.max(0, sim[a * n + cands[j]!.slot]!);
        if (g.form === "sim") sum += w * f[j]!;
        else if (g.weighted) sum += w * f[j]!, total += w;
        else sum += f[j]!, total += 1;
      }
      if (g.form === "sim") return y + g.alpha * (sum / k);
      return total > 0 ? (1 - g.alpha) * y + g.alpha * (sum / total) : y;
    });
  }
  const out = f.map((score, i) => ({ slot: cands[i]!.slot, score, i }));
  out.sort((x, y) => y.score - x.score || x.i - y.i);
  return [...out.map((e) => e.slot), ...cands.slice(m).map((x) => x.slot)];
}

/** Per-query nDCG@10 of every setting in `grid` (candidates computed once per weighting and rm3). */
function scoreGrid(c: Collection, grid: Setting[]): number[][] {
  const byPass = new Map<string, Candidate[][]>();
  return grid.map((s) => {
    const key = `${showW(s.weighting)}|${showR(s.rm3)}`;
    let passes = byPass.get(key);
    if (!passes) {
      passes = c.data.queries.map((_, qi) => candidates(c, qi, s.weighting, s.rm3));
      byPass.set(key, passes);
    }
    return c.data.queries.map((q, qi) =>
      ndcgAt(regularized(c, passes[qi]!, s.reg).slice(0, 10).map((slot) => c.ids[slot]!), c.data.qrels.get(q.id)!, 10)
    );
  });
}

// ---- output (cross-validation is bench/_cv.ts) ------------------------------------------------------

// ---- run ------------------------------------------------------------------------------------------

const t0 = performance.now();
const collections: Collection[] = [];
for (const d of dirs) collections.push(await prepare(d));
const dev = collections[0]!;
console.log(
  `prepared ${collections.map((c) => c.name).join(", ")} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

const OFF: Setting = { weighting: WEIGHTING_OFF, rm3: NO_TERM_FEEDBACK, reg: REG_OFF };
const grid: Setting[] = [OFF];
const add = (s: Setting) => {
  if (s.weighting === WEIGHTING_OFF && s.rm3 === NO_TERM_FEEDBACK && s.reg === REG_OFF) return;
  grid.push(s);
};
// Each family alone, then the pairs and triples (regularization with a few weightings: the grid
// would otherwise be 40 x 5 x 73).
for (const reg of [...regs, ...regsIterated]) add({ weighting: WEIGHTING_OFF, rm3: NO_TERM_FEEDBACK, reg });
for (const weighting of weightings) add({ weighting, rm3: NO_TERM_FEEDBACK, reg: REG_OFF });
for (const rm3 of rm3s) add({ weighting: WEIGHTING_OFF, rm3, reg: REG_OFF });
// Regularization with term feedback (family 3); with BENCH_JOINT=all also with every weighting
// (40 x 5 x 361 settings, several minutes).
for (const rm3 of rm3s.slice(1)) for (const reg of regs.slice(1)) add({ weighting: WEIGHTING_OFF, rm3, reg });
for (const weighting of weightings) for (const rm3 of rm3s.slice(1)) add({ weighting, rm3, reg: REG_OFF });
if (JOINT_ALL) {
  for (const weighting of weightings.filter((w) => w !== WEIGHTING_OFF)) {
    for (const rm3 of rm3s) for (const reg of regs.slice(1)) add({ weighting, rm3, reg });
  }
}
const t1 = performance.now();
const scores = scoreGrid(dev, grid);
const cands = grid.map((key, i) => ({ key, scores: scores[i]! }));
const base = mean(cands[0]!.scores);
console.log(
  `# dev ${dev.name}: ${dev.data.corpus.length} documents, ${dev.data.queries.length} queries; ${grid.length} settings in ${
    ((performance.now() - t1) / 1000).toFixed(1)
  } s; hybrid (off) ${fmt(base)}`,
);
// The other collections' score of every setting: a family may be limited to the settings that
// lose nothing there (a constraint from outside the dev queries, so the dev estimate stays held out).
const others = collections.slice(1).map((c) => scoreGrid(c, grid).map(mean));
const keepsOthers = new Set(grid.filter((_, i) => others.every((o) => o[i]! >= o[0]! - 1e-9)));
console.log("\n## best 10 settings on all dev queries (fitted, not held out)");
for (const c of [...cands].sort((a, b) => mean(b.scores) - mean(a.scores)).slice(0, 10)) {
  console.log(`${show(c.key).padEnd(80)} ${fmt(mean(c.scores))}`);
}

const isOffW = (w: Weighting) => w.kind === "off" && w.k3 === 0;
/**
 * Regularization alone (no weighting, no term feedback), with neighbours `by` and in `form`; the
 * one-step, equally weighted settings unless `iterated` (then only the others and off).
 */
const reg = (
  by: Neighbours[],
  { form, tinyKept = false, iterated = false }: {
    form?: Regularization["form"];
    tinyKept?: boolean;
    iterated?: boolean;
  } = {},
) =>
(s: Setting) =>
  isOffW(s.weighting) && s.rm3.docs === 0 && (s.reg.by === "off" ||
    (by.includes(s.reg.by) && (!form || s.reg.form === form) && (!tinyKept || keepsOthers.has(s)) &&
      iterated === (s.reg.steps > 1 || s.reg.weighted)));
const weighting = (kinds: Weighting["kind"][]) => (s: Setting) =>
  kinds.includes(s.weighting.kind) && s.rm3.docs === 0 && s.reg.by === "off";
const ALL_BY: Neighbours[] = ["vector", "terms", "forward", "mix", "lsi"];
const families: [string, (s: Setting) => boolean][] = [
  ["regularization, vector neighbours", reg(["vector"])],
  ["regularization, vector neighbours, mean form", reg(["vector"], { form: "mean" })],
  ["regularization, vector neighbours, sim form", reg(["vector"], { form: "sim" })],
  ["regularization, vector neighbours, beir-tiny kept", reg(["vector"], { tinyKept: true })],
  ["regularization, vector neighbours, iterated or weighted", reg(["vector"], { iterated: true })],
  [
    "regularization, vector neighbours, iterated or weighted, beir-tiny kept",
    reg(["vector"], { iterated: true, tinyKept: true }),
  ],
  [
    "regularization, vector neighbours, mean form, every variant",
    (s) => reg(["vector"], { form: "mean" })(s) || reg(["vector"], { iterated: true })(s),
  ],
  [
    "regularization, vector neighbours, mean form, every variant, beir-tiny kept",
    (s) =>
      reg(["vector"], { form: "mean", tinyKept: true })(s) || reg(["vector"], { iterated: true, tinyKept: true })(s),
  ],
  ["regularization, term neighbours (whole bags)", reg(["terms"])],
  ["regularization, term neighbours (whole bags), beir-tiny kept", reg(["terms"], { tinyKept: true })],
  ["regularization, forward-store neighbours", reg(["forward"])],
  ["regularization, forward-store neighbours, beir-tiny kept", reg(["forward"], { tinyKept: true })],
  ["regularization, mixed neighbours", reg(["mix"])],
  ["regularization, mixed neighbours, beir-tiny kept", reg(["mix"], { tinyKept: true })],
  ["regularization, LSI neighbours (k 100)", reg(["lsi"])],
  ["regularization, LSI neighbours (k 100), beir-tiny kept", reg(["lsi"], { tinyKept: true })],
  ["regularization, any neighbours", reg(ALL_BY)],
  ["regularization, any neighbours, beir-tiny kept", reg(ALL_BY, { tinyKept: true })],
  ["query weighting: k3 only", weighting(["off"])],
  ["query weighting: idf", weighting(["off", "idf"])],
  ["query weighting: sif", weighting(["off", "sif"])],
  ["query weighting: zipf", weighting(["off", "zipf"])],
  ["query weighting: all", weighting(["off", "idf", "sif", "zipf"])],
  ["term feedback (rm3) alone", (s) => isOffW(s.weighting) && s.reg.by === "off"],
  ["query weighting + rm3", (s) => s.reg.by === "off"],
  ["regularization + rm3", (s) => isOffW(s.weighting)],
  ["regularization + rm3, beir-tiny kept", (s) => isOffW(s.weighting) && keepsOthers.has(s)],
  ["all families jointly", () => true],
  ["all families jointly, beir-tiny kept", (s) => keepsOthers.has(s)],
];
console.log("\n## 5-fold cross-validation on the dev queries (held-out hybrid nDCG@10; off is a candidate)");
const fitted = new Map<string, Setting>();
for (const [label, keep] of families) {
  const family = cands.filter((c) => c.key === OFF || keep(c.key));
  if (family.length < 2) continue;
  const cv = crossValidate(family);
  const r = repeatedGain(family, cands[0]!.scores);
  const best = [...family].sort((a, b) => mean(b.scores) - mean(a.scores))[0]!;
  fitted.set(label, best.key);
  console.log(
    `${label} (${family.length}): fitted ${fmt(mean(best.scores))} (${
      signed(mean(best.scores) - base)
    }); held out by position ${fmt(cv.cv)} (${signed(cv.cv - base)}); 50 random fold sets ${signed(r.mean)} (${
      signed(r.low)
    } to ${signed(r.high)}), ${(r.positive * 100).toFixed(0)} % positive`,
  );
  console.log(`  picks: ${cv.picks.map((p) => show(p) || "off").join(" | ")}`);
}

console.log("\n## the fitted setting of each family on every collection");
for (const [label, s] of fitted) {
  const changed: string[] = [];
  const line = collections.map((c) => {
    const [offQ, onQ] = scoreGrid(c, [OFF, s]);
    const [off, on] = [mean(offQ!), mean(onQ!)];
    if (c !== dev) {
      c.data.queries.forEach((q, i) => {
        if (offQ![i] !== onQ![i]) changed.push(`    ${c.name} ${q.id}: ${fmt(offQ![i]!)} -> ${fmt(onQ![i]!)}`);
      });
    }
    return `${c.name} ${fmt(on!)} (${signed(on! - off!)})`;
  });
  console.log(`${label}: ${show(s) || "off"}\n  ${line.join("  ")}`);
  // After the line they belong to (they were printed before it).
  if (Deno.env.get("BENCH_DEBUG")) { for (const l of changed) console.log(l); }
}

// ---- a third side: LSI fitted on the collection ---------------------------------------------------

// Truncated SVD of the collection's log tf x idf matrix (bench/_lsi.ts), queries folded in; the
// 100 candidates re-scored as `(1 - w) x their score + w x LSI cosine` (min-max over the
// candidates), on top of version 2 before regularization and on top of the shipped ranking.
if (Deno.env.get("BENCH_LSI") !== "0") {
  const LSI_K = [100, 200], LSI_W = [0.05, 0.1, 0.15, 0.2, 0.3, 0.4];
  type LsiSetting = { k: number; w: number; regularized: boolean };
  const perCollection = collections.map((c) => {
    const spaces = new Map<number, Lsi>();
    for (const k of LSI_K) {
      const t = performance.now();
      spaces.set(k, buildLsi(c.bags, k));
      console.log(`${c.name}: LSI k ${k} built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    const queries = c.data.queries.map((q, qi) => {
      const bag = new Map(c.queryTerms[qi]!.map((e) => [e.term, e.count] as const));
      const plain = candidates(c, qi, WEIGHTING_OFF, NO_TERM_FEEDBACK);
      const near = c.index.similarities(plain.slice(0, SCORE_REGULARIZATION.top).map((x) => x.slot));
      const shipped = regularizeScores(plain, near.cosines, SCORE_REGULARIZATION, (i) => near.hasVector[i] === 1);
      return { bag, plain, shipped, rels: c.data.qrels.get(q.id)! };
    });
    const score = (s: LsiSetting) =>
      queries.map((q) => {
        const list = s.regularized ? q.shipped : q.plain;
        if (s.w === 0) return ndcgAt(list.slice(0, 10).map((x) => c.ids[x.slot]!), q.rels, 10);
        const lsi = spaces.get(s.k)!, qv = foldIn(lsi, q.bag);
        const cos = list.map((x) => lsiCosine(lsi, qv, x.slot));
        const hi = Math.max(...cos), lo = Math.min(...cos);
        const order = list.map((x, i) => ({
          slot: x.slot,
          i,
          score: (1 - s.w) * x.score + s.w * (hi > lo ? (cos[i]! - lo) / (hi - lo) : 0),
        })).sort((a, b) => b.score - a.score || a.i - b.i);
        return ndcgAt(order.slice(0, 10).map((x) => c.ids[x.slot]!), q.rels, 10);
      });
    return { c, score };
  });
  const lsiShow = (s: LsiSetting) => s.w === 0 ? "off" : `lsi k ${s.k} weight ${s.w}`;
  for (const regularized of [false, true]) {
    const settings: LsiSetting[] = [{ k: 0, w: 0, regularized }];
    for (const k of LSI_K) for (const w of LSI_W) settings.push({ k, w, regularized });
    const [devScores, ...rest] = perCollection;
    const cands = settings.map((key) => ({ key, scores: devScores!.score(key) }));
    const off = mean(cands[0]!.scores);
    const best = [...cands].sort((a, b) => mean(b.scores) - mean(a.scores))[0]!;
    const cv = crossValidate(cands), r = repeatedGain(cands, cands[0]!.scores);
    console.log(
      `\nLSI over ${
        regularized ? "the shipped ranking (regularized)" : "version 2 before regularization"
      } (${cands.length}): off ${fmt(off)}; fitted ${fmt(mean(best.scores))} (${signed(mean(best.scores) - off)}, ${
        lsiShow(best.key)
      }); held out by position ${fmt(cv.cv)} (${signed(cv.cv - off)}); 50 random fold sets ${signed(r.mean)} (${
        signed(r.low)
      } to ${signed(r.high)}), ${(r.positive * 100).toFixed(0)} % positive`,
    );
    console.log(`  picks: ${cv.picks.map(lsiShow).join(" | ")}`);
    for (const o of rest) {
      const [a, b] = [mean(o.score(settings[0]!)), mean(o.score(best.key))];
      console.log(`  ${o.c.name}: off ${fmt(a)}, fitted ${fmt(b)} (${signed(b - a)})`);
    }
  }
}
