/**
 * Relevance evaluation over BEIR-format folders: `corpus.jsonl` ({_id, title, text}),
 * `queries.jsonl` ({_id, text}) and `qrels/test.tsv` (query-id, corpus-id, score; header line).
 * Prints nDCG@10 and recall@100 of BM25, vector and hybrid ranking per collection, over the
 * same index and ranking code the service uses (the default ranking version), their mean over
 * the collections, and the p50 latency of one hybrid query (embedding included).
 *
 *   deno task eval DIR [DIR...] [--json FILE] [--provider local|openai --base-url URL --model NAME]
 *                  [--term-feedback] [--no-regularization] [--ann]
 *
 * `--term-feedback` ranks hybrid with the term feedback candidate (RM3, not in the default
 * ranking; see docs/relevance.md) added to the default version. `--no-regularization` ranks
 * hybrid without the default version's score regularization (the ranking before it). `--ann` answers the vector side
 * of the hybrid ranking from the IVF index whatever the collection's size (the service uses it
 * from ANN_MIN_ROWS articles), to measure what the approximation costs in relevance.
 * The API key of an OpenAI-compatible server is read from EMBEDDINGS_API_KEY.
 */
import { parseArgs } from "node:util";
import { parseConfig } from "../core/config.ts";
import type { Article, EmbeddingProvider } from "../core/search/mod.ts";
import {
  type AnnOptions,
  articleBag,
  Bm25Index,
  DataModelIndex,
  defaultCacheName,
  embeddingText,
  FORWARD_TERMS_PER_DOC,
  type Fusion,
  FUSION_V2,
  LocalEmbeddings,
  OpenAiEmbeddings,
  TERM_FEEDBACK_CANDIDATE,
  terms,
  TopK,
} from "../core/search/mod.ts";

/** A loaded BEIR dataset. */
export interface BeirDataset {
  corpus: { id: string; title: string; text: string }[];
  queries: { id: string; text: string }[];
  /** query id -> document id -> graded relevance. */
  qrels: Map<string, Map<string, number>>;
}

/** A document of a {@link BeirDataset}. */
export type BeirDocument = BeirDataset["corpus"][number];

/** The fields of a BEIR document the index reads: its title, and its text as the body. */
export function beirFields(doc: BeirDocument): { title: string; summary: string; body: string } {
  return { title: doc.title, summary: "", body: doc.text };
}

/** A BEIR document as an article for `DataModelIndex.upsert`: no site, dates or preview. */
export function beirArticle(doc: BeirDocument): Article {
  return {
    id: doc.id,
    dataModelId: "",
    url: `beir:${doc.id}`,
    site: "",
    siteDomain: "",
    pubdate: "",
    pubdateUnix: 0,
    previewContent: "",
    ...beirFields(doc),
    createdAt: "",
    updatedAt: "",
  };
}

/** Metrics of one ranking method. */
export interface MethodScores {
  ndcg10: number;
  recall100: number;
}

/** nDCG@10 of each method on one query. */
export type QueryScores = { id: string } & Record<"bm25" | "vector" | "hybrid", number>;

/**
 * The three methods of one collection, the p50 latency of a hybrid query in milliseconds, and
 * (from {@link evaluate}, not in a mean) each query's nDCG@10, for paired comparisons.
 */
export type CollectionScores = Record<"bm25" | "vector" | "hybrid", MethodScores> & {
  p50Ms: number;
  perQuery?: QueryScores[];
};

/** Reads a BEIR folder (only queries that have qrels are kept). */
export async function loadBeir(dir: string): Promise<BeirDataset> {
  const lines = async (path: string) => (await Deno.readTextFile(path)).split(/\r?\n/).filter((l) => l.trim());
  const corpus = (await lines(`${dir}/corpus.jsonl`)).map((l) => {
    const d = JSON.parse(l);
    return { id: String(d._id), title: String(d.title ?? ""), text: String(d.text ?? "") };
  });
  const qrels = new Map<string, Map<string, number>>();
  for (const l of (await lines(`${dir}/qrels/test.tsv`))) {
    const [q, d, s] = l.split("\t");
    if (!q || !d || s === undefined || !/^-?\d+$/.test(s.trim())) continue; // header or junk
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)!.set(d, Number(s));
  }
  const queries = (await lines(`${dir}/queries.jsonl`)).map((l) => {
    const q = JSON.parse(l);
    return { id: String(q._id), text: String(q.text ?? "") };
  }).filter((q) => qrels.has(q.id));
  return { corpus, queries, qrels };
}

