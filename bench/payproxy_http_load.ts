/**
 * Payproxy search vs bearer search throughput over loopback HTTP, in the same run (target: payproxy
 * within 10 % of bearer). Starts the real service (`main.ts serve`, fresh DATA_DIR, demo seed) as a
 * child process, gives the demo seller a payproxy secret with the admin command, runs a payment-layer
 * allowance peer (always allows) in this process, then drives both routes with `fetch` at bounded
 * concurrency in alternating rounds, so machine noise falls on both alike.
 *
 *   deno run -A bench/payproxy_http_load.ts   (LOAD_ROUNDS=4 LOAD_ROUND_SECONDS=4 LOAD_CONCURRENCY=64
 *                                               ALLOWANCE_CACHE_MS=1000 LOAD_AGENTS=1 LOAD_CLIENT=wrk)
 *
 * `LOAD_CLIENT`: `wrk` (the default when wrk is installed: `apt-get install wrk`) replays
 * prepared requests from C and leaves the cores to the server; `fetch` drives them from this
 * Deno process, which then takes about a fifth of the machine for itself.
 *
 * Payproxy requests are signed before each round (fresh request ids, real clock), so the load
 * generator does the same work per request on both routes; the server pays signature
 * verification, the single-use mark and the allowance round trip on top of the same search.
 */
import { signRequest } from "../core/payproxy/signature.ts";
import { SEARCH_BODIES, startDemoServer } from "./_demo_server.ts";
import { runWrk, wrkAvailable } from "./_wrk.ts";

const rounds = Number(Deno.env.get("LOAD_ROUNDS") ?? 4);
const roundSeconds = Number(Deno.env.get("LOAD_ROUND_SECONDS") ?? 4);
const concurrency = Number(Deno.env.get("LOAD_CONCURRENCY") ?? 64);
// Distinct paying agents the payproxy requests rotate through (each has its own allowance).
const agents = Number(Deno.env.get("LOAD_AGENTS") ?? 1);
const client = Deno.env.get("LOAD_CLIENT") ?? (await wrkAvailable() ? "wrk" : "fetch");
if (client !== "wrk" && client !== "fetch") throw new Error("LOAD_CLIENT must be wrk or fetch");

// The payment layer's allowance endpoint: a small peer that always allows.
const peer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  await req.arrayBuffer();
  return Response.json({ allowed: true });
});
const peerUrl = `http://127.0.0.1:${peer.addr.port}`;

