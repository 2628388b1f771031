/**
 * The fixed cost of a request, in the same run: a bare Hono app on Deno.serve (bench/_bare_hono.ts)
 * against the real service (`main.ts serve`, fresh DATA_DIR, demo seed, `LOG_LEVEL=info` so every
 * request writes its JSON access-log line), both as child processes driven by wrk (one thread, C)
 * so the client's CPU stays out of the figures. For each target and route it reports requests/s,
 * latency and the server's CPU microseconds per request (user + system of the server process,
 * from /proc). The targets take turns, `LOAD_ROUNDS` times, so a busy neighbour hits both alike.
 * Each run also reports the share of the machine other processes took meanwhile ("others"): a
 * neighbour slows the service more than the bare app (it wakes the load client more often per
 * request), so the ratio is the figure of a quiet machine only where that share is near zero.
 *
 *   deno run -A bench/http_load.ts   (LOAD_SECONDS=8 LOAD_CONNECTIONS=32 LOAD_ROUNDS=2)
 *
 * `COMPARE_ROOT=<another checkout>` also starts that tree's service and measures it in the same
 * rounds (before and after a change, e.g. `git worktree add /tmp/before <commit>`). `PARTS=1` also
 * measures the bare app with one piece of the service's fixed cost added at a time
 * (bench/_bare_hono.ts: one more response header, reading a request header, the app's root with
 * the request id and the access log, the contract's id alone), and the service itself with
 * `LOG_LEVEL=warn`: what its access line costs over HTTP.
 *
 * Routes: `GET /healthz` on both; `POST /app/v2/search` (demo key, bodies rotating over
 * SEARCH_BODIES, result impressions recorded) on the service.
 */
import { SEARCH_BODIES, startDemoServer } from "./_demo_server.ts";
import { type RawRequest, runWrk, wrkAvailable } from "./_wrk.ts";

const seconds = Number(Deno.env.get("LOAD_SECONDS") ?? 8);
const connections = Number(Deno.env.get("LOAD_CONNECTIONS") ?? 32);
const rounds = Number(Deno.env.get("LOAD_ROUNDS") ?? 2);

if (!(await wrkAvailable())) {
  console.error("wrk is not installed (apt-get install wrk)");
  Deno.exit(1);
}

/** User + system CPU seconds of a process so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Waits until the process has been idle (under 2 % of a core) for a second, at most `limitS`: a
 * service just started still has DuckDB work of its demo to do (about a second of CPU, longer
 * under load), and that work is no request's.
 */
async function untilIdle(pid: number, limitS = 60): Promise<void> {
  const deadline = performance.now() + limitS * 1000;
  let before = await cpuSeconds(pid);
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await cpuSeconds(pid);
    if (now - before < 0.02) return;
    before = now;
  }
  console.error(`process ${pid} still busy after ${limitS} s; measuring anyway`);
}

/** Busy CPU seconds of the whole machine so far, every core (/proc/stat: all but idle and iowait). */
async function machineBusySeconds(): Promise<number> {
  const [cpu] = (await Deno.readTextFile("/proc/stat")).split("\n");
  const ticks = cpu!.trim().split(/\s+/).slice(1).map(Number);
  const idle = ticks[3]! + ticks[4]!;
  return (ticks.reduce((a, b) => a + b, 0) - idle) / 100;
}

interface Measured {
  rps: number;
  cpuUsPerReq: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  /**
   * Share of the machine's cores other processes used during the run (all busy CPU less the
   * server's and wrk's). A neighbour competes with the server and with wrk, and the slower server
   * pays more to wake wrk, so ratios are only comparable where this is near zero.
   */
  othersShare: number;
}

/** One wrk run against `origin`, with the server's CPU over the run. */
async function measure(pid: number, origin: string, requests: RawRequest[]): Promise<Measured> {
  let before = 0;
  let machineBefore = 0;
  let startedAt = 0;
  const startCpu = Promise.all([cpuSeconds(pid), machineBusySeconds()]).then(([s, m]) => {
    before = s;
    machineBefore = m;
    startedAt = performance.now();
  });
  const r = await runWrk(origin, requests, { seconds, connections, onStart: () => void startCpu });
  await startCpu;
  const [after, machineAfter] = await Promise.all([cpuSeconds(pid), machineBusySeconds()]);
  const wall = (performance.now() - startedAt) / 1000;
  const used = after - before;
  const others = Math.max(0, machineAfter - machineBefore - used - r.cpuSeconds);
  const total = r.ok + r.failed;
  return {
    rps: r.ok / r.seconds,
    cpuUsPerReq: (used / total) * 1e6,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    failed: r.failed,
    othersShare: others / (wall * navigator.hardwareConcurrency),
  };
}