/** nDCG@k with graded gains (2^rel - 1). */
export function ndcgAt(ranked: string[], rels: Map<string, number>, k: number): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    const r = rels.get(id) ?? 0;
    if (r > 0) dcg += (2 ** r - 1) / Math.log2(i + 2);
  });
  const ideal = [...rels.values()].filter((r) => r > 0).sort((a, b) => b - a).slice(0, k);
  const idcg = ideal.reduce((s, r, i) => s + (2 ** r - 1) / Math.log2(i + 2), 0);
  return idcg === 0 ? 0 : dcg / idcg;
}

/** Share of the relevant documents found in the first k. */
export function recallAt(ranked: string[], rels: Map<string, number>, k: number): number {
  const relevant = [...rels].filter(([, r]) => r > 0).map(([id]) => id);
  if (relevant.length === 0) return 0;
  const top = new Set(ranked.slice(0, k));
  return relevant.filter((id) => top.has(id)).length / relevant.length;
}

/**
 * A collection's corpus in a new index, embedded in batches of 256: what `evaluate` ranks, and what
 * the ranking benches rank (bench/_ranking_world.ts), so their figures are the harness's.
 * @returns the index and the document id of each slot
 */
export async function indexCollection(
  data: BeirDataset,
  embeddings: EmbeddingProvider,
  { forwardTerms = 0, ann }: { forwardTerms?: number; ann?: AnnOptions } = {},
): Promise<{ index: DataModelIndex; ids: string[] }> {
  await embeddings.init();
  const index = new DataModelIndex("dm_eval", embeddings.dims, {
    removeCommonDirection: embeddings.removeCommonDirection ?? false,
    // The embeddings here are f32, not read back from int8 storage: score them as they are.
    exactVectors: true,
    forwardTerms,
    ...(ann ? { ann } : {}),
  });
  const ids: string[] = [];
  for (let i = 0; i < data.corpus.length; i += 256) {
    const chunk = data.corpus.slice(i, i + 256);
    const docs = chunk.map(beirFields);
    const vectors = await embeddings.embed(docs.map(embeddingText));
    chunk.forEach((d, j) => {
      ids[index.upsert(beirArticle(d), vectors[j]!, articleBag(docs[j]!))] = d.id;
    });
  }
  return { index, ids };
}

/** Indexes the corpus and scores the three methods (hybrid with `fusion`, the default version). */
export async function evaluate(
  data: BeirDataset,
  embeddings: EmbeddingProvider,
  { fusion = FUSION_V2, ann }: { fusion?: Fusion; ann?: AnnOptions } = {},
): Promise<CollectionScores> {
  const { index, ids } = await indexCollection(data, embeddings, {
    forwardTerms: fusion.termFeedback ? FORWARD_TERMS_PER_DOC : 0,
    ann,
  });
  await index.annReady();
  const totals = {
    bm25: { ndcg10: 0, recall100: 0 },
    vector: { ndcg10: 0, recall100: 0 },
    hybrid: { ndcg10: 0, recall100: 0 },
  };
  const times: number[] = [];
  const perQuery: QueryScores[] = [];
  for (const q of data.queries) {
    const rels = data.qrels.get(q.id)!;
    const started = performance.now();
    // The service's query path: embed, feedback, one scan, fusion.
    const [vector] = await embeddings.embed([q.text]);
    const rep = { bag: Bm25Index.bag(terms(q.text)), vector: vector! };
    const expanded = index.withTermFeedback(rep, fusion.termFeedback, { pool: 100 });
    const fed = index.withFeedback(expanded, fusion.feedbackDocs, fusion.feedbackWeight, { pool: 100 });
    const hybrid = index.hybrid(fed, { k: 100, fusion }).map((c) => ids[c.slot]!);
    times.push(performance.now() - started);

    const lex = index.bm25.score(rep.bag);
    const lexTop = new TopK(100);
    lex.slots.forEach((s, i) => lexTop.push(s, lex.scores[i]!));
    const cos = index.cosines(rep.vector);
    const vecTop = new TopK(100);
    for (let s = 0; s < index.size; s++) vecTop.push(s, cos[s]!);
    const rankings = {
      bm25: lexTop.drain().map((e) => ids[e.id]!),
      vector: vecTop.drain().map((e) => ids[e.id]!),
      hybrid,
    };
    const scores: QueryScores = { id: q.id, bm25: 0, vector: 0, hybrid: 0 };
    for (const m of ["bm25", "vector", "hybrid"] as const) {
      scores[m] = ndcgAt(rankings[m], rels, 10);
      totals[m].ndcg10 += scores[m];
      totals[m].recall100 += recallAt(rankings[m], rels, 100);
    }
    perQuery.push(scores);
  }
  const n = Math.max(1, data.queries.length);
  for (const m of Object.values(totals)) {
    m.ndcg10 /= n;
    m.recall100 /= n;
  }
  times.sort((a, b) => a - b);
  return { ...totals, p50Ms: times[Math.floor((times.length - 1) / 2)] ?? 0, perQuery };
}

