/**
 * The analytics query engine over the one DuckDB instance: a view `events` over the
 * hive-partitioned Parquet files (`<eventsDir>/date=YYYY-MM-DD/*.parquet`), and the rollup SQL
 * files in analytics/sql/, run as prepared statements with bound parameters only. Every rollup
 * filters on the hive `date` column, which DuckDB uses to skip whole day folders.
 */
import type { DuckDBListValue, DuckDBType } from "@duckdb/node-api";
import { lazily } from "../core/lazily.ts";
import { listEventDates } from "./compaction.ts";
import { type DayScope, daysRead, type DaySwapGuard } from "./day_swaps.ts";
import type { AnalyticsDb } from "./duckdb.ts";
import { EVENT_COLUMNS } from "./schema.ts";
import { sqlString } from "./sql_util.ts";

/** Names of the rollup SQL files (analytics/sql/<name>.sql). */
export const ROLLUPS = [
  "ask_ai_by_time",
  "ask_ai_by_time_derived",
  "visit_cube_build",
  "ask_ai_by_column",
  "ask_ai_logs",
  "ask_ai_logs_count",
  "ask_ai_logs_day",
  "ask_ai_logs_parquet",
  "sponsored_daily",
  "sponsored_campaigns",
  "sponsored_prompts",
  "sponsored_click_types",
  "session_intelligence",
  "realtime",
  "articles_top",
  "agents",
  "trending_signals",
] as const;
export type RollupName = (typeof ROLLUPS)[number];

/** A bound parameter: text (or null), a whole number, a flag, or a list of texts. */
export type SqlParam = string | null | number | boolean | string[];

const sqlCache = new Map<RollupName, string>();

/** A line `-- @include <name>` stands for `sql/fragments/<name>.sql` (a block several rollups share). */
const INCLUDE = /^[ \t]*-- @include ([a-z_]+)[ \t]*$/gm;

/** Loads a rollup's SQL text with its includes resolved (read once per process). */
export async function loadSql(name: RollupName): Promise<string> {
  let text = sqlCache.get(name);
  if (!text) {
    text = await Deno.readTextFile(new URL(`./sql/${name}.sql`, import.meta.url));
    const fragments = new Map<string, string>();
    for (const [, fragment] of text.matchAll(INCLUDE)) {
      if (!fragments.has(fragment!)) {
        const body = await Deno.readTextFile(new URL(`./sql/fragments/${fragment}.sql`, import.meta.url));
        fragments.set(fragment!, body.replace(/^--.*\n/gm, "").trimEnd());
      }
    }
    text = text.replace(INCLUDE, (line, fragment: string) => {
      const indent = /^[ \t]*/.exec(line)![0];
      return fragments.get(fragment)!.split("\n").map((l) => l ? indent + l : l).join("\n");
    });
    sqlCache.set(name, text);
  }
  return text;
}

type Bound = string | null | bigint | boolean | DuckDBListValue;
type DuckDbApi = typeof import("@duckdb/node-api");

/**
 * DuckDB's value and type helpers, loaded with the first statement bound (its connection has
 * loaded the package by then), never with the app: importing the package loads the native addon.
 */
const loadDuckDbApi = lazily((): Promise<DuckDbApi> => import("@duckdb/node-api"));

function bindValue(api: DuckDbApi, v: SqlParam): { value: Bound; type: DuckDBType } {
  if (Array.isArray(v)) return { value: api.listValue(v), type: api.LIST(api.VARCHAR) };
  if (typeof v === "boolean") return { value: v, type: api.BOOLEAN };
  if (typeof v === "number") return { value: BigInt(Math.trunc(v)), type: api.BIGINT };
  return { value: v, type: api.VARCHAR };
}

/**
 * The parameters a statement names (comments aside): DuckDB refuses to bind one it does not, and
 * callers pass whole parameter sets (a window's edges and zone) that some rollups use only in part.
 */
function namedIn(sql: string, params: Record<string, SqlParam>): Record<string, SqlParam> {
  const code = sql.replace(/--[^\n]*/g, "");
  return Object.fromEntries(Object.entries(params).filter(([k]) => new RegExp(`\\$${k}\\b`).test(code)));
}

/**
 * What DuckDB says when the `events` view no longer fits the files: none left, a file without a
 * column the first file has, or a first file without a column a rollup reads.
 */
const STALE_VIEW = /No files found|schema mismatch in glob|Referenced column .* not found/i;

