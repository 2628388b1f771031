/**
 * Scale benchmark: one data model with N articles (default 1,000,000) in one process.
 *
 *   BENCH_ARTICLES=100000 deno run -A --v8-flags=--max-old-space-size=6144 bench/scale_1m.ts   (API ingest, 100k)
 *   deno run -A --v8-flags=--max-old-space-size=6144 bench/scale_1m.ts --phase=seed           (1M written to KV)
 *
 * 1. Ingest through the API: `POST /v1/data-models/{dm}/articles` on the real app (`app.request`,
 *    the whole Hono stack without a socket) in batches of 1,000 generated articles; the server
 *    writes the extractive summaries and embeddings (local word vectors) and stores in a KV file.
 * 2. Index build from KV at start, resident memory and `semantic` latency: a fresh child process
 *    (`--phase=serve`) opens the same KV file, builds the index the way `main.ts serve` does, then
 *    runs the full `recommend()` path (query embedding, vector scan, BM25, fusion, paging) for
 *    500 queries after 50 warm-up ones, and reports p50/p99 and RSS.
 *
 * 3. LanceDB as a peer (serve phase; BENCH_LANCEDB=0 leaves it out): the same articles read back from KV (title,
 *    summary, body opening and our stored int8 vectors) in a LanceDB table with its full-text and IVF_HNSW_SQ
 *    indexes, the same queries as hybrid searches fused by RRF. BENCH_LANCEDB_DIR keeps the table there and reuses
 *    it in later runs over the same KV.
 *
 * Targets (1M): semantic p50 <= 15 ms, p99 <= 50 ms; build <= 90 s; RSS <= 4 GiB; ingest >= 2,000/s.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { FixedClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import { buildDeps, embeddingProvider } from "../composition.ts";
import { type Article, ArticleRepo, embeddingText, normalizeArticle } from "../core/search/store/articles.ts";
import { SearchEngine } from "../core/search/engine.ts";
import type { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { dequantize, describeScanPaths, quantize } from "../core/search/index/vector_index.ts";
import { articleBag, storableTerms } from "../core/search/index/index.ts";
import { newId } from "../core/ids.ts";
import { createLogger } from "../core/log.ts";
import { DEFAULT_SEARCH_VERSION } from "../core/search/rank/retrieval_mode.ts";
import { retryBusyKv } from "../core/store/kv_busy_retry.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";
import { createApp } from "../routes/app.ts";
import { writeArticles } from "./_seed.ts";
import { lancePeer, type LanceRow } from "./_lancedb.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 1_000_000);
const QUERIES = Number(Deno.env.get("BENCH_QUERIES") ?? 500);
const BATCH = 1000;
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const phase = Deno.args.find((a) => a.startsWith("--phase="))?.slice(8) ?? "ingest";
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const clock = new FixedClock("2026-11-22T12:00:00Z");
/** CPU seconds this process has used (user + system, all threads), from /proc. */
function cpuSeconds(): number {
  const fields = Deno.readTextFileSync("/proc/self/stat").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

async function world(dataDir: string) {
  const config = parseConfig({
    DATA_DIR: dataDir,
    BASE_URL: "http://bench.test",
    EMBEDDINGS_CACHE_PATH: cachePath,
    LOG_LEVEL: "warn",
    ARTICLES_MAX_BODY_BYTES: String(64 * 1024 * 1024),
  });
  // Seed parts write one KV file from several processes: wait out its lock, as main.ts does.
  const kv = retryBusyKv(await Deno.openKv(config.kvPath));
  const duckdb = await AnalyticsDb.open();
  const deps = buildDeps({ config, kv, duckdb, clock, log: createLogger({ level: "warn", clock: () => clock.now() }) });
  await deps.start();
  return {
    deps,
    async close() {
      // Impressions of the timed queries are written before the stores close.
      await deps.events.stop();
      await deps[Symbol.asyncDispose]();
    },
  };
}

const QUERY_TEXTS = [
  "coastal storm flooding",
  "interest rates inflation",
  "election results council",
  "new smartphone battery",
  "football transfer window",
  "wildfire evacuation",
  "vaccine trial results",
  "electric cars charging",
  "housing prices rent",
  "space telescope images",
];

const LANCEDB = (Deno.env.get("BENCH_LANCEDB") ?? "1") !== "0";
const SEED_PARTS = Number(Deno.env.get("BENCH_SEED_PARTS") ?? 3);

/** Writes batches `part, part + parts, ...` of the seed to KV (one of several seeding processes). */
async function seedPart(dataDir: string, dmId: string, part: number, parts: number): Promise<void> {
  const w = await world(dataDir);
  const dm = (await w.deps.repos.dataModels.get(dmId))!;
  const embeddings = embeddingProvider(w.deps.config, fetch) as LocalEmbeddings;
  await embeddings.init();
  for (let b = part; b * BATCH < N; b += parts) {
    const items = generateArticles({ count: Math.min(BATCH, N - b * BATCH), now: clock.now(), seed: 2026 + b });
    await writeArticles(
      w.deps.kv,
      dm,
      items.map((item) => normalizeArticle(dm, { ...item, url: `${item.url}-${b.toString(36)}` }, clock)),
      embeddings,
      clock,
    );
    if (part === 0 && b % 100 === 0) {
      console.log(`  batch ${b} of ${N / BATCH} written, rss ${mib(Deno.memoryUsage().rss)}`);
    }
  }
  await w.close();
}

const self = (args: string[], env: Record<string, string>) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--max-old-space-size=6144", new URL(import.meta.url).pathname, ...args],
    env,
    stdout: "inherit",
    stderr: "inherit",
  }).output();

