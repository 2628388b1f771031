/**
 * The service for the token-exchange load test, in its own process: `:memory:` KV and DuckDB,
 * warn-level logs, the demo seller. Prints one JSON line `{"url": ...}` once listening.
 *
 *   deno run -A bench/token_server.ts
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { systemClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import { buildDeps } from "../composition.ts";
import { createLogger } from "../core/log.ts";
import { seedStorefront } from "../fixtures/storefront.ts";
import { createApp } from "../routes/app.ts";
import { startServer } from "../routes/server.ts";

// Every exchange comes from one loopback address: its per-address budget for jwt-bearer grants is raised past the run.
const config = parseConfig({
  KV_PATH: ":memory:",
  LOG_LEVEL: "warn",
  DATA_DIR: await Deno.makeTempDir(),
  PUBLIC_READS_PER_MIN_PER_ADDRESS: "1000000",
});
const kv = await Deno.openKv(":memory:");
const duckdb = await AnalyticsDb.open();
const deps = buildDeps({
  config,
  kv,
  duckdb,
  clock: systemClock,
  log: createLogger({ level: "warn", clock: () => systemClock.now() }),
});
await seedStorefront(deps, { tenantId: "tn_bench" } as never);
const server = startServer(createApp(deps).fetch, { port: 0 });
console.log(JSON.stringify({ url: server.url }));
Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown(1000);
  duckdb.close();
  kv.close();
  Deno.exit(0);
});
await server.finished;