/** Runs rollups; keeps the `events` view pointing at the files (or at an empty table before any exist). */
export class AnalyticsEngine {
  /** `padded`: files exist but some lack a newer column, which the view fills with NULL until they have it. */
  #view: "none" | "empty" | "files" | "padded" = "none";
  #viewing: Promise<void> | null = null;

  /**
   * @param swaps runs each query again when compaction swapped one of its day folders under it
   *   (analytics/day_swaps.ts); absent (benchmarks, one-off tools): queries run once
   */
  constructor(
    private readonly db: AnalyticsDb,
    readonly eventsDir: string,
    private readonly swaps?: DaySwapGuard,
  ) {}

  #zones: Promise<ReadonlySet<string>> | null = null;

  /** The time zone names the engine can bucket in (ICU's list, read once). */
  timezones(): Promise<ReadonlySet<string>> {
    this.#zones ??= this.db.withConnection(async (c) => {
      const rows = (await c.runAndReadAll("SELECT name FROM pg_timezone_names()")).getRowObjectsJS();
      return new Set(rows.map((r) => String(r.name)));
    });
    return this.#zones;
  }

  /** Re-checks for files on the next query (call after a flush or compaction). */
  refresh(): void {
    if (this.#view !== "files") this.#view = "none";
  }

  async #hasFiles(): Promise<boolean> {
    for (const date of await listEventDates(this.eventsDir)) {
      for await (const e of Deno.readDir(`${this.eventsDir}/date=${date}`)) {
        if (e.isFile && e.name.endsWith(".parquet")) return true;
      }
    }
    return false;
  }

  async #ensureView(force = false): Promise<void> {
    if (!force && (this.#view === "files" || this.#view === "padded")) return;
    if (this.#viewing) return await this.#viewing;
    this.#viewing = (async () => {
      const files = await this.#hasFiles();
      if (!force && this.#view === "empty" && !files) return;
      // Only the day folders: scratch under `.tmp/` (a Parquet export being downloaded) is not an
      // event file, and reading it broke every rollup of every tenant while it existed.
      const glob = sqlString(`${this.eventsDir}/date=*/*.parquet`);
      let padded = false;
      await this.db.withConnection(async (c) => {
        if (!files) {
          // No files yet: an empty view with the same columns, so rollups answer zeros.
          await c.run(
            `CREATE OR REPLACE VIEW events AS SELECT ${
              EVENT_COLUMNS.map(([n, t]) => `CAST(NULL AS ${t}) AS ${n}`).join(", ")
            }, CAST(NULL AS DATE) AS date WHERE false`,
          );
          return;
        }
        // union_by_name merges every file's schema on every scan of the view (about a tenth of a
        // rollup's CPU): only files written before a column existed need it. While every file
        // holds every column, which every file this version writes does, the view reads by name
        // from the first file's schema; a file that breaks that later makes the next query
        // rebuild the view (#retryOnStaleView).
        const uniform = !(await c.runAndReadAll(
          `SELECT file_name FROM parquet_schema(${glob}) GROUP BY file_name
           HAVING count(DISTINCT name) FILTER (WHERE name IN (${
            EVENT_COLUMNS.map(([n]) => sqlString(n)).join(", ")
          })) < ${EVENT_COLUMNS.length} LIMIT 1`,
        )).getRowObjectsJS().length;
        const scan = `read_parquet(${glob}, hive_partitioning = true, hive_types = {'date': DATE}${
          uniform ? "" : ", union_by_name = true"
        })`;
        await c.run(`CREATE OR REPLACE VIEW events AS SELECT * FROM ${scan}`);
        if (uniform) return;
        // Files written before a column existed: that column reads as NULL (until a file has it).
        const have = new Set(
          (await c.runAndReadAll("DESCRIBE events")).getRowObjectsJS().map((r) => String(r.column_name)),
        );
        const missing = EVENT_COLUMNS.filter(([n]) => !have.has(n));
        if (!missing.length) return;
        padded = true;
        await c.run(
          `CREATE OR REPLACE VIEW events AS SELECT *, ${
            missing.map(([n, t]) => `CAST(NULL AS ${t}) AS ${n}`).join(", ")
          } FROM ${scan}`,
        );
      });
      this.#view = files ? (padded ? "padded" : "files") : "empty";
    })();
    try {
      await this.#viewing;
    } finally {
      this.#viewing = null;
    }
  }

  /** Runs a rollup with named parameters; returns rows as plain objects (BIGINT as bigint). */
  query(name: RollupName, params: Record<string, SqlParam>): Promise<Record<string, unknown>[]> {
    return this.#run(name, params, "");
  }

  /**
   * Runs `work`, which lists day folders itself and then queries the files it found, under the swap
   * guard for `days`: a listing taken while compaction swaps a day (inputs deleted, merged file not
   * renamed in yet) finds none of that day's files, and a query of those files alone would then
   * leave the day out without any error to show it. Each run lists again; the queries `work` runs
   * are covered by its reads of the swap state, not by reads of their own.
   */
  listingThenQuery<T>(days: DayScope, work: () => Promise<T>): Promise<T> {
    return this.swaps ? this.swaps.run(days, work) : work();
  }

  /** The rollup's `EXPLAIN ANALYZE` profile for these parameters (shows the day folders read). */
  async explain(name: RollupName, params: Record<string, SqlParam>): Promise<string> {
    const rows = await this.#run(name, params, "EXPLAIN ANALYZE ");
    return rows.map((r) => String(r.explain_value ?? "")).join("\n");
  }

  /** Writes a rollup's rows to a Parquet file (zstd) at a server-made path. */
  copyToParquet(name: RollupName, params: Record<string, SqlParam>, path: string): Promise<number> {
    return this.#copy(name, params, path, "FORMAT parquet, COMPRESSION zstd");
  }

  /** Writes a rollup's rows as CSV lines (no header, every field quoted) at a server-made path. */
  copyToCsv(name: RollupName, params: Record<string, SqlParam>, path: string): Promise<number> {
    return this.#copy(name, params, path, "FORMAT csv, HEADER false, QUOTE '\"', ESCAPE '\"', FORCE_QUOTE *");
  }

  async #copy(name: RollupName, params: Record<string, SqlParam>, path: string, options: string): Promise<number> {
    const sql = `COPY (${(await loadSql(name)).replace(/;\s*$/, "")}) TO ${sqlString(path)} (${options})`;
    return await this.#guarded(params, () =>
      this.db.withConnection(async (conn) => {
        const stmt = await conn.prepare(sql);
        try {
          this.#bind(await loadDuckDbApi(), stmt, namedIn(sql, params));
          const r = await stmt.run();
          return Number(r.rowsChanged);
        } finally {
          stmt.destroySync();
        }
      }));
  }

  #bind(
    api: DuckDbApi,
    stmt: { bind(values: Record<string, Bound>, types: Record<string, DuckDBType>): void },
    params: Record<string, SqlParam>,
  ) {
    const values: Record<string, Bound> = {};
    const types: Record<string, DuckDBType> = {};
    for (const [k, v] of Object.entries(params)) {
      const b = bindValue(api, v);
      values[k] = b.value;
      types[k] = b.type;
    }
    stmt.bind(values, types);
  }

  async #run(name: RollupName, params: Record<string, SqlParam>, prefix: string): Promise<Record<string, unknown>[]> {
    const sql = prefix + await loadSql(name);
    const run = () =>
      this.db.withConnection(async (conn) => {
        const stmt = await conn.prepare(sql);
        try {
          this.#bind(await loadDuckDbApi(), stmt, namedIn(sql, params));
          return (await stmt.runAndReadAll()).getRowObjectsJS() as Record<string, unknown>[];
        } finally {
          stmt.destroySync();
        }
      });
    return await this.#guarded(params, run);
  }

  /**
   * Runs a statement over the view (built first when needed), under the swap guard when there is
   * one: the view's glob is expanded as each run starts, so a run the guard repeats sees the files
   * of its day folders as they are then.
   */
  #guarded<T>(params: Record<string, SqlParam>, work: () => Promise<T>): Promise<T> {
    const once = async () => {
      await this.#ensureView();
      return await this.#retryOnStaleView(work);
    };
    return this.swaps ? this.swaps.run(daysRead(params), once) : once();
  }

  /**
   * Runs `work`; when the view no longer fits the files (files removed under us, e.g. a wiped data
   * dir; or a file without a column the view reads, written by an older version of the service),
   * rebuilds the view once and runs it again.
   */
  async #retryOnStaleView<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (STALE_VIEW.test(String((err as Error)?.message))) {
        await this.#ensureView(true);
        return await work();
      }
      throw err;
    }
  }
}
