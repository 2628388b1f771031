/**
 * Relevance evaluation over a BEIR-format folder: `corpus.jsonl` ({_id, title, text}),
 * `queries.jsonl` ({_id, text}) and `qrels/test.tsv` (query-id, corpus-id, score; header line).
 * Prints nDCG@10 and recall@100 for BM25, vector and hybrid ranking over the same index the
 * service uses.
 *
 *   deno task eval <dir>
 */
import { parseConfig } from "../config.ts";
import type { Article } from "./articles.ts";
import { embeddingText } from "./articles.ts";
import { Bm25Index } from "./bm25.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import { defaultCacheName, LocalEmbeddings } from "./embeddings/wink.ts";
import { articleBag, DataModelIndex } from "./index.ts";
import { terms } from "./tokenizer.ts";
import { TopK } from "./topk.ts";

/** A loaded BEIR dataset. */
export interface BeirDataset {
  corpus: { id: string; title: string; text: string }[];
  queries: { id: string; text: string }[];
  /** query id -> document id -> graded relevance. */
  qrels: Map<string, Map<string, number>>;
}

/** Metrics of one ranking method. */
export interface MethodScores {
  ndcg10: number;
  recall100: number;
}

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

/** Indexes the corpus and scores the three methods. */
export async function evaluate(
  data: BeirDataset,
  embeddings: EmbeddingProvider,
): Promise<Record<"bm25" | "vector" | "hybrid", MethodScores>> {
  await embeddings.init();
  const index = new DataModelIndex("dm_eval", embeddings.dims);
  const ids: string[] = [];
  for (let i = 0; i < data.corpus.length; i += 256) {
    const chunk = data.corpus.slice(i, i + 256);
    const docs = chunk.map((d) => ({ title: d.title, summary: "", body: d.text }));
    const vectors = await embeddings.embed(docs.map(embeddingText));
    chunk.forEach((d, j) => {
      const article = {
        id: d.id,
        url: `beir:${d.id}`,
        site: "",
        siteDomain: "",
        pubdate: "",
        pubdateUnix: 0,
        previewContent: "",
        ...docs[j]!,
      } as unknown as Article;
      ids[index.upsert(article, vectors[j]!, undefined, articleBag(docs[j]!))] = d.id;
    });
  }
  const totals = {
    bm25: { ndcg10: 0, recall100: 0 },
    vector: { ndcg10: 0, recall100: 0 },
    hybrid: { ndcg10: 0, recall100: 0 },
  };
  const qVectors = await embeddings.embed(data.queries.map((q) => q.text));
  data.queries.forEach((q, qi) => {
    const rels = data.qrels.get(q.id)!;
    const rep = { bag: Bm25Index.bag(terms(q.text)), vector: qVectors[qi]! };
    const lex = index.bm25.score(rep.bag);
    const lexTop = new TopK(100);
    lex.slots.forEach((s, i) => lexTop.push(s, lex.scores[i]!));
    const cos = index.cosines(rep.vector);
    const vecTop = new TopK(100);
    for (let s = 0; s < index.size; s++) vecTop.push(s, cos[s]!);
    const rankings = {
      bm25: lexTop.drain().map((e) => ids[e.id]!),
      vector: vecTop.drain().map((e) => ids[e.id]!),
      hybrid: index.hybrid(rep, { k: 100 }).map((c) => ids[c.slot]!),
    };
    for (const m of ["bm25", "vector", "hybrid"] as const) {
      totals[m].ndcg10 += ndcgAt(rankings[m], rels, 10);
      totals[m].recall100 += recallAt(rankings[m], rels, 100);
    }
  });
  const n = Math.max(1, data.queries.length);
  for (const m of Object.values(totals)) {
    m.ndcg10 /= n;
    m.recall100 /= n;
  }
  return totals;
}

/** The printed report. */
export function formatReport(data: BeirDataset, scores: Record<string, MethodScores>): string {
  const rows = Object.entries(scores).map(([m, s]) =>
    `${m.padEnd(8)} ${s.ndcg10.toFixed(4).padStart(9)} ${s.recall100.toFixed(4).padStart(11)}`
  );
  return [
    `corpus ${data.corpus.length} documents, ${data.queries.length} queries with qrels`,
    `method     nDCG@10  recall@100`,
    ...rows,
  ].join("\n");
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (!dir) {
    console.error("usage: deno task eval <beir-dir>");
    Deno.exit(2);
  }
  const config = parseConfig(Deno.env.toObject());
  const embeddings = new LocalEmbeddings({
    cachePath: config.embeddings.cachePath ?? `${config.dataDir.replace(/\/+$/, "")}/embeddings/${defaultCacheName()}`,
    jsonPath: config.embeddings.wordVectorsPath,
  });
  const data = await loadBeir(dir);
  console.log(formatReport(data, await evaluate(data, embeddings)));
}
