import { AnalyticsDb } from "../analytics/duckdb.ts";
import { FixedClock } from "../core/clock.ts";
import { parseConfig } from "../core/config.ts";
import assert from "node:assert/strict";
import { buildDeps, type Deps, type DepsOverrides } from "../composition.ts";
import { newId } from "../core/ids.ts";
import { SearchEngine } from "../core/search/engine.ts";
import { memoryLogger } from "../core/log.ts";
import { createApp } from "../routes/app.ts";
import { SHARED_EMBEDDINGS_CACHE } from "./_basics.ts";

// The helpers that load nothing of the app live in _basics.ts; re-exported for the files that import them here.
export { bearer, runFreshProbe, SHARED_EMBEDDINGS_CACHE, within } from "./_basics.ts";

/** A test world: deps over `:memory:` KV and DuckDB, a temp data dir, a fixed clock, a memory log. */
export interface TestWorld {
  deps: Deps;
  app: ReturnType<typeof createApp>;
  clock: FixedClock;
  log: ReturnType<typeof memoryLogger>;
  dataDir: string;
  /** Creates a tenant and an API key for it. */
  tenantWithKey(name?: string): Promise<{ tenantId: string; key: string; keyId: string }>;
  close(): Promise<void>;
}

/** Builds the app with injected deps. Always `await using` it or call `close()` in `finally`. */
export async function createTestWorld(
  { env = {}, fetch, clock = new FixedClock("2026-11-22T12:00:00Z"), overrides = {}, wrapKv }: {
    env?: Record<string, string>;
    fetch?: typeof globalThis.fetch;
    /** The clock to build with (e.g. one a local peer shares). */
    clock?: FixedClock;
    /** Parts that replace what the builder would make (in-test services, local peers). */
    overrides?: DepsOverrides;
    /** Stands in front of the world's KV (e.g. `recordKvWrites` from `_kv_writes.ts`). */
    wrapKv?: (kv: Deno.Kv) => Deno.Kv;
  } = {},
): Promise<TestWorld & AsyncDisposable> {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-test-" });
  const config = parseConfig({
    DATA_DIR: dataDir,
    KV_PATH: ":memory:",
    BASE_URL: "http://svc.test",
    EMBEDDINGS_CACHE_PATH: SHARED_EMBEDDINGS_CACHE,
    ...env,
  });
  const opened = await Deno.openKv(":memory:");
  const kv = wrapKv ? wrapKv(opened) : opened;
  // Opened on the first analytics query: most worlds never make one, and loading DuckDB and making
  // its instance cost each world-building test file about 0.07 s of CPU. One thread per world: a
  // test's queries are small, and the suite runs two files at once on two cores, so a second thread
  // per instance only added scheduling (about 15 % more CPU per analytics file).
  const duckdb = AnalyticsDb.lazy({ threads: config.duckdbThreads ?? 1 });
  const log = memoryLogger();
  const deps = buildDeps({ config, kv, duckdb, clock, log }, { fetch, ...overrides });
  await deps.start();
  const app = createApp(deps);
  const close = async () => {
    await deps[Symbol.asyncDispose]();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  };
  return {
    deps,
    app,
    clock,
    log,
    dataDir,
    async tenantWithKey(name = "Acme Media") {
      const tenantId = (await deps.repos.tenants.create({
        id: newId("tn", clock),
        name,
        createdAt: clock.now().toISOString(),
      })).id;
      const { key, record } = await deps.apiKeys.create(tenantId, "test");
      return { tenantId, key, keyId: record.id };
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** The search engine of a world built without a `search` override (its article store, its embeddings). */
export function engineOf(deps: Deps): SearchEngine {
  assert.ok(deps.search instanceof SearchEngine, "this world's search is not the engine");
  return deps.search;
}
