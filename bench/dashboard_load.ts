/**
 * Dashboard first load on the demo data, in a real headless Chromium against the real service
 * (`main.ts serve`, the process `deno task start` runs, with the demo seed).
 *
 *   deno run -A bench/dashboard_load.ts [runs=5] [--shots DIR]
 *
 * Measures, from navigation start to `body[data-loaded=true]` (page, assets, every panel's API
 * call answered and drawn), in a signed-in tab:
 * - cold: a fresh browser profile (empty HTTP cache) and a freshly started service whose analytics
 *   cache is empty (the DATA_DIR restored from the copy taken right after seeding), `runs` times;
 * - warm server: a fresh browser profile against the same running service (its analytics answers
 *   cached, as for a second reader of the same view), `runs` times;
 * - revisit: the same profile loading the page again (assets from the browser cache).
 * Prints each figure, the medians, the first panel drawn, and the load average. With `--shots`,
 * saves screenshots of the whole dashboard at 1280x800 and 390x844.
 */
import { openBrowser } from "../tests/_browser.ts";

const args = [...Deno.args];
const shotsAt = args.indexOf("--shots");
const shotsDir = shotsAt >= 0 ? args.splice(shotsAt, 2)[1] : undefined;
const runs = Number(args[0] ?? 5);
const root = new URL("..", import.meta.url).pathname;
const VIEW = "/dashboard?compare=previous_period";

interface Service {
  base: string;
  stop(): Promise<void>;
}

/** Starts `main.ts serve` on `dataDir`; resolves once /healthz answers. */
async function serve(dataDir: string): Promise<Service> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", "serve"],
    cwd: root,
    env: {
      DATA_DIR: dataDir,
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "warn",
      EMBEDDINGS_CACHE_PATH: Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin",
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
  };
  for (let i = 0; i < 1200; i++) {
    if (await fetch(`${base}/healthz`).then((r) => r.body?.cancel().then(() => r.ok)).catch(() => false)) {
      return { base, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error("the service did not answer /healthz within 120 s");
}

/** Copies a folder with its files' modes (`cp -a`). */
async function copy(from: string, to: string): Promise<void> {
  const { success } = await new Deno.Command("cp", { args: ["-a", from, to] }).output();
  if (!success) throw new Error(`cp -a ${from} ${to} failed`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const load = () => Deno.loadavg().map((n) => n.toFixed(2)).join(" ");

const dataDir = await Deno.makeTempDir({ prefix: "dash-bench-" });
const pristine = `${dataDir}-pristine`;
await using browser = await openBrowser("dashboard bench");
try {
  // First start: seeds the demo (as `deno task start` on an empty ./data), then stops so the
  // seeded store can be copied before any dashboard call fills the analytics cache.
  const t0 = performance.now();
  let svc = await serve(dataDir);
  console.log(`demo seeded and listening in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await svc.stop();
  const key = /KEY=(ak_\S+)/.exec(await Deno.readTextFile(`${dataDir}/demo.env`))![1]!;
  await copy(dataDir, pristine);

  /** One load in a fresh profile: ms to data-loaded=true, and ms to the first panel drawn. */
  const coldLoad = async (base: string) => {
    const ctx = await browser.browser.createBrowserContext();
    try {
      const page = await ctx.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      await page.evaluateOnNewDocument((k: string) => sessionStorage.setItem("analytics_api_key", k), key);
      return await timedLoad(page, base);
    } finally {
      await ctx.close();
    }
  };
  const timedLoad = async (page: typeof browser.page, base: string) => {
    const started = performance.now();
    await page.goto(`${base}${VIEW}`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("#cards .card", { timeout: 60_000 });
    const firstPanel = performance.now() - started;
    await page.waitForSelector("body[data-loaded=true]", { timeout: 60_000 });
    const total = performance.now() - started;
    // Where the time went, from the page's own clock: each request's start and end (ms).
    const timeline = await page.evaluate(() => {
      type Entry = { name: string; startTime: number; responseEnd: number };
      const perf = (globalThis as unknown as { performance: { getEntriesByType(t: string): Entry[] } }).performance;
      return [...perf.getEntriesByType("navigation"), ...perf.getEntriesByType("resource")].map((e) =>
        `${new URL(e.name).pathname.replace(/^\/(v1\/analytics|dashboard)\/?/, "") || "page"} ` +
        `${e.startTime.toFixed(0)}-${e.responseEnd.toFixed(0)}`
      );
    });
    return { total, firstPanel, timeline };
  };

  const cold: number[] = [], coldFirst: number[] = [];
  for (let i = 0; i < runs; i++) {
    await Deno.remove(dataDir, { recursive: true });
    await copy(pristine, dataDir);
    svc = await serve(dataDir);
    try {
      const r = await coldLoad(svc.base);
      cold.push(r.total);
      coldFirst.push(r.firstPanel);
      console.log(`cold ${i + 1}: ${r.total.toFixed(0)} ms (summary drawn at ${r.firstPanel.toFixed(0)} ms)`);
      if (i === 0) console.log(`  requests (start-end ms): ${r.timeline.join(", ")}`);
    } finally {
      if (i < runs - 1) await svc.stop();
    }
  }
  const warm: number[] = [];
  for (let i = 0; i < runs; i++) warm.push((await coldLoad(svc.base)).total);
  console.log(`warm server, fresh profile: ${warm.map((n) => n.toFixed(0)).join(", ")} ms`);
  const page = browser.page;
  await page.setViewport({ width: 1280, height: 800 });
  await page.evaluateOnNewDocument((k: string) => sessionStorage.setItem("analytics_api_key", k), key);
  await timedLoad(page, svc.base);
  const revisit: number[] = [];
  for (let i = 0; i < runs; i++) revisit.push((await timedLoad(page, svc.base)).total);
  console.log(`revisit (browser cache): ${revisit.map((n) => n.toFixed(0)).join(", ")} ms`);

  if (shotsDir) {
    await Deno.mkdir(shotsDir, { recursive: true });
    await page.screenshot({ path: `${shotsDir}/dashboard-1280x800.png`, fullPage: false });
    await page.setViewport({ width: 390, height: 844 });
    await timedLoad(page, svc.base);
    for (let i = 0; i < 4; i++) {
      await page.evaluate(
        (y: number) => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, y),
        i * 844,
      );
      await page.screenshot({ path: `${shotsDir}/dashboard-390-${i + 1}.png`, fullPage: false });
    }
    // A full-page shot changes the viewport for a moment: taken last.
    await page.setViewport({ width: 1280, height: 800 });
    await timedLoad(page, svc.base);
    await page.screenshot({ path: `${shotsDir}/dashboard-1280-full.png`, fullPage: true });
    console.log(`screenshots in ${shotsDir}`);
  }
  await svc.stop();
  console.log(
    `\nmedian first load, cold (fresh service and profile, ${runs} runs): ${median(cold).toFixed(0)} ms ` +
      `(summary drawn at ${median(coldFirst).toFixed(0)} ms)`,
  );
  console.log(`median first load, warm server, fresh profile: ${median(warm).toFixed(0)} ms`);
  console.log(`median revisit: ${median(revisit).toFixed(0)} ms`);
  console.log(`load average (1, 5, 15 min): ${load()}`);
} finally {
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  await Deno.remove(pristine, { recursive: true }).catch(() => {});
}
