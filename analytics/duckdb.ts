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
  /** Units of work under way (connections open through this class). */
  #active = 0;
  #closing = false;
  #closed = false;
  readonly #whenClosed = Promise.withResolvers<void>();

  /** The instance, once created ({@link lazy}: on the first connection). */
  #instance: DuckDBInstance | null;
  #opening: Promise<DuckDBInstance> | null = null;

  private constructor(instance: DuckDBInstance | null, private readonly options: DuckDbOptions = {}) {
    this.#instance = instance;
  }

  static async open(options: DuckDbOptions = {}): Promise<AnalyticsDb> {
    return new AnalyticsDb(await createInstance(options));
  }

  /**
   * An AnalyticsDb that loads DuckDB and creates its instance on the first connection, so a
   * process (a test world) that never queries analytics never pays for either; a failure to open
   * surfaces there instead of here.
   */
  static lazy(options: DuckDbOptions = {}): AnalyticsDb {
    return new AnalyticsDb(null, options);
  }

  /**
   * Runs `fn` with a fresh connection, closing it afterwards whatever happens.
   * @throws once {@link close} was called
   */
  async withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    const conn = await this.connect();
    try {
      return await fn(conn);
    } finally {
      this.#release(conn);
    }
  }

  /**
   * A connection for work that outlives one call (e.g. a stream); hand it back with
   * {@link release}, never with its own `closeSync`, so {@link close} knows when it is idle.
   * @throws once {@link close} was called
   */
  async connect(): Promise<DuckDBConnection> {
    if (this.#closing) throw new Error("The analytics database is closed");
    this.#active++;
    try {
      return await (this.#instance ?? await this.#create()).connect();
    } catch (err) {
      this.#idle();
      throw err;
    }
  }

  /** Closes a connection from {@link connect}. */
  release(conn: DuckDBConnection): void {
    this.#release(conn);
  }

  #release(conn: DuckDBConnection): void {
    try {
      conn.closeSync();
    } finally {
      this.#idle();
    }
  }

  #create(): Promise<DuckDBInstance> {
    this.#opening ??= createInstance(this.options).then(
      (instance) => this.#instance = instance,
      (err) => {
        this.#opening = null; // the next connection tries again
        throw err;
      },
    );
    return this.#opening;
  }

  #idle(): void {
    this.#active--;
    if (this.#closing && this.#active === 0) this.#closeNow();
  }

  #closeNow(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#instance?.closeSync();
    } finally {
      this.#whenClosed.resolve();
    }
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

  /**
   * Refuses new work and closes the instance once the work under way has finished. Work outlives
   * its request: a dashboard stream whose client left still runs its panels' queries, an
   * abandoned export finishes the batch it is writing. Closing the instance under them, or ending
   * the process (or a test) while they ran, crashed it in the native addon (SIGSEGV).
   * @returns when the instance is closed
   */
  close(): Promise<void> {
    this.#closing = true;
    if (this.#active === 0) this.#closeNow();
    return this.#whenClosed.promise;
  }
}

async function createInstance(
  { path = ":memory:", threads, memoryLimit, allocatorFlush, libPath }: DuckDbOptions,
): Promise<DuckDBInstance> {
  preloadDuckDbLibrary(libPath);
  // Imported here, after the preload, because importing the package loads the native addon.
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const options: Record<string, string> = {};
  if (allocatorFlush) options.allocator_bulk_deallocation_flush_threshold = allocatorFlush;
  if (threads) options.threads = String(threads);
  if (memoryLimit) options.memory_limit = memoryLimit;
  const instance = await DuckDBInstance.create(path, options);
  // Parquet footers are kept between queries (parquet_metadata_cache): each scan of the `events`
  // view globs every day's files and reads their footers (the schemas union_by_name merges, the
  // row-group statistics), and a rollup scans it several times. DuckDB re-reads a kept footer when
  // its file's mtime changed or is under 10 s old (validate_external_file_cache's default), and
  // the cache is an LRU counted in its memory limit. A dashboard load (14 rollups over 16 days of
  // files) took 0.32 s of CPU without it, 0.25 s with it. Set once the instance is up: the
  // setting belongs to the parquet extension, which is not loaded while the instance is created.
  const conn = await instance.connect();
  try {
    await conn.run("SET GLOBAL parquet_metadata_cache = true");
  } finally {
    conn.closeSync();
  }
  return instance;
}
