/**
 * Search shards measured (docs/operations.md, "Search shards"): N articles over 4 data models,
 * one per hash shard, served by 4 processes (`SEARCH_SHARD=k/4`) behind HAProxy, against one
 * process holding all four indexes.
 *
 *   BENCH_ARTICLES=200000 deno run -A bench/shards_bench.ts
 *
 * 1. Seed: articles prepared exactly as ingest prepares them (normalised, embedded with the local
 *    word vectors, int8, BM25F terms), written straight to one KV file by 2 processes, as
 *    bench/scale_1m.ts `--phase=seed` does.
 * 2. Sharded: 4 `main.ts serve` processes, one shard each, started together; per process the time
 *    from spawn to `/readyz` (index build from KV) and resident memory; then semantic searches
 *    through HAProxy (routed by `crc32,mod(4)` of `data_model_id`), p50/p99.
 * 3. Unsharded: one process over the same KV: build time, memory, the same searches direct.
 * Every process is killed by PID at the end.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { FixedClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import { buildDeps, embeddingProvider } from "../composition.ts";
import { normalizeArticle } from "../core/search/store/articles.ts";
import type { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { shardOf } from "../core/search/index/shard.ts";
import { newId } from "../core/ids.ts";
import { createLogger } from "../core/log.ts";
import { retryBusyKv } from "../core/store/kv_busy_retry.ts";
import type { DataModel } from "../core/store/models.ts";
import { generateArticles, NEWS_SITES, TECH_SITES } from "../fixtures/articles.ts";
import { freePort, killAll, type Node, spawnNode, waitReady } from "./_cluster.ts";
import { writeArticles } from "./_seed.ts";
import { ensureHaproxy, haproxyConfig } from "./cluster.ts";

const N = Number(Deno.env.get("BENCH_ARTICLES") ?? 200_000);
const SHARDS = 4;
const BATCH = 1000;
const QUERIES = Number(Deno.env.get("BENCH_QUERIES") ?? 400);
const clock = new FixedClock("2026-11-22T12:00:00Z");
const phase = Deno.args.find((a) => a.startsWith("--phase="))?.slice(8) ?? "main";
const mib = (kb: number) => Math.round(kb / 1024);

async function world(dataDir: string) {
  const config = parseConfig({ DATA_DIR: dataDir, BASE_URL: "http://bench.test", LOG_LEVEL: "warn" });
  // Seed parts write one KV file from several processes: wait out its lock, as main.ts does.
  const kv = retryBusyKv(await Deno.openKv(config.kvPath));
  const duckdb = await AnalyticsDb.open();
  const deps = buildDeps({ config, kv, duckdb, clock, log: createLogger({ level: "warn", clock: () => clock.now() }) });
  await deps.start();
  return {
    deps,
    close: () => deps[Symbol.asyncDispose](),
  };
}

/** Writes batches `part, part + parts, ...` of every data model's share to KV. */
async function seedPart(dataDir: string, dmIds: string[], part: number, parts: number) {
  const w = await world(dataDir);
  const embeddings = embeddingProvider(w.deps.config, fetch) as LocalEmbeddings;
  await embeddings.init();
  const perDm = Math.ceil(N / dmIds.length);
  for (const [d, dmId] of dmIds.entries()) {
    const dm = (await w.deps.repos.dataModels.get(dmId))!;
    for (let b = part; b * BATCH < perDm; b += parts) {
      const items = generateArticles({
        count: Math.min(BATCH, perDm - b * BATCH),
        now: clock.now(),
        seed: 2026 + d * 10_000 + b,
      });
      await writeArticles(
        w.deps.kv,
        dm,
        items.map((item) => normalizeArticle(dm, { ...item, url: `${item.url}-${d}-${b.toString(36)}` }, clock)),
        embeddings,
        clock,
      );
    }
  }
  w.close();
}

function rssKb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
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
];

