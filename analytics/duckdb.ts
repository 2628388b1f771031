import type { DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { preloadDuckDbLibrary } from "./duckdb_native.ts";

/**
 * After freeing more than this at once (a sorted batch, a Parquet row group), DuckDB hands its
 * allocator's cached memory back to the system. With the default (512 MB) the first logs export of
 * a process kept about 90 MB of freed memory (peak 97 MB), at 4 MB about 49 MB (peak 55 MB); the
 * rollups' times did not move beyond the noise (bench/RESULTS.md).
 */
const BULK_DEALLOCATION_FLUSH = "4MB";

/** Options for the process-wide DuckDB instance. */
export interface DuckDbOptions {
  /** `:memory:` or a database file path. */
  path?: string;
  threads?: number;
  memoryLimit?: string;
  /** Path of `libduckdb.so` to load first (compiled binaries); default: beside the executable. */
  libPath?: string;
}

/**
 * The one DuckDB instance of the process. Open a connection per unit of work with
 * {@link AnalyticsDb.withConnection}; handles are closed deterministically because Deno's
 * resource sanitizer cannot see them.
 */
export class AnalyticsDb {
  private constructor(private readonly instance: DuckDBInstance) {}

  static async open({ path = ":memory:", threads, memoryLimit, libPath }: DuckDbOptions = {}): Promise<AnalyticsDb> {
    preloadDuckDbLibrary(libPath);
    // Imported here, after the preload, because importing the package loads the native addon.
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const options: Record<string, string> = {
      allocator_bulk_deallocation_flush_threshold: BULK_DEALLOCATION_FLUSH,
    };
    if (threads) options.threads = String(threads);
    if (memoryLimit) options.memory_limit = memoryLimit;
    return new AnalyticsDb(await DuckDBInstance.create(path, options));
  }

  /** Runs `fn` with a fresh connection, closing it afterwards whatever happens. */
  async withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    const conn = await this.instance.connect();
    try {
      return await fn(conn);
    } finally {
      conn.closeSync();
    }
  }

  /** A connection the caller must close (`closeSync`); for work that outlives one call, e.g. a stream. */
  connect(): Promise<DuckDBConnection> {
    return this.instance.connect();
  }

  /** True when the engine answers a trivial query. */
  async ping(): Promise<boolean> {
    try {
      return await this.withConnection(async (c) => {
        const r = await c.runAndReadAll("SELECT 1 AS ok");
        return r.getRowObjects()[0]?.ok === 1;
      });
    } catch {
      return false;
    }
  }

  close(): void {
    this.instance.closeSync();
  }
}