const METHODS = ["bm25", "vector", "hybrid"] as const;

/** The mean of each method's metrics over collections. */
export function meanScores(all: CollectionScores[]): CollectionScores {
  const n = Math.max(1, all.length);
  const avg = (f: (c: CollectionScores) => number) => all.reduce((s, c) => s + f(c), 0) / n;
  const out = { p50Ms: avg((c) => c.p50Ms) } as CollectionScores;
  for (const m of METHODS) out[m] = { ndcg10: avg((c) => c[m].ndcg10), recall100: avg((c) => c[m].recall100) };
  return out;
}

/** The printed report of one collection. */
export function formatReport(data: BeirDataset, scores: CollectionScores, name?: string): string {
  const rows = METHODS.map((m) =>
    `${m.padEnd(8)} ${scores[m].ndcg10.toFixed(4).padStart(9)} ${scores[m].recall100.toFixed(4).padStart(11)}`
  );
  return [
    `${name ? `${name}: ` : ""}corpus ${data.corpus.length} documents, ${data.queries.length} queries with qrels`,
    `method     nDCG@10  recall@100`,
    ...rows,
    `p50 hybrid query ${scores.p50Ms.toFixed(2)} ms`,
  ].join("\n");
}

/** The printed table of every collection and the mean. */
export function formatSummary(rows: { name: string; scores: CollectionScores }[]): string {
  const line = (name: string, s: CollectionScores) =>
    `${name.padEnd(24)} ${METHODS.map((m) => s[m].ndcg10.toFixed(4).padStart(8)).join(" ")} ${
      s.p50Ms.toFixed(2).padStart(8)
    }`;
  return [
    `${"nDCG@10".padEnd(24)} ${METHODS.map((m) => m.padStart(8)).join(" ")} ${"p50 ms".padStart(8)}`,
    ...rows.map((r) => line(r.name, r.scores)),
    line("mean", meanScores(rows.map((r) => r.scores))),
  ].join("\n");
}

const USAGE =
  "usage: deno task eval DIR [DIR...] [--json FILE] [--provider local|openai --base-url URL --model NAME] [--term-feedback] [--no-regularization] [--ann]";

if (import.meta.main) {
  let args;
  try {
    args = parseArgs({
      args: Deno.args,
      allowPositionals: true,
      options: {
        json: { type: "string" },
        provider: { type: "string", default: "local" },
        "base-url": { type: "string" },
        model: { type: "string" },
        "term-feedback": { type: "boolean", default: false },
        "no-regularization": { type: "boolean", default: false },
        ann: { type: "boolean", default: false },
      },
    });
  } catch {
    console.error(USAGE);
    Deno.exit(2);
  }
  const dirs = args.positionals;
  const { provider } = args.values;
  if (dirs.length === 0 || (provider !== "local" && provider !== "openai")) {
    console.error(USAGE);
    Deno.exit(2);
  }
  const config = parseConfig(Deno.env.toObject());
  let embeddings: EmbeddingProvider;
  if (provider === "openai") {
    const baseUrl = args.values["base-url"] ?? config.embeddings.baseUrl;
    if (!baseUrl) {
      console.error("--provider openai needs --base-url (or EMBEDDINGS_BASE_URL)");
      Deno.exit(2);
    }
    embeddings = new OpenAiEmbeddings({
      baseUrl,
      model: args.values.model ?? config.embeddings.model,
      apiKey: config.embeddings.apiKey,
    });
  } else {
    embeddings = new LocalEmbeddings({
      cachePath: config.embeddings.cachePath ??
        `${config.dataDir.replace(/\/+$/, "")}/embeddings/${defaultCacheName()}`,
      jsonPath: config.embeddings.wordVectorsPath,
    });
  }
  const rows: { name: string; dir: string; scores: CollectionScores }[] = [];
  for (const dir of dirs) {
    const name = dir.replace(/\/+$/, "").split("/").at(-1) || dir;
    const data = await loadBeir(dir);
    const fusion: Fusion = {
      ...FUSION_V2,
      ...(args.values["term-feedback"] ? { termFeedback: TERM_FEEDBACK_CANDIDATE } : {}),
      ...(args.values["no-regularization"] ? { regularize: undefined } : {}),
    };
    const scores = await evaluate(data, embeddings, { fusion, ann: args.values.ann ? { minRows: 0 } : undefined });
    console.log(formatReport(data, scores, name) + "\n");
    rows.push({ name, dir, scores });
  }
  console.log(formatSummary(rows));
  if (args.values.json) {
    const mean = meanScores(rows.map((r) => r.scores));
    await Deno.writeTextFile(
      args.values.json,
      JSON.stringify({ provider: embeddings.id, collections: rows, mean }, null, 2) + "\n",
    );
  }
}
