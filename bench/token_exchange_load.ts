/**
 * Load test: POST /oauth2/token (jwt-bearer) over HTTP on loopback. Starts the service in a
 * child process (bench/token_server.ts), registers one anonymous identity, then keeps
 * CONCURRENCY requests in flight for DURATION_S seconds and reports throughput and latency.
 * Bounded: it stops after DURATION_S (default 10) and kills the child.
 *
 *   deno run -A bench/token_exchange_load.ts [DURATION_S] [CONCURRENCY]
 */
const durationS = Number(Deno.args[0] ?? 10);
const concurrency = Number(Deno.args[1] ?? 32);
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL("./token_server.ts", import.meta.url).pathname],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let buffered = "";
while (!buffered.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("server exited before listening");
  buffered += value;
}
const { url } = JSON.parse(buffered.split("\n")[0]!);

try {
  const reg = await fetch(`${url}/agent/identity`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "anonymous" }),
  });
  const assertion = (await reg.json()).identity.assertion as string;
  const body = new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString();
  const exchange = async () => {
    const res = await fetch(`${url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    const json = await res.json();
    if (res.status !== 200 || typeof json.access_token !== "string") throw new Error(`exchange failed: ${res.status}`);
  };
  // Warm-up: JIT, key cache, connection pool.
  for (let i = 0; i < 200; i++) await exchange();

  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const end = performance.now() + durationS * 1000;
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await exchange();
        ok++;
        latencies.push(performance.now() - t0);
      } catch {
        failed++;
      }
    }
  }));
  const elapsedS = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(2);
  console.log(JSON.stringify({
    requests: ok,
    failed,
    seconds: Number(elapsedS.toFixed(2)),
    per_second: Math.round(ok / elapsedS),
    concurrency,
    p50_ms: pct(0.5),
    p99_ms: pct(0.99),
  }));
} finally {
  child.kill("SIGTERM");
  await child.status;
}