const server = await startDemoServer({
  prefix: "svc-payproxy-load-",
  dataParent: Deno.env.get("LOAD_DATA_PARENT"), // where DATA_DIR goes
  env: {
    AGENT_AUTH_URL: peerUrl,
    // Default 1000 (the service default); 0 asks the payment layer on every request.
    ALLOWANCE_CACHE_MS: Deno.env.get("ALLOWANCE_CACHE_MS") ?? "1000",
  },
});
const { base, env, child } = server;
try {
  // A payproxy secret for the demo seller, through the admin command (shown once, on stdout).
  const admin = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", "admin", "payproxy-secret", "rotate", "--seller", "demo"],
    cwd: server.root,
    env,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const { kid, secret } = JSON.parse(new TextDecoder().decode(admin.stdout)) as { kid: string; secret: string };

  const bodies = SEARCH_BODIES;
  const bearerUrl = `${base}/app/v2/search?data_model_id=${server.dataModelId}`;
  const payproxyUrl = `${base}/payproxy/v2/search?data_model_id=${server.dataModelId}`;
  const bearerHeaders = { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" };

  type Req = { url: string; headers: Record<string, string>; body: string };
  let seq = 0;
  const bearerReq = (): Req => ({ url: bearerUrl, headers: bearerHeaders, body: bodies[seq++ % bodies.length]! });
  const signedBatch = async (n: number): Promise<Req[]> => {
    const t = Math.floor(Date.now() / 1000);
    const batch: Req[] = [];
    for (let i = 0; i < n; i++) {
      const body = bodies[seq++ % bodies.length]!;
      const requestId = `load-${seq}-${i}`;
      const s = await signRequest({
        secret,
        kid,
        t,
        method: "POST",
        url: payproxyUrl,
        body,
        requestId,
        agentId: `agent-${seq % agents}`,
      });
      batch.push({ url: payproxyUrl, headers: { ...s.headers, "content-type": "application/json" }, body });
    }
    return batch;
  };

  // CPU seconds (user + system) of a process so far, from /proc (Linux); null elsewhere.
  const ticks = 100; // USER_HZ
  const cpuSeconds = (pid: number | "self"): number | null => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      return null;
    }
  };

  const sysSeconds = (pid: number): number => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[12]) / ticks;
    } catch {
      return 0;
    }
  };

  const run = async (durationMs: number, next: () => Req | undefined) => {
    let ok = 0, failed = 0;
    const statuses = new Map<number, number>();
    const lat: number[] = [];
    const end = performance.now() + durationMs;
    const started = performance.now();
    const serverCpu0 = cpuSeconds(child.pid), loadCpu0 = cpuSeconds("self"), sys0 = sysSeconds(child.pid);
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = next();
        if (!r) throw new Error("ran out of pre-signed requests: raise the batch size");
        const s = performance.now();
        const res = await fetch(r.url, { method: "POST", headers: r.headers, body: r.body });
        await res.arrayBuffer();
        lat.push(performance.now() - s);
        if (res.status === 200) ok++;
        else {
          failed++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }
    }));
    const serverCpu = serverCpu0 === null ? 0 : cpuSeconds(child.pid)! - serverCpu0;
    const loadCpu = loadCpu0 === null ? 0 : cpuSeconds("self")! - loadCpu0;
    const serverSys = sysSeconds(child.pid) - sys0;
    return { ok, failed, statuses, lat, seconds: (performance.now() - started) / 1000, serverCpu, serverSys, loadCpu };
  };

  // The same through wrk: prepared requests only (payproxy ones are single-use).
  const runWithWrk = async (durationMs: number, reqs: Req[]) => {
    let serverCpu0 = 0, loadCpu0 = 0, sys0 = 0;
    const raw = reqs.map((r) => ({ path: r.url.slice(base.length), headers: r.headers, body: r.body }));
    const w = await runWrk(base, raw, {
      seconds: durationMs / 1000,
      connections: concurrency,
      onStart: () => {
        [serverCpu0, loadCpu0, sys0] = [cpuSeconds(child.pid) ?? 0, cpuSeconds("self") ?? 0, sysSeconds(child.pid)];
      },
    });
    const serverCpu = (cpuSeconds(child.pid) ?? 0) - serverCpu0;
    const loadCpu = w.cpuSeconds + (cpuSeconds("self") ?? 0) - loadCpu0;
    return {
      ok: w.ok,
      failed: w.failed,
      statuses: new Map([[0, w.failed]]),
      lat: [w.p50Ms, w.p99Ms],
      seconds: w.seconds,
      serverCpu,
      serverSys: sysSeconds(child.pid) - sys0,
      loadCpu,
    };
  };

  const totals = {
    bearer: { ok: 0, failed: 0, seconds: 0, serverCpu: 0, loadCpu: 0, lat: [] as number[], roundLat: [] as number[][] },
    payproxy: {
      ok: 0,
      failed: 0,
      seconds: 0,
      serverCpu: 0,
      loadCpu: 0,
      lat: [] as number[],
      roundLat: [] as number[][],
    },
  };
  let lastRate = 2000;
  const phase = async (which: "bearer" | "payproxy", ms: number, record: boolean) => {
    let r;
    if (client === "wrk") {
      // wrk sends the prepared list in order: bearer cycles through the bodies, payproxy never repeats.
      const reqs = which === "bearer"
        ? bodies.map(() => bearerReq())
        : await signedBatch(Math.ceil(lastRate * 1.6 * (ms / 1000)) + concurrency * 2);
      r = await runWithWrk(ms, reqs);
    } else if (which === "bearer") r = await run(ms, bearerReq);
    else {
      const batch = await signedBatch(Math.ceil(lastRate * 1.6 * (ms / 1000)) + concurrency * 2);
      let i = 0;
      r = await run(ms, () => batch[i++]);
    }
    if (which === "bearer") lastRate = Math.max(lastRate, r.ok / r.seconds);
    if (r.failed) console.log(`${which}: ${r.failed} failed`, Object.fromEntries(r.statuses));
    if (Deno.env.get("LOAD_VERBOSE")) {
      console.log(
        `  ${which.padEnd(8)} ${(r.ok / r.seconds).toFixed(0)} req/s, server CPU ${
          (r.serverCpu / r.ok * 1e6).toFixed(0)
        } us` +
          ` (system ${(r.serverSys / r.ok * 1e6).toFixed(0)} us)` +
          (client === "wrk" ? `, p50 ${r.lat[0]} ms, p99 ${r.lat[1]} ms` : ""),
      );
    }
    if (!record) return;
    const t = totals[which];
    t.ok += r.ok;
    t.failed += r.failed;
    t.seconds += r.seconds;
    t.serverCpu += r.serverCpu;
    t.loadCpu += r.loadCpu;
    if (client === "wrk") t.roundLat.push(r.lat as [number, number]);
    else t.lat.push(...r.lat);
  };

  await phase("bearer", 2000, false); // warm-up
  await phase("payproxy", 2000, false);
  for (let i = 0; i < rounds; i++) {
    const order: ("bearer" | "payproxy")[] = i % 2 === 0 ? ["bearer", "payproxy"] : ["payproxy", "bearer"];
    for (const which of order) await phase(which, roundSeconds * 1000, true);
  }
  const us = (s: number) => (s * 1e6).toFixed(0);
  const line = (name: string, t: typeof totals.bearer) => {
    t.lat.sort((a, b) => a - b);
    // fetch: percentiles of every request; wrk: the mean of each round's percentiles.
    const mean = (i: number) => t.roundLat.reduce((a, r) => a + r[i]!, 0) / t.roundLat.length;
    const p = (x: number) =>
      (t.roundLat.length ? mean(x === 0.5 ? 0 : 1) : t.lat[Math.min(t.lat.length - 1, Math.floor(t.lat.length * x))]!)
        .toFixed(2);
    return `${name.padEnd(8)} ${(t.ok / t.seconds).toFixed(0).padStart(6)} req/s (${t.ok} ok, ${t.failed} failed), ` +
      `latency p50 ${p(0.5)} ms, p99 ${p(0.99)} ms; CPU per request: server ${us(t.serverCpu / t.ok)} us, ` +
      `load generator + allowance peer ${us(t.loadCpu / t.ok)} us`;
  };
  const b = totals.bearer.ok / totals.bearer.seconds;
  const pp = totals.payproxy.ok / totals.payproxy.seconds;
  console.log(
    `loopback HTTP (client ${client}), ${concurrency} concurrent, ${rounds} alternating rounds of ${roundSeconds} s per route, ` +
      `ALLOWANCE_CACHE_MS=${env.ALLOWANCE_CACHE_MS}, ${agents} agent(s), cores ${navigator.hardwareConcurrency}`,
  );
  console.log(line("bearer", totals.bearer));
  console.log(line("payproxy", totals.payproxy));
  console.log(`payproxy / bearer throughput: ${(pp / b * 100).toFixed(1)} %`);
} finally {
  await server.stop();
  await peer.shutdown();
}
