/**
 * LanceDB as a peer in the search benchmarks: the same articles and our own vectors in a LanceDB
 * table on disk, its full-text index (BM25) on the text and an HNSW index (IVF_HNSW_SQ, cosine)
 * on the vectors, hybrid queries fused by its RRF reranker. The plan of a hybrid query is checked
 * so a silent flat scan shows (the figures would then not be LanceDB's indexed search).
 */
import type { Table } from "@lancedb/lancedb";

/** One article as LanceDB indexes it. */
export interface LanceRow {
  id: number;
  /** Title, summary and body opening (what our BM25F indexes). */
  text: string;
  vector: Float32Array;
}

/** A LanceDB table ready for hybrid queries. */
export interface LancePeer {
  /** Seconds to write the rows, then to build the two indexes (0 when reused from disk). */
  writeS: number;
  indexS: number;
  rows: number;
  /** The `k` best ids of a hybrid query (text and vector), fused by RRF. */
  hybrid(text: string, vector: Float32Array, k: number): Promise<number[]>;
  /** One line saying which operators the hybrid query's plan uses. */
  plan: string;
  /** Whether both sides use their index (an ANN vector search, an indexed full-text match). */
  indexed: boolean;
}

const TABLE = "articles";

/**
 * Writes `batches` to a LanceDB table in `dir` and indexes it; with `reuse`, a table already in
 * `dir` (from an earlier run over the same articles) is opened instead.
 */
export async function lancePeer(
  dir: string,
  batches: () => AsyncIterable<LanceRow[]> | Iterable<LanceRow[]>,
  { reuse = false }: { reuse?: boolean } = {},
): Promise<LancePeer> {
  // Its per-query deprecation warnings would drown the figures; the level is read when the module loads.
  if (!Deno.env.get("LANCEDB_LOG")) Deno.env.set("LANCEDB_LOG", "error");
  // On 2 cores its CPU pool has 2 threads, and its full-text index build of 60,000 or more real
  // documents then waits forever (no thread busy); a larger pool builds it.
  if (!Deno.env.get("LANCE_CPU_THREADS")) Deno.env.set("LANCE_CPU_THREADS", "8");
  const { connect, Index, rerankers } = await import("@lancedb/lancedb");
  const db = await connect(dir);
  let table: Table | undefined;
  let writeS = 0, indexS = 0;
  if (reuse && (await db.tableNames()).includes(TABLE)) {
    table = await db.openTable(TABLE);
  } else {
    let t = performance.now();
    for await (const batch of batches()) {
      const data = batch.map((r) => ({ id: r.id, text: r.text, vector: Array.from(r.vector) }));
      if (!table) table = await db.createTable(TABLE, data, { mode: "overwrite" });
      else await table.add(data);
    }
    if (!table) throw new Error("no rows for LanceDB");
    writeS = (performance.now() - t) / 1000;
    t = performance.now();
    await table.createIndex("text", { config: Index.fts() });
    // One HNSW graph per IVF partition: with LanceDB's default of one partition the graph of
    // 100,000 rows took minutes to build here; sqrt(rows) / 4 partitions (79 at 100k, 250 at 1M).
    const numPartitions = Math.max(1, Math.round(Math.sqrt(await table.countRows()) / 4));
    await table.createIndex("vector", { config: Index.hnswSq({ distanceType: "cosine", numPartitions }) });
    indexS = (performance.now() - t) / 1000;
  }
  const rows = await table.countRows();
  const rrf = await rerankers.RRFReranker.create();
  const query = (text: string, vector: Float32Array, k: number) =>
    table!.query().fullTextSearch(text).nearestTo(Array.from(vector)).distanceType("cosine").rerank(rrf)
      .select(["id"]).limit(k);
  // The plan of a vector query with its index, and of a full-text query.
  const vectorPlan = await table.query().nearestTo(new Array(await dims(table)).fill(0.1)).distanceType("cosine")
    .limit(10).explainPlan();
  const textPlan = await table.query().fullTextSearch("storm").limit(10).explainPlan();
  const ops = (plan: string) => [...new Set(plan.match(/[A-Za-z]+(?:Exec|Index|Query|Partition)\b/g) ?? [])];
  const ann = /ANN/i.test(vectorPlan) && !/KNNVectorDistance|flat/i.test(vectorPlan.split("\n")[0] ?? "");
  const fts = /MatchQuery|FTS/i.test(textPlan) && !/FlatMatchQuery/.test(textPlan);
  return {
    writeS,
    indexS,
    rows,
    plan: `vector: ${ops(vectorPlan).join(", ")}; text: ${ops(textPlan).join(", ")}`,
    indexed: ann && fts,
    async hybrid(text, vector, k) {
      const got = await query(text, vector, k).toArray();
      return got.map((r: { id: number }) => Number(r.id));
    },
  };
}

async function dims(table: Table): Promise<number> {
  const schema = await table.schema();
  const field = schema.fields.find((f) => f.name === "vector");
  const size = (field?.type as { listSize?: number } | undefined)?.listSize;
  if (!size) throw new Error("the LanceDB table has no fixed-size vector column");
  return size;
}
