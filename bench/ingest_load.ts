/**
 * Load script for event ingestion over HTTP:
 *
 *   deno run -A bench/ingest_load.ts [seconds=20] [workers=8]
 *
 * Phase 1 (throughput): a real server process (`main.ts serve`, loopback) takes batches of 500
 * events from `workers` concurrent clients for `seconds`; the figure is acknowledged events per
 * second. A graceful stop (SIGTERM) flushes, and the Parquet files must hold every event once.
 * Phase 2 (crash): the same load, the server is killed with SIGKILL mid-load, restarted (WAL replay)
 * and stopped; the Parquet files must hold every acknowledged event exactly once.
 * Target: >= 20,000 events/s sustained.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { sqlString } from "../analytics/sql_util.ts";
import { parseConfig } from "../core/config.ts";
import { openDeps } from "../main.ts";
import { ensureFixtureTenant } from "./_analytics_world.ts";

const seconds = Number(Deno.args[0] ?? 20);
const workers = Number(Deno.args[1] ?? 8);
const BATCH = 500;
const mainTs = new URL("../main.ts", import.meta.url).pathname;

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function startServer(dataDir: string, port: number): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", mainTs, "serve"],
    env: { DATA_DIR: dataDir, PORT: String(port), DEMO_SEED: "false", LOG_LEVEL: "error" },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}

async function waitReady(base: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(`${base}/healthz`);
      await r.body?.cancel();
      if (r.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("server did not start");
}

const TYPES = ["widget_load", "widget_viewable", "heartbeat", "query", "heartbeat", "click"];

// Events of one session, 5 s apart: a session keeps at most one heartbeat per 5 s of its span
// (docs/events-and-metrics.md), so every event of a batch is stored and counted.
const SESSION_EVENTS = 25;
const EVENT_GAP_MS = 5_000;

function batchBody(worker: number, seq: number): string {
  const events = [];
  const now = Date.now();
  for (let i = 0; i < BATCH; i++) {
    const t = TYPES[i % TYPES.length]!;
    const e: Record<string, unknown> = {
      event_id: `bench-w${worker}-${seq}-${i}`,
      event_type: t,
      ts: new Date(now - (SESSION_EVENTS - 1 - (i % SESSION_EVENTS)) * EVENT_GAP_MS).toISOString(),
      widget_id: "wd_fixture",
      session_id: `s-${worker}-${seq}-${Math.floor(i / SESSION_EVENTS)}`,
      placement_id: "pl_top",
      referring_url: "https://dailyledger.example/news/city-council-vote",
    };
    if (t === "widget_viewable") Object.assign(e, { in_view_pct: 80, in_view_ms: 1500 });
    if (t === "query") {
      Object.assign(e, {
        prompt: "Where should I travel this spring?",
        interaction_type: "free_form",
        response: "Lisbon and Porto are lovely in spring.",
      });
    }
    if (t === "click") e.click_type = "article";
    events.push(e);
  }
  return JSON.stringify({ events });
}

/** Runs the load until `stopAt` or until the server goes away; returns acknowledged batch ids. */
async function load(base: string, key: string, stopAt: number, firstWorker = 0): Promise<string[]> {
  const acked: string[] = [];
  await Promise.all(Array.from({ length: workers }, async (_, i) => {
    const w = firstWorker + i;
    for (let seq = 0; performance.now() < stopAt; seq++) {
      try {
        const res = await fetch(`${base}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: batchBody(w, seq),
        });
        const text = await res.text();
        if (res.status !== 202) throw new Error(`status ${res.status}: ${text.slice(0, 200)}`);
        acked.push(`w${w}-${seq}`);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith("status")) throw err;
        return; // connection refused/reset: the server was killed
      }
    }
  }));
  return acked;
}

async function countIds(dataDir: string): Promise<Map<string, number>> {
  const db = await AnalyticsDb.open();
  try {
    return await db.withConnection(async (c) => {
      const r = await c.runAndReadAll(
        `SELECT regexp_extract(event_id, '^bench-(w[0-9]+-[0-9]+)-', 1) AS b, count(*)::BIGINT AS n,
                count(DISTINCT event_id)::BIGINT AS d
         FROM read_parquet(${sqlString(`${dataDir}/events/*/*.parquet`)}) GROUP BY 1`,
      );
      const out = new Map<string, number>();
      for (const row of r.getRowObjectsJS()) {
        if (Number(row.n) !== Number(row.d)) throw new Error(`duplicates in batch ${row.b}`);
        out.set(String(row.b), Number(row.n));
      }
      return out;
    });
  } finally {
    db.close();
  }
}

async function prepare(): Promise<{ dataDir: string; key: string }> {
  const dataDir = await Deno.makeTempDir({ prefix: "ingest-bench-" });
  const deps = await openDeps(parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "error" }));
  const key = await ensureFixtureTenant(deps);
  await deps[Symbol.asyncDispose]();
  return { dataDir, key };
}

function verify(acked: string[], counts: Map<string, number>, label: string) {
  let missing = 0;
  for (const b of acked) if (counts.get(b) !== BATCH) missing++;
  const stored = [...counts].filter(([b]) => !/^w1\d\d\d-/.test(b)).reduce((a, [, n]) => a + n, 0);
  return { label, acked_events: acked.length * BATCH, stored_events: stored, acked_batches_not_exactly_once: missing };
}

// Phase 1: throughput.
const p1 = await prepare();
const port1 = freePort();
let server = startServer(p1.dataDir, port1);
await waitReady(`http://127.0.0.1:${port1}`);
// Warm-up (JIT, KV file), not counted.
await load(`http://127.0.0.1:${port1}`, p1.key, performance.now() + 2000, 1000);
const t0 = performance.now();
const acked1 = await load(`http://127.0.0.1:${port1}`, p1.key, t0 + seconds * 1000);
const elapsed = (performance.now() - t0) / 1000;
const tStop = performance.now();
server.kill("SIGTERM");
await server.status;
// Time the graceful stop takes to flush the WAL backlog left by the load (0 when flushing kept up).
const drainSeconds = (performance.now() - tStop) / 1000;
const counts1 = await countIds(p1.dataDir);
const phase1 = {
  events_per_second: Math.round((acked1.length * BATCH) / elapsed),
  seconds: +elapsed.toFixed(1),
  stop_drain_seconds: +drainSeconds.toFixed(1),
  workers,
  batch: BATCH,
  ...verify(acked1, counts1, "graceful stop"),
};

// Phase 2: kill -9 mid-load, restart, stop.
const p2 = await prepare();
const port2 = freePort();
server = startServer(p2.dataDir, port2);
await waitReady(`http://127.0.0.1:${port2}`);
const killAfterMs = Math.min(seconds, 8) * 1000;
const loadDone = load(`http://127.0.0.1:${port2}`, p2.key, performance.now() + killAfterMs + 60_000);
await new Promise((r) => setTimeout(r, killAfterMs));
server.kill("SIGKILL");
await server.status;
const acked2 = await loadDone;
server = startServer(p2.dataDir, port2);
await waitReady(`http://127.0.0.1:${port2}`);
server.kill("SIGTERM");
await server.status;
const counts2 = await countIds(p2.dataDir);
const phase2 = verify(acked2, counts2, "kill -9 mid-load, restart, stop");

console.log(JSON.stringify({ phase1, phase2 }, null, 2));
await Deno.remove(p1.dataDir, { recursive: true });
await Deno.remove(p2.dataDir, { recursive: true });
if (phase1.acked_batches_not_exactly_once || phase2.acked_batches_not_exactly_once) Deno.exit(1);