async function searches(base: string, key: string, dmIds: string[]): Promise<{ p50: number; p99: number; n: number }> {
  const run = async (i: number) => {
    const t = performance.now();
    const r = await fetch(`${base}/app/v2/search?data_model_id=${dmIds[i % dmIds.length]}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: QUERY_TEXTS[i % QUERY_TEXTS.length] }),
    });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`search ${r.status}`);
    return performance.now() - t;
  };
  for (let i = 0; i < 40; i++) await run(i); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < QUERIES; i++) ms.push(await run(i));
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(ms.length * 0.5)]!, p99: ms[Math.floor(ms.length * 0.99)]!, n: ms.length };
}

if (phase === "seed-part") {
  await seedPart(
    Deno.env.get("BENCH_DIR")!,
    Deno.env.get("BENCH_DMS")!.split(","),
    Number(Deno.env.get("BENCH_PART")),
    2,
  );
} else {
  // BENCH_DIR: a seeded folder to reuse (kept afterwards), with its ids in bench-ids.json.
  const reuse = Deno.env.get("BENCH_DIR");
  const dataDir = reuse ?? await Deno.makeTempDir({ prefix: "svc-shards-" });
  let haproxy: Deno.ChildProcess | null = null;
  try {
    let key: string;
    let dmIds: string[];
    const idsFile = `${dataDir}/bench-ids.json`;
    const saved = await Deno.readTextFile(idsFile).then((t) => JSON.parse(t), () => null);
    if (saved) {
      ({ key, dmIds } = saved);
      console.log(`reusing ${dataDir}`);
    } else {
      // One data model per hash shard.
      const w = await world(dataDir);
      const tenantId = (await w.deps.repos.tenants.create({
        id: newId("tn", clock),
        name: "Shards",
        createdAt: clock.now().toISOString(),
      })).id;
      key = (await w.deps.apiKeys.create(tenantId, "bench")).key;
      dmIds = new Array(SHARDS);
      while (dmIds.filter(Boolean).length < SHARDS) {
        const id = newId("dm", clock);
        const k = shardOf(id, SHARDS) - 1;
        if (dmIds[k]) continue;
        dmIds[k] = id;
        await w.deps.repos.dataModels.create(
          {
            id,
            tenantId,
            name: `Shard ${k + 1}`,
            sites: [...NEWS_SITES, ...TECH_SITES],
            marketplace: false,
            createdAt: clock.now().toISOString(),
          } satisfies DataModel,
        );
      }
      w.close();
      const t0 = performance.now();
      const seeded = await Promise.all([0, 1].map((part) =>
        new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", new URL(import.meta.url).pathname, "--phase=seed-part"],
          env: { BENCH_DIR: dataDir, BENCH_DMS: dmIds.join(","), BENCH_PART: String(part), BENCH_ARTICLES: String(N) },
        }).output()
      ));
      if (!seeded.every((r) => r.success)) throw new Error("seeding failed");
      const seedS = (performance.now() - t0) / 1000;
      const kvBytes = (await Deno.stat(`${dataDir}/kv.sqlite3`)).size;
      console.log(
        `seeded ${N} articles (${N / SHARDS} per data model) in ${seedS.toFixed(0)} s; KV file ${
          (kvBytes / 2 ** 20).toFixed(0)
        } MiB (${(kvBytes / N).toFixed(0)} bytes an article)`,
      );
      await Deno.writeTextFile(idsFile, JSON.stringify({ key, dmIds }));
    }

    // Sharded: 4 processes started together.
    const env = {
      DEMO_SEED: "false",
      SOURCES_POLLER: "false",
      EVENTS_FLUSH_INTERVAL_S: "5",
      SEARCH_RATE_LIMIT_PER_MIN: "10000000",
    };
    const t1 = performance.now();
    const nodes: Node[] = dmIds.map((_, k) =>
      spawnNode({ name: `shard${k + 1}`, dataDir, env: { ...env, SEARCH_SHARD: `${k + 1}/${SHARDS}` } })
    );
    const ready = await Promise.all(nodes.map(async (n) => {
      await waitReady(n.url, 600_000, n.child);
      return (performance.now() - t1) / 1000;
    }));
    console.log(
      `sharded: ready after ${ready.map((s) => s.toFixed(1)).join(" / ")} s (started together); RSS ${
        nodes.map((n) => mib(rssKb(n.pid))).join(" / ")
      } MiB after the build`,
    );
    const port = freePort();
    const layout = new Map(nodes.map((_, k) => [`shard${k + 1}`, [k]]));
    const cfg = `${dataDir}/haproxy.cfg`;
    await Deno.writeTextFile(cfg, haproxyConfig({ port, statsPort: freePort(), nodes, shards: SHARDS, layout }));
    haproxy = new Deno.Command(await ensureHaproxy(), { args: ["-f", cfg, "-db"], stdout: "null" }).spawn();
    await waitReady(`http://127.0.0.1:${port}`, 10_000, haproxy);
    const viaLb = await searches(`http://127.0.0.1:${port}`, key, dmIds);
    const rss = nodes.map((n) => mib(rssKb(n.pid)));
    console.log(
      `sharded: ready after ${ready.map((s) => s.toFixed(1)).join(" / ")} s (started together); RSS ${
        rss.join(" / ")
      } MiB; search through HAProxy p50 ${viaLb.p50.toFixed(1)} ms p99 ${viaLb.p99.toFixed(1)} ms (n ${viaLb.n})`,
    );
    haproxy.kill("SIGTERM");
    await haproxy.status;
    haproxy = null;
    await killAll();

    // Unsharded: one process with all four indexes.
    const t2 = performance.now();
    const one = spawnNode({ name: "all", dataDir, env });
    await waitReady(one.url, 900_000, one.child);
    const oneReady = (performance.now() - t2) / 1000;
    const direct = await searches(one.url, key, dmIds);
    console.log(
      `unsharded: ready after ${oneReady.toFixed(1)} s; RSS ${mib(rssKb(one.pid))} MiB; search direct p50 ${
        direct.p50.toFixed(1)
      } ms p99 ${direct.p99.toFixed(1)} ms (n ${direct.n})`,
    );
    console.log(`load average: ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`);
  } finally {
    if (haproxy) {
      try {
        haproxy.kill("SIGTERM");
      } catch { /* exited */ }
      await haproxy.status;
    }
    await killAll();
    if (!reuse) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}
