/**
 * What recording an answer's citations as impressions adds to the answer path: the answer engine
 * hands them to the impression recorder (analytics/impressions.ts), which only buffers them; the
 * event log write happens in batches off the response path. Measures that hand-over per answer.
 *
 *   deno run -A bench/citation_impressions.ts [answers=200000]
 */
import { ImpressionRecorder } from "../analytics/impressions.ts";
import type { EventSink } from "../analytics/events.ts";
import { FixedClock } from "../core/clock.ts";
import { memoryLogger } from "../core/log.ts";

const n = Number(Deno.args[0] ?? 200_000);
const clock = new FixedClock("2026-11-22T12:00:00Z");
// The sink takes each batch at once: this measures the answer path's share, not the log write.
const sink = { record: () => Promise.resolve(0) } as unknown as EventSink;
const recorder = new ImpressionRecorder(sink, clock, memoryLogger());
const cited = {
  tenantId: "tn_bench",
  aiModelId: "am_bench",
  caller: "payproxy:agent-1",
  at: clock.now(),
  articles: [1, 2, 3].map((i) => ({
    dataModelId: "dm_bench",
    articleId: `ar_${i}`,
    url: `https://news.example/a/${i}`,
    position: i,
  })),
};
for (let i = 0; i < 20_000; i++) recorder.addCited(cited); // JIT warm-up
const t0 = performance.now();
for (let i = 0; i < n; i++) recorder.addCited(cited);
const us = ((performance.now() - t0) * 1000) / n;
console.log(`citations handed to the recorder (3 per answer), ${n} answers: ${us.toFixed(2)} us per answer`);
console.log(`load average (1, 5, 15 min): ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