async function startBare(piece?: string): Promise<{ origin: string; pid: number; stop: () => Promise<void> }> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_bare_hono.ts", import.meta.url).pathname, String(port), ...(piece ? [piece] : [])],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("bare Hono app exited early");
    out += value;
  }
  // Keep draining: the access-log piece writes a line a request.
  (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  return {
    origin: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

const fmt = (m: Measured) =>
  `${m.rps.toFixed(0).padStart(6)} req/s  ${m.cpuUsPerReq.toFixed(1).padStart(7)} µs CPU/req  ` +
  `p50 ${m.p50Ms.toFixed(2)} ms  p99 ${m.p99Ms.toFixed(2)} ms  failed ${m.failed}  others ${
    (m.othersShare * 100).toFixed(0)
  } %`;

const compareRoot = Deno.env.get("COMPARE_ROOT");
const PIECES = ["response-header", "read-header", "envelope", "contract-id"];
const bare = await startBare();
const parts = Deno.env.get("PARTS") === "1" ? await Promise.all(PIECES.map((p) => startBare(p))) : [];
const svc = await startDemoServer({ env: { LOG_LEVEL: "info" } });
// The service without its access line (and without the demo site, whose port the first one holds).
const unlogged = parts.length > 0 ? await startDemoServer({ env: { LOG_LEVEL: "warn", DEMO_SITE_URL: "off" } }) : null;
const other = compareRoot ? await startDemoServer({ env: { LOG_LEVEL: "info" }, root: compareRoot }) : null;
try {
  for (const pid of [svc.child.pid, ...(unlogged ? [unlogged.child.pid] : []), ...(other ? [other.child.pid] : [])]) {
    await untilIdle(pid);
  }
  const healthz: RawRequest[] = [{ method: "GET", path: "/healthz", headers: {}, body: "" }];
  const searchOf = (s: typeof svc) =>
    SEARCH_BODIES.map((body) => ({
      path: `/app/v2/search?data_model_id=${s.dataModelId}`,
      headers: { authorization: `Bearer ${s.apiKey}`, "content-type": "application/json" },
      body,
    }));
  const search: RawRequest[] = searchOf(svc);
  const otherSearch = other ? searchOf(other) : [];
  // Warm-up: JIT and caches of each.
  await runWrk(bare.origin, healthz, { seconds: 2, connections });
  for (const part of parts) await runWrk(part.origin, healthz, { seconds: 2, connections });
  await runWrk(svc.base, healthz, { seconds: 2, connections });
  await runWrk(svc.base, search, { seconds: 2, connections });
  if (unlogged) await runWrk(unlogged.base, healthz, { seconds: 2, connections });
  if (other) {
    await runWrk(other.base, healthz, { seconds: 2, connections });
    await runWrk(other.base, otherSearch, { seconds: 2, connections });
  }
  const [load1] = Deno.loadavg();
  console.log(
    `wrk -t1 -c${connections}, ${seconds} s a run, ${rounds} rounds, cores ${navigator.hardwareConcurrency}, load ${load1}`,
  );
  const ratios: number[] = [];
  let busiest = 0;
  for (let round = 1; round <= rounds; round++) {
    const b = await measure(bare.pid, bare.origin, healthz);
    const s = await measure(svc.child.pid, svc.base, healthz);
    const q = await measure(svc.child.pid, svc.base, search);
    ratios.push(s.cpuUsPerReq / b.cpuUsPerReq);
    busiest = Math.max(busiest, b.othersShare, s.othersShare);
    console.log(`round ${round}`);
    console.log(`  bare Hono  GET /healthz       ${fmt(b)}`);
    console.log(`  service    GET /healthz       ${fmt(s)}`);
    console.log(`  service    POST /app/v2/search ${fmt(q)}`);
    console.log(
      `  healthz: service / bare = ${(s.cpuUsPerReq / b.cpuUsPerReq).toFixed(2)}x CPU per request, ` +
        `${(b.rps / s.rps).toFixed(2)}x fewer requests/s`,
    );
    for (const [i, part] of parts.entries()) {
      const m = await measure(part.pid, part.origin, healthz);
      console.log(`  bare + ${PIECES[i]!.padEnd(15)} ${fmt(m)}  (+${(m.cpuUsPerReq - b.cpuUsPerReq).toFixed(1)} µs)`);
      if (PIECES[i] === "contract-id") {
        console.log(`  healthz: service / (bare + contract-id) = ${(s.cpuUsPerReq / m.cpuUsPerReq).toFixed(2)}x CPU`);
      }
    }
    if (unlogged) {
      const m = await measure(unlogged.child.pid, unlogged.base, healthz);
      console.log(
        `  service, LOG_LEVEL=warn  ${fmt(m)}  (access line: ${(s.cpuUsPerReq - m.cpuUsPerReq).toFixed(1)} µs)`,
      );
    }
    if (other) {
      const oh = await measure(other.child.pid, other.base, healthz);
      const oq = await measure(other.child.pid, other.base, otherSearch);
      console.log(`  compared   GET /healthz       ${fmt(oh)}`);
      console.log(`  compared   POST /app/v2/search ${fmt(oq)}`);
      console.log(`  healthz: compared / bare = ${(oh.cpuUsPerReq / b.cpuUsPerReq).toFixed(2)}x CPU per request`);
    }
  }
  const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!;
  console.log(
    `load at the end ${Deno.loadavg()[0]}; CPU ratios ${ratios.map((r) => r.toFixed(2)).join(", ")}; ` +
      `median ${median.toFixed(2)}x; other processes took up to ${(busiest * 100).toFixed(0)} % of the machine ` +
      `during the /healthz runs${busiest > 0.05 ? " (not a quiet machine: the ratios carry it)" : ""}`,
  );
} finally {
  await other?.stop();
  for (const part of parts) await part.stop();
  await unlogged?.stop();
  await svc.stop();
  await bare.stop();
}