if (phase === "seed-part") {
  await seedPart(Deno.env.get("BENCH_DIR")!, Deno.env.get("BENCH_DM")!, Number(Deno.env.get("BENCH_PART")), SEED_PARTS);
} else if (phase === "seed") {
  // The 1M figures for start-up, memory and latency without first spending the shared machine's
  // CPU on a million API calls: articles are prepared exactly as ingest prepares them
  // (normalizeArticle: summary and preview; the same embedding provider; int8 storage; the BM25F
  // terms stored with the article) and written straight to KV, 25 per atomic commit, by
  // BENCH_SEED_PARTS processes. The seed logs no changes: no other process follows it. The API ingest
  // rate is measured by the `ingest` phase (BENCH_ARTICLES=100000).
  const dataDir = Deno.env.get("BENCH_DIR") ?? await Deno.makeTempDir({ prefix: "svc-scale-" });
  console.log(`articles: ${N} written to KV directly by ${SEED_PARTS} processes, dir: ${dataDir}`);
  const w = await world(dataDir);
  const tenantId = (await w.deps.repos.tenants.create({
    id: newId("tn", clock),
    name: "Bench",
    createdAt: clock.now().toISOString(),
  })).id;
  const dm: DataModel = await w.deps.repos.dataModels.create({
    id: newId("dm", clock),
    tenantId,
    name: "Scale",
    sites: [...NEWS_SITES, ...TECH_SITES],
    marketplace: false,
    createdAt: clock.now().toISOString(),
  });
  await w.close();
  const t = performance.now();
  const env = { BENCH_DIR: dataDir, BENCH_DM: dm.id, BENCH_TENANT: tenantId, BENCH_ARTICLES: String(N) };
  const results = await Promise.all(
    Array.from({ length: SEED_PARTS }, (_, k) => self(["--phase=seed-part"], { ...env, BENCH_PART: String(k) })),
  );
  if (!results.every((r) => r.success)) throw new Error("a seeding process failed");
  console.log(
    `seeded ${N} articles in ${((performance.now() - t) / 1000).toFixed(0)} s (BENCH_DIR=${dataDir} BENCH_DM=${dm.id})`,
  );
  if (!(await self(["--phase=serve"], env)).success) throw new Error("serve phase failed");
  if (!Deno.env.get("BENCH_KEEP")) await Deno.remove(dataDir, { recursive: true });
} else if (phase === "ingest") {
  const dataDir = Deno.env.get("BENCH_DIR") ?? await Deno.makeTempDir({ prefix: "svc-scale-" });
  console.log(`articles: ${N}, batch ${BATCH}, cores: ${navigator.hardwareConcurrency}, dir: ${dataDir}`);
  const w = await world(dataDir);
  const tenantId = (await w.deps.repos.tenants.create({
    id: newId("tn", clock),
    name: "Bench",
    createdAt: clock.now().toISOString(),
  })).id;
  const { key } = await w.deps.apiKeys.create(tenantId, "bench");
  const dm: DataModel = await w.deps.repos.dataModels.create({
    id: newId("dm", clock),
    tenantId,
    name: "Scale",
    sites: [...NEWS_SITES, ...TECH_SITES],
    marketplace: false,
    createdAt: clock.now().toISOString(),
  });
  const app = createApp(w.deps);
  await w.deps.search.start(); // loads the word vectors
  let ingestMs = 0, created = 0, ingestCpu = 0;
  const started = performance.now();
  for (let b = 0; b * BATCH < N; b++) {
    // Generated per batch (1M articles at once would hold GBs in this process); URLs made unique per batch.
    const items = generateArticles({ count: Math.min(BATCH, N - b * BATCH), now: clock.now(), seed: 2026 + b })
      .map(({ topic: _t, story: _s, ...a }) => ({ ...a, url: `${a.url}-${b.toString(36)}` }));
    const body = JSON.stringify(items);
    const t = performance.now(), c0 = cpuSeconds();
    const res = await app.request(`/v1/data-models/${dm.id}/articles`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    const report = await res.json();
    ingestMs += performance.now() - t;
    ingestCpu += cpuSeconds() - c0;
    if (res.status !== 200 || report.failed) {
      throw new Error(`batch ${b}: ${res.status} ${JSON.stringify(report).slice(0, 300)}`);
    }
    created += report.created;
    if ((b + 1) % 50 === 0) {
      console.log(
        `  ${created} articles, ${(created / (ingestMs / 1000)).toFixed(0)}/s in the API (${
          (created / ingestCpu).toFixed(0)
        } per CPU second), rss ${mib(Deno.memoryUsage().rss)}`,
      );
    }
  }
  const wallS = (performance.now() - started) / 1000;
  console.log(
    `ingest through the API: ${created} articles, ${(created / (ingestMs / 1000)).toFixed(0)} articles/s ` +
      `(time in the API ${(ingestMs / 1000).toFixed(1)} s, wall ${
        wallS.toFixed(1)
      } s incl. generating the fixtures); ` +
      `${(created / ingestCpu).toFixed(0)} articles per CPU second (${ingestCpu.toFixed(1)} CPU s)`,
  );
  console.log(`rss after ingest (index built incrementally): ${mib(Deno.memoryUsage().rss)}`);
  await w.deps.search.close();
  await w.close();
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--max-old-space-size=6144", new URL(import.meta.url).pathname, "--phase=serve"],
    env: { BENCH_DIR: dataDir, BENCH_DM: dm.id, BENCH_TENANT: tenantId },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!child.success) throw new Error("serve phase failed");
  if (!Deno.env.get("BENCH_KEEP")) await Deno.remove(dataDir, { recursive: true });
} else {
  const dataDir = Deno.env.get("BENCH_DIR")!;
  const dmId = Deno.env.get("BENCH_DM")!;
  const rss0 = Deno.memoryUsage().rss;
  const w = await world(dataDir);
  const t = performance.now(), c0 = cpuSeconds();
  await w.deps.search.start();
  const buildS = (performance.now() - t) / 1000, buildCpu = cpuSeconds() - c0;
  const count = await w.deps.search.count(dmId);
  const rss = Deno.memoryUsage().rss;
  console.log(
    `index build from KV at start: ${count} articles in ${buildS.toFixed(1)} s (${buildCpu.toFixed(1)} CPU s)`,
  );
  console.log(`rss after the build: ${mib(rss)} (${mib(rss0)} before opening the stores)`);
  const dm = (await w.deps.repos.dataModels.get(dmId))!;
  const engine = w.deps.search;
  const ctx = { tenantId: dm.tenantId };
  if (engine instanceof SearchEngine) {
    // The IVF index of the vector side is built in the background after the index (searches take
    // the exact scan until it is ready): its own time and memory.
    const index = await engine.registry.index(dmId), t2 = performance.now(), c3 = cpuSeconds();
    await index.annReady();
    const ann = index.annStatus;
    console.log(
      ann
        ? `ANN (IVF, ${ann.lists} lists, ${ann.probes} probed): ready ${
          ((performance.now() - t2) / 1000).toFixed(1)
        } s after the index (${(cpuSeconds() - c3).toFixed(1)} CPU s; the build itself ${
          (index.annBuildMs / 1000).toFixed(1)
        } s), ${mib(ann.bytes)}; rss ${mib(Deno.memoryUsage().rss)}`
        : "ANN: none (exact scan)",
    );
  }
  // The service's engine is a SearchEngine; its index's counters tell which scan path ran.
  const vectors = engine instanceof SearchEngine ? (await engine.registry.index(dmId)).vectors : null;
  for (const algorithm of QUERIES > 0 ? ["semantic", "most_recent"] as const : []) {
    const times: number[] = [];
    const paths = vectors ? { ...vectors.scanPaths } : undefined;
    const c1 = cpuSeconds();
    for (let i = 0; i < QUERIES + 50; i++) {
      const q = `${QUERY_TEXTS[i % QUERY_TEXTS.length]} ${i % 7 === 0 ? "latest" : ""}`.trim();
      const s = performance.now();
      await engine.recommend(dm, { query: q, similarity_top_k: 9, search_algorithm: algorithm }, ctx);
      if (i >= 50) times.push(performance.now() - s);
    }
    const cpuMs = ((cpuSeconds() - c1) * 1000) / (QUERIES + 50);
    console.log(
      `${algorithm}, top 9 (ranking v${DEFAULT_SEARCH_VERSION}, vector weight ${w.deps.config.embeddings.searchVectorWeight}): ` +
        `p50 ${pct(times, 0.5).toFixed(2)} ms, p99 ${pct(times, 0.99).toFixed(2)} ms, ${
          cpuMs.toFixed(2)
        } CPU ms per query; load average ${Deno.loadavg()[0].toFixed(1)}`,
    );
    if (vectors) console.log(`  ${describeScanPaths(vectors, paths)}`);
  }
  console.log(`rss after queries: ${mib(Deno.memoryUsage().rss)}`);
  if (LANCEDB && QUERIES > 0 && engine instanceof SearchEngine) {
    const index = await engine.registry.index(dmId);
    const keep = Deno.env.get("BENCH_LANCEDB_DIR");
    const dir = keep ?? await Deno.makeTempDir({ prefix: "bench-lancedb-" });
    // The articles as stored (our int8 vectors, dequantised), ids = our slots, in pages of 10,000.
    const rows = async function* () {
      let page: LanceRow[] = [];
      for await (const e of w.deps.kv.list<Article>({ prefix: ["article", dmId] })) {
        const a = e.value, slot = index.slotOf(a.url);
        if (slot === undefined || !a.embedding) continue;
        const q = new Int8Array(a.embedding.q.buffer, a.embedding.q.byteOffset, a.embedding.q.byteLength);
        page.push({
          id: slot,
          text: `${a.title} ${a.summary} ${a.body.slice(0, 6000)}`,
          vector: dequantize(q, a.embedding.scale),
        });
        if (page.length === 10_000) yield page, page = [];
      }
      if (page.length) yield page;
    };
    const c2 = cpuSeconds();
    const peer = await lancePeer(dir, rows, { reuse: keep !== undefined });
    console.log(
      `lancedb: ${peer.rows} rows; written in ${peer.writeS.toFixed(1)} s, FTS + IVF_HNSW_SQ indexes built in ${
        peer.indexS.toFixed(1)
      } s (${(cpuSeconds() - c2).toFixed(1)} CPU s; 0 s: reused from ${dir}); plan ${peer.plan}; ${
        peer.indexed ? "both sides indexed" : "NOT INDEXED (a flat scan)"
      }`,
    );
    const embeddings = engine.embeddings as LocalEmbeddings;
    const times: number[] = [];
    const c1 = cpuSeconds();
    for (let i = 0; i < QUERIES + 50; i++) {
      const q = `${QUERY_TEXTS[i % QUERY_TEXTS.length]} ${i % 7 === 0 ? "latest" : ""}`.trim();
      const s = performance.now();
      await peer.hybrid(q, embeddings.embedOne(q), 9);
      if (i >= 50) times.push(performance.now() - s);
    }
    console.log(
      `lancedb hybrid (FTS BM25 + HNSW over our vectors, RRF), top 9: p50 ${pct(times, 0.5).toFixed(2)} ms, p99 ${
        pct(times, 0.99).toFixed(2)
      } ms, ${(((cpuSeconds() - c1) * 1000) / (QUERIES + 50)).toFixed(2)} CPU ms per query; load average ${
        Deno.loadavg()[0].toFixed(1)
      }`,
    );
    if (!keep) await Deno.remove(dir, { recursive: true });
  }
  if (Deno.env.get("BENCH_FOLLOW") && engine instanceof SearchEngine) {
    // Another process writes 1,000 new articles and edits 1,000 (what its ingest commits: the
    // articles and their change-log entries); this process applies them from the change log.
    const embeddings = engine.embeddings as LocalEmbeddings;
    const other = new ArticleRepo(w.deps.kv, clock, "bench-other-process");
    const items = generateArticles({ count: 1000, now: clock.now(), seed: 99 });
    const prepare = (item: (typeof items)[number], url: string) => {
      const f = normalizeArticle(dm, { ...item, url }, clock);
      const { q, scale } = quantize(embeddings.embedOne(embeddingText(f)));
      return {
        ...f,
        embedding: { model: embeddings.id, dims: embeddings.dims, scale, q: new Uint8Array(q.buffer) },
        terms: storableTerms(f, articleBag(f)),
      };
    };
    const edited: Article[] = [];
    for await (const e of w.deps.kv.list<Article>({ prefix: ["article", dmId] }, { limit: 1000 })) edited.push(e.value);
    const { builds } = engine.registry.followStats(dmId);
    for (
      const batch of [
        items.map((it, i) => prepare(it, `${it.url}-follow-${i}`)),
        edited.map((a, i) => prepare({ ...items[i]!, title: `${a.title} (updated)` }, a.url)),
      ]
    ) {
      await other.upsertMany(batch);
      const t1 = performance.now(), c2 = cpuSeconds();
      const applied = await engine.registry.applyChanges(dmId);
      const rebuilt = engine.registry.followStats(dmId).builds - builds;
      console.log(
        `changes from another process: ${applied} applied in ${(performance.now() - t1).toFixed(0)} ms (${
          ((cpuSeconds() - c2) * 1000).toFixed(0)
        } CPU ms), full builds ${rebuilt} (articles now ${await engine.count(dmId)})`,
      );
    }
  }
  await engine.close();
  await w.close();
}
