/**
 * HTTP throughput of `POST /app/v2/search` on loopback over the demo corpus: starts the real
 * service (`main.ts serve`, fresh DATA_DIR, demo seed) as a child process, then drives it with
 * `fetch` at bounded concurrency for a fixed time and reports requests/s and latency.
 *
 *   deno run -A bench/http_load.ts        (LOAD_SECONDS=15 LOAD_CONCURRENCY=32 LOG_LEVEL=warn)
 */
const seconds = Number(Deno.env.get("LOAD_SECONDS") ?? 15);
const concurrency = Number(Deno.env.get("LOAD_CONCURRENCY") ?? 32);
const logLevel = Deno.env.get("LOG_LEVEL") ?? "warn";
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";

const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const port = (probe.addr as Deno.NetAddr).port;
probe.close();
const dataDir = await Deno.makeTempDir({ prefix: "svc-load-" });
const root = new URL("..", import.meta.url).pathname;
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "main.ts", "serve"],
  cwd: root,
  env: { DATA_DIR: dataDir, PORT: String(port), EMBEDDINGS_CACHE_PATH: cachePath, LOG_LEVEL: logLevel },
  stdout: "piped",
  stderr: "inherit",
}).spawn();

// Read the demo key and data model id the first start prints.
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let out = "";
while (!/data model\s+dm_\w+/.test(out) || !/DEMO_API_KEY=\S+/.test(out)) {
  const { value, done } = await reader.read();
  if (done) throw new Error(`server exited early:\n${out}`);
  out += value;
}
(async () => {
  while (!(await reader.read()).done) { /* drain */ }
})();
const key = /DEMO_API_KEY=(\S+)/.exec(out)![1]!;
const dmId = /data model\s+(dm_\w+)/.exec(out)![1]!;
const base = `http://127.0.0.1:${port}`;
for (let i = 0; i < 100; i++) {
  if ((await fetch(`${base}/healthz`).then((r) => r.text().then(() => r.ok)).catch(() => false))) break;
  await new Promise((r) => setTimeout(r, 100));
}

const queries = [
  "interest rates",
  "coastal storm flooding",
  "port strike",
  "cup final",
  "heatwave",
  "budget airlines",
  "flu vaccine",
  "housing bill",
  "film festival",
  "coffee prices",
  "mars rover",
  "marathon record",
];
const bodies = queries.flatMap((q) => [
  JSON.stringify({ query: q }),
  JSON.stringify({ query: q, search_algorithm: "most_recent", ref: "metrowire.example", num_articles_ref: 2 }),
]);
const url = `${base}/app/v2/search?data_model_id=${dmId}`;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

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
  child.kill("SIGTERM");
  await child.status;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
