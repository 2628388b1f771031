/**
 * Time to the first answer token of the public widget route on the demo data (target: <= 200 ms
 * with the extractive provider): the real service as a child process (`main.ts serve`, demo
 * seed), the demo widget, `POST /widget/v1/{wd}/ask` with `Accept: text/event-stream` over
 * loopback HTTP, from the request until the first `event: token` arrives; also until `done`.
 *
 * Run: `deno run -A bench/widget_first_token.ts [questions=60]`
 */
import { startDemoServer } from "./_demo_server.ts";

const QUESTIONS = [
  "Where is the storm flooding roads?",
  "What happened to interest rates?",
  "Who won the cup final?",
  "Is the port strike over?",
  "How hot will the heatwave get?",
  "What is in the housing bill?",
  "Why are coffee prices rising?",
  "What did the mars rover find?",
];

const n = Number(Deno.args[0] ?? 60);
const server = await startDemoServer({
  // The bench measures latency, not the limits: lift them.
  env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "100000", WIDGET_RATE_LIMIT_PER_WIDGET: "100000" },
  prefix: "svc-widget-bench-",
});
try {
  const demoEnv = await Deno.readTextFile(`${server.env.DATA_DIR}/demo.env`);
  const widgetId = /export WD=(\S+)/.exec(demoEnv)![1]!;
  const ask = async (query: string) => {
    const t0 = performance.now();
    const res = await fetch(`${server.base}/widget/v1/${widgetId}/ask`, {
      method: "POST",
      headers: { origin: server.base, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query, session_id: "bench-session" }),
    });
    if (res.status !== 200) throw new Error(`ask answered ${res.status}: ${await res.text()}`);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "", first = NaN;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
      if (Number.isNaN(first) && seen.includes("event: token")) first = performance.now() - t0;
    }
    if (!seen.includes("event: done")) throw new Error(`no done event: ${seen.slice(0, 300)}`);
    return { first, total: performance.now() - t0 };
  };
  for (let i = 0; i < 10; i++) await ask(QUESTIONS[i % QUESTIONS.length]!); // warm-up
  const firsts: number[] = [], totals: number[] = [];
  for (let i = 0; i < n; i++) {
    const { first, total } = await ask(QUESTIONS[i % QUESTIONS.length]!);
    firsts.push(first);
    totals.push(total);
  }
  const pct = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(1);
  };
  console.log(`questions: ${n} (after 10 warm-up), load average: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`first token ms: p50 ${pct(firsts, 50)}, p95 ${pct(firsts, 95)}, max ${pct(firsts, 100)}`);
  console.log(`done ms:        p50 ${pct(totals, 50)}, p95 ${pct(totals, 95)}, max ${pct(totals, 100)}`);
} finally {
  await server.stop();
}
