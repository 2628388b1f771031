/**
 * `deno task bench`: the cached analytics answer path (KV read + HTTP app), target <= 5 ms, and a
 * warm 30-day rollup over the demo data set (18,000 events) for comparison.
 */
import { demoEventsStep } from "../fixtures/demo_events.ts";
import { seedDemo } from "../fixtures/demo.ts";
import { createTestWorld } from "../tests/_helpers.ts";

const w = await createTestWorld({ env: { ANALYTICS_RATE_LIMIT_PER_MIN: "1000000" } });
const seeded = await seedDemo(w.deps, [demoEventsStep]);
const headers = { authorization: `Bearer ${seeded.apiKey}` };
const window = "start_date=2026-10-24&end_date=2026-11-22";
for (const p of ["ask-ai", "session-intelligence"]) {
  await (await w.app.request(`/v1/analytics/${p}?${window}`, { headers })).text();
}

Deno.bench("cached ask-ai answer (X-Cache HIT)", { group: "cached", baseline: true }, async () => {
  const res = await w.app.request(`/v1/analytics/ask-ai?${window}`, { headers });
  if (res.headers.get("x-cache") !== "HIT") throw new Error("expected a cache hit");
  await res.text();
});

Deno.bench("cached session-intelligence answer (X-Cache HIT)", { group: "cached" }, async () => {
  const res = await w.app.request(`/v1/analytics/session-intelligence?${window}`, { headers });
  if (res.headers.get("x-cache") !== "HIT") throw new Error("expected a cache hit");
  await res.text();
});

Deno.bench("computed ask-ai 30-day rollup, demo data (no-cache)", { group: "computed" }, async () => {
  const res = await w.app.request(`/v1/analytics/ask-ai?${window}`, {
    headers: { ...headers, "cache-control": "no-cache" },
  });
  await res.text();
});

globalThis.addEventListener("unload", () => void w.close());
