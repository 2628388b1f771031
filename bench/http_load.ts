/**
 * HTTP throughput of `POST /app/v2/search` on loopback over the demo corpus: starts the real
 * service (`main.ts serve`, fresh DATA_DIR, demo seed) as a child process, then drives it with
 * `fetch` at bounded concurrency for a fixed time and reports requests/s and latency.
 *
 *   deno run -A bench/http_load.ts        (LOAD_SECONDS=15 LOAD_CONCURRENCY=32 LOG_LEVEL=warn)
 */
import { SEARCH_BODIES, startDemoServer } from "./_demo_server.ts";

const seconds = Number(Deno.env.get("LOAD_SECONDS") ?? 15);
const concurrency = Number(Deno.env.get("LOAD_CONCURRENCY") ?? 32);

const server = await startDemoServer();
const { base } = server;
const bodies = SEARCH_BODIES;
const url = `${base}/app/v2/search?data_model_id=${server.dataModelId}`;
const headers = { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" };

async function run(durationMs: number) {
  let ok = 0, failed = 0, n = 0;
  const lat: number[] = [];
  const end = performance.now() + durationMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const body = bodies[n++ % bodies.length]!;
      const s = performance.now();
      const res = await fetch(url, { method: "POST", headers, body });
      await res.arrayBuffer();
      lat.push(performance.now() - s);
      if (res.status === 200) ok++;
      else failed++;
    }
  }));
  return { ok, failed, lat };
}

try {
  await run(2000); // warm-up
  const { ok, failed, lat } = await run(seconds * 1000);
  lat.sort((a, b) => a - b);
  const p = (x: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * x))]!.toFixed(2);
  console.log(
    `loopback HTTP, ${concurrency} concurrent, ${seconds} s: ${(ok / seconds).toFixed(0)} req/s ` +
      `(${ok} ok, ${failed} failed), latency p50 ${p(0.5)} ms, p99 ${
        p(0.99)
      } ms, cores ${navigator.hardwareConcurrency}`,
  );
} finally {
  await server.stop();
}
