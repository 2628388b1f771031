/**
 * The pages people open first, measured against the real service (`main.ts serve` on a fresh data
 * folder, the demo seed):
 * - the front page `/`: latency of `requests` sequential GETs over HTTP (p50, p99), HTML and JSON;
 * - the API reference `/docs`: time from navigation to Swagger UI's operations drawn
 *   (`#operations .opblock`), in headless Chromium with a fresh profile (cold browser cache), `runs`
 *   times, and once more in the same profile (assets from the browser cache).
 *
 *   deno run -A bench/pages_bench.ts [requests=1000] [runs=5]
 */
import { openBrowser } from "../tests/_browser.ts";

const requests = Number(Deno.args[0] ?? 1000);
const runs = Number(Deno.args[1] ?? 5);
const root = new URL("..", import.meta.url).pathname;

const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const port = (probe.addr as Deno.NetAddr).port;
probe.close();
const dataDir = await Deno.makeTempDir({ prefix: "pages-bench-" });
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "main.ts", "serve"],
  cwd: root,
  env: { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "error" },
  stdout: "null",
  stderr: "null",
}).spawn();
const base = `http://127.0.0.1:${port}`;
try {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  const pct = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  for (const accept of ["text/html", "application/json"]) {
    const times: number[] = [];
    for (let i = 0; i < requests; i++) {
      const t = performance.now();
      const res = await fetch(`${base}/`, { headers: { accept } });
      await res.arrayBuffer();
      times.push(performance.now() - t);
    }
    console.log(`front page (${accept}): p50 ${pct(times, 0.5).toFixed(2)} ms, p99 ${pct(times, 0.99).toFixed(2)} ms`);
  }
  const cold: number[] = [];
  for (let i = 0; i < runs; i++) {
    await using b = await openBrowser("pages-bench");
    const t = performance.now();
    await b.page.goto(`${base}/docs`, { waitUntil: "domcontentloaded" });
    await b.page.waitForSelector("#operations .opblock", { timeout: 60_000 });
    cold.push(performance.now() - t);
    if (i === runs - 1) {
      const t2 = performance.now();
      await b.page.goto(`${base}/docs`, { waitUntil: "domcontentloaded" });
      await b.page.waitForSelector("#operations .opblock", { timeout: 60_000 });
      console.log(`/docs interactive, browser cache warm: ${(performance.now() - t2).toFixed(0)} ms`);
    }
  }
  console.log(
    `/docs interactive, cold browser: median ${pct(cold, 0.5).toFixed(0)} ms (${
      cold.map((x) => x.toFixed(0)).join(", ")
    })`,
  );
  console.log(`load average: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
} finally {
  child.kill("SIGTERM");
  await child.status;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
