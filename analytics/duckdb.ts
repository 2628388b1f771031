import type { DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { preloadDuckDbLibrary } from "./duckdb_native.ts";

/** Options for the process-wide DuckDB instance. */
export interface DuckDbOptions {
  /** `:memory:` or a database file path. */
  path?: string;
  threads?: number;
  memoryLimit?: string;
  /**
   * After freeing more than this at once (a sorted batch, a Parquet row group), DuckDB returns its
   * allocator's cached memory to the system (`allocator_bulk_deallocation_flush_threshold`; DuckDB's
   * default is 512MB). At 4MB the first logs export of a process grew RSS by 56 to 80 MB instead of
   * 128 to 189 MB (16MB and 32MB kept most of it), at about 5 % on the rollups' times
   * (bench/RESULTS.md).
   */
  allocatorFlush?: string;
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

  static async open(
    { path = ":memory:", threads, memoryLimit, allocatorFlush, libPath }: DuckDbOptions = {},
  ): Promise<AnalyticsDb> {
    preloadDuckDbLibrary(libPath);
    // Imported here, after the preload, because importing the package loads the native addon.
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const options: Record<string, string> = {};
    if (allocatorFlush) options.allocator_bulk_deallocation_flush_threshold = allocatorFlush;
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
