/**
 * The Ask AI widget on the publisher demo site in headless Chromium, against the real service
 * (`main.ts serve` with the demo seed, which also serves the demo site on DEMO_SITE_URL):
 *
 *   deno run -A bench/widget_load.ts [runs=10]
 *
 * - sizes: loader.js and widget.<hash>.js as sent with gzip (targets: <= 4 KB, <= 40 KB);
 * - drawn: from the loader script's `load` event to the first frame after the widget is drawn
 *   (`data-state=ready`), in a fresh browser context each run (empty HTTP cache), inline and
 *   docked (target: <= 300 ms);
 * - CLS: cumulative layout shift of the page until 1 s after the widget is drawn (target: <= 0.01);
 * - first token: from the question's submit to the first answer text in the widget (SSE over
 *   loopback, extractive provider; target: <= 200 ms), and to the whole answer.
 * Prints each series' median, p95 and max.
 */
import http from "node:http";
import { openBrowser } from "../tests/_browser.ts";
import { startDemoServer } from "./_demo_server.ts";

const runs = Number(Deno.args[0] ?? 10);

/** Bytes on the wire of `url` fetched with `Accept-Encoding: gzip` (node:http does not decompress). */
function gzipBytes(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      if (res.headers["content-encoding"] !== "gzip") reject(new Error(`${url} was not sent gzip`));
      let n = 0;
      res.on("data", (chunk: Uint8Array) => n += chunk.length);
      res.on("end", () => resolve(n));
    }).on("error", reject);
  });
}
const QUESTIONS = [
  "What is happening with the harbour port strike?",
  "What did the central bank decide on interest rates?",
  "Where is the storm flooding roads?",
  "Who won the cup final?",
  "Why are coffee prices rising?",
  "What is in the housing bill?",
];

const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const sitePort = (probe.addr as Deno.NetAddr).port;
probe.close();
const siteUrl = `http://127.0.0.1:${sitePort}`;
const server = await startDemoServer({
  // Latency, not the limits, is measured here.
  env: {
    DEMO_SITE_URL: siteUrl,
    WIDGET_RATE_LIMIT_PER_ADDRESS: "100000",
    WIDGET_RATE_LIMIT_PER_WIDGET: "100000",
  },
  prefix: "svc-widget-load-",
});

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return `median ${at(0.5).toFixed(1)}, p95 ${at(0.95).toFixed(1)}, max ${s.at(-1)!.toFixed(1)} (n=${s.length})`;
};

// Installed before the page's own scripts (over CDP, so the page's strict CSP does not apply).
const INSTRUMENT = `
  globalThis.__bench = { cls: 0, loaderLoaded: null, drawn: null };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.hadRecentInput) continue;
      globalThis.__bench.cls += e.value;
      globalThis.__bench.shifts = (globalThis.__bench.shifts || []).concat(e.sources.map((s) =>
        e.value.toFixed(4) + " " + (s.node ? (s.node.nodeName + "." + (s.node.className || "") + "#" + (s.node.id || "")) : "?") +
        " " + JSON.stringify(s.previousRect) + "->" + JSON.stringify(s.currentRect)));
    }
  }).observe({ type: "layout-shift", buffered: true });
  document.addEventListener("load", (e) => {
    if (e.target.src && e.target.src.endsWith("/widget/v1/loader.js")) globalThis.__bench.loaderLoaded = performance.now();
  }, true);
  new MutationObserver(() => {
    const w = document.querySelector("ask-ai-widget[data-state=ready]");
    if (w && globalThis.__bench.drawn === null) {
      globalThis.__bench.drawn = -1;
      requestAnimationFrame(() => { globalThis.__bench.drawn = performance.now(); });
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
`;

try {
  for (let i = 0; i < 300; i++) {
    if (await fetch(siteUrl).then((r) => r.text().then(() => r.ok)).catch(() => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const loaderGzip = await gzipBytes(`${server.base}/widget/v1/loader.js`);
  const loaderText = await (await fetch(`${server.base}/widget/v1/loader.js`)).text();
  const widgetPath = /\/widget\/v1\/assets\/widget\.[0-9a-f]{16}\.js/.exec(loaderText)![0];
  const widgetGzip = await gzipBytes(`${server.base}${widgetPath}`);
  const widgetRaw = (await (await fetch(`${server.base}${widgetPath}`)).arrayBuffer()).byteLength;
  console.log(`loader.js: ${loaderGzip} B gzip (${loaderText.length} B)`);
  console.log(`widget.<hash>.js: ${widgetGzip} B gzip (${widgetRaw} B)`);

  await using b = await openBrowser("widget load bench");
  const drawn: Record<string, number[]> = { inline: [], docked: [] };
  const cls: Record<string, number[]> = { inline: [], docked: [] };
  const firstToken: number[] = [];
  const wholeAnswer: number[] = [];
  for (let run = 0; run < runs; run++) {
    for (const [kind, path] of [["inline", "/"], ["docked", "/docked.html"]] as const) {
      const ctx = await b.browser.createBrowserContext();
      const page = await ctx.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      await page.evaluateOnNewDocument(INSTRUMENT);
      await page.goto(`${siteUrl}${path}`, { waitUntil: "load" });
      await page.waitForFunction("globalThis.__bench.drawn > 0");
      await new Promise((r) => setTimeout(r, 1000));
      const m = await page.evaluate("globalThis.__bench") as { cls: number; loaderLoaded: number; drawn: number };
      drawn[kind]!.push(m.drawn - m.loaderLoaded);
      cls[kind]!.push(m.cls);
      if (Deno.env.get("SHIFTS") && m.cls > 0) console.log(kind, (m as unknown as { shifts: string[] }).shifts);
      if (kind === "inline") {
        // One question per run, a different one each time (no answer cache shared across runs' texts).
        const q = QUESTIONS[run % QUESTIONS.length]!;
        const t = await page.evaluate(`new Promise((resolve) => {
          const root = document.querySelector("ask-ai-widget").shadowRoot;
          const input = root.querySelector("#ask-q");
          input.value = ${JSON.stringify(q)};
          let first = null;
          const t0 = performance.now();
          const obs = new MutationObserver(() => {
            const a = root.querySelector(".turn:last-child .a");
            if (first === null && a && a.textContent) first = performance.now() - t0;
            if (!document.querySelector("ask-ai-widget").hasAttribute("data-busy") && first !== null) {
              obs.disconnect();
              resolve({ first, whole: performance.now() - t0 });
            }
          });
          obs.observe(root, { subtree: true, childList: true, characterData: true });
          obs.observe(document.querySelector("ask-ai-widget"), { attributes: true });
          root.querySelector("form").requestSubmit();
        })`) as { first: number; whole: number };
        firstToken.push(t.first);
        wholeAnswer.push(t.whole);
      }
      await ctx.close();
    }
  }
  console.log(`drawn after loader load, inline (ms): ${stats(drawn.inline!)}`);
  console.log(`drawn after loader load, docked (ms): ${stats(drawn.docked!)}`);
  console.log(
    `CLS inline: max ${Math.max(...cls.inline!).toFixed(4)}; docked: max ${Math.max(...cls.docked!).toFixed(4)}`,
  );
  console.log(`first answer token in the widget (ms): ${stats(firstToken)}`);
  console.log(`whole answer in the widget (ms): ${stats(wholeAnswer)}`);
  console.log(`load average: ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`);
} finally {
  await server.stop();
}
