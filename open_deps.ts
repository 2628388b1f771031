/**
 * Opening the stores a config names and wiring the deps over them: what `main.ts` serves and
 * administers with, in a module of its own so a process that only needs the deps (a test's child
 * process, a bench) does not load the HTTP app, the CLI and the demo seeds with them.
 */
import { AnalyticsDb } from "./analytics/duckdb.ts";
import { buildDeps, type Deps } from "./composition.ts";
import { systemClock } from "./core/clock.ts";
import type { Config } from "./core/config.ts";
import { createLogger } from "./core/log.ts";
import { retryBusyKv } from "./core/store/mod.ts";

/** Opens the stores named by the config and wires the deps (logging to `log`, by default a new JSON logger). */
export async function openDeps(
  config: Config,
  log = createLogger({ level: config.logLevel, clock: () => systemClock.now() }),
): Promise<Deps> {
  const isUrl = /^https?:\/\//.test(config.kvPath);
  // Owner-only, like demo.env: the KV holds payproxy secrets and signing keys in clear. A folder
  // that exists already keeps the mode its operator gave it.
  if (config.kvPath !== ":memory:" && !isUrl) {
    await Deno.mkdir(config.kvPath.replace(/\/[^/]*$/, "") || ".", { recursive: true, mode: 0o700 });
  }
  await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // Several processes may share one KV file (docs/operations.md): writes that meet another's lock wait and retry.
  const kv = retryBusyKv(await Deno.openKv(config.kvPath));
  const duckdb = await AnalyticsDb.open({
    path: config.duckdbPath,
    threads: config.duckdbThreads,
    memoryLimit: config.duckdbMemoryLimit,
    allocatorFlush: config.duckdbAllocatorFlush,
    libPath: config.duckdbLibPath,
  });
  const deps = buildDeps({ config, kv, duckdb, clock: systemClock, log });
  await deps.start();
  return deps;
}
