/**
 * The flood of tests/security/events_decode_memory_test.ts, run in a process of its own: for each
 * shape, a fresh analytics world answers 12 concurrent 8 MiB widget batches from one address while
 * the process's resident set is sampled every 2 ms. Prints one JSON line: each shape's statuses,
 * resident set before (`idle`) and at its peak, and the milliseconds the flood took.
 */
import { analyticsWorld } from "../analytics/_fixture.ts";

const MiB = 1024 * 1024;
const ORIGIN = "https://news.example";

/** What one shape's flood measured. */
export interface FloodFigures {
  statuses: number[];
  idle: number;
  peak: number;
  ms: number;
}

/** Widget batches of just under `bytes` bytes, in the shapes that cost the most to decode. */
const SHAPES: Record<string, (bytes: number) => string> = {
  // 42,000 small events (refused at the 501st).
  "many events": (bytes) => {
    const event = JSON.stringify({ event_type: "query", session_id: "s".repeat(36), prompt: "p".repeat(120) });
    return `{"widget_id":"wd_main","events":[${
      Array(Math.floor((bytes - 100) / (event.length + 1))).fill(event).join(",")
    }]}`;
  },
  // One event of one long text (refused by the schema once decoded; charged for its size).
  "one long text": (bytes) =>
    `{"widget_id":"wd_main","events":[{"event_type":"query","prompt":"${"p".repeat(bytes - 100)}"}]}`,
  // One event of 290,000 unknown fields (the schema would drop them).
  "many fields": (bytes) => {
    const n = Math.min(290_000, Math.floor((bytes - 100) / 20));
    return `{"widget_id":"wd_main","events":[{"event_type":"widget_load",${
      Array.from({ length: n }, (_, i) => `"k${String(i).padStart(6, "0")}":"${"v".repeat(8)}"`).join(",")
    }}]}`;
  },
};

/** The shapes the test names. */
export const FLOOD_SHAPES = Object.keys(SHAPES);

/** A widget batch from the allowed origin. */
export const request = (body: BodyInit) =>
  new Request("http://localhost/v1/events", {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json" },
    body,
  });

async function flood(make: (bytes: number) => string): Promise<FloodFigures> {
  await using world = await analyticsWorld();
  const { w } = world;
  // One small batch first: the route's modules are warm, as in a running server.
  const warm = await w.app.request(
    request(JSON.stringify({ widget_id: "wd_main", events: [{ event_type: "widget_load" }] })),
  );
  if (warm.status !== 202) throw new Error(`the warm-up batch answered ${warm.status}`);
  const body = new TextEncoder().encode(make(8 * MiB - 1024));
  const requests = Array.from({ length: 12 }, () => request(body as BodyInit));

  const idle = Deno.memoryUsage().rss;
  let peak = idle;
  const sampler = setInterval(() => peak = Math.max(peak, Deno.memoryUsage().rss), 2);
  const started = performance.now();
  let statuses: number[];
  try {
    statuses = await Promise.all(requests.map(async (r) => {
      const res = await w.app.request(r);
      await res.body?.cancel();
      return res.status;
    }));
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, Deno.memoryUsage().rss);
  return { statuses, idle, peak, ms: performance.now() - started };
}

if (import.meta.main) {
  const figures: Record<string, FloodFigures> = {};
  for (const [shape, make] of Object.entries(SHAPES)) figures[shape] = await flood(make);
  console.log(JSON.stringify(figures));
}
