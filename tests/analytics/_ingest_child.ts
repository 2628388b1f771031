/**
 * Child process for the crash test: opens the stores under DATA_DIR like main.ts, starts the
 * pipeline (flushing often, so a kill can land mid-flush), then ingests batches forever, printing
 * `ack <n>` after each batch is acknowledged. The parent kills it with SIGKILL.
 */
import { parseConfig } from "../../core/config.ts";
import { openDeps } from "../../main.ts";

const config = parseConfig({
  DATA_DIR: Deno.args[0]!,
  LOG_LEVEL: "error",
  EVENTS_FLUSH_INTERVAL_S: "1",
  EVENTS_FLUSH_MAX_EVENTS: "600",
  EVENTS_COMPACT_MIN_FILES: "3",
  EVENTS_FLUSH_LEASE_S: "2",
});
const deps = await openDeps(config);
if (!(await deps.repos.aiModels.get("am_crash"))) {
  await deps.repos.tenants.create({ id: "tn_crash", name: "Crash", createdAt: new Date().toISOString() });
  await deps.repos.aiModels.create({
    id: "am_crash",
    tenantId: "tn_crash",
    name: "Crash agent",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: new Date().toISOString(),
  });
}
await deps.events.start();
const out = new TextEncoder();
for (let batch = 0;; batch++) {
  const events = Array.from({ length: 200 }, (_, i) => ({
    event_id: `k-${String(batch).padStart(5, "0")}-${String(i).padStart(3, "0")}`,
    event_type: "query",
    ai_agent: "am_crash",
    session_id: `s-${batch % 7}`,
    prompt: "How is inflation affecting mortgage rates?",
    response: "x".repeat(200),
  }));
  await deps.events.record(events);
  await Deno.stdout.write(out.encode(`ack ${batch}\n`));
}
