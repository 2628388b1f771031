/**
 * Exports of analytics answers: CSV (`Accept: text/csv` or `format=csv`) and Parquet
 * (`format=parquet`). The logs export streams every row of the window, newest first, with flat
 * memory: two UTC days at a time, DuckDB's CSV writer fills a scratch file under the events folder
 * that is streamed as the client reads and removed; the next two days are written meanwhile.
 */
import { analyticsErrors } from "./errors.ts";
import { formatDay, parseDay } from "./filters.ts";
import { windowParams } from "./metrics.ts";
import { type AnalyticsQuery, opt, requestWindow, type RollupDeps, widgetAgent } from "./rollups.ts";
import { DEFAULT_LOG_INTERACTION_TYPES } from "./schema.ts";
import type { AnalyticsDb } from "./duckdb.ts";
import { sqlString } from "./sql_util.ts";
import { FLUSH_SCRATCH } from "./events.ts";
import { markOwnedChunks } from "../core/owned_chunks.ts";
import { parseAccept } from "hono/utils/accept";

/** Answer formats. */
export const FORMATS = ["json", "csv", "parquet"] as const;
export type ExportFormat = (typeof FORMATS)[number];
/** Media type of Parquet files. */
export const PARQUET_TYPE = "application/vnd.apache.parquet";

/** Media types a client may ask for in `Accept`, and the format each means. */
const MEDIA_FORMATS: Record<string, ExportFormat> = {
  "application/json": "json",
  "text/csv": "csv",
  [PARQUET_TYPE]: "parquet",
  // A client that takes anything gets the default.
  "*/*": "json",
  "application/*": "json",
  "text/*": "csv",
};

/**
 * The format a request asks for: `format` wins, else the `Accept` media type with the highest
 * quality (`q`; `q=0` means "not this", equal weights keep the header's order), else JSON.
 * @throws 400 for an unknown `format`.
 */
export function requestedFormat(format: string | undefined, accept: string | undefined): ExportFormat {
  if (format !== undefined && format !== "") {
    if (!(FORMATS as readonly string[]).includes(format)) {
      throw analyticsErrors.format_invalid();
    }
    return format as ExportFormat;
  }
  const ranges = parseAccept(accept ?? "");
  // A type refused by name is not brought back by a range that covers it (`text/csv;q=0, text/*`).
  const refused = new Set(
    ranges.filter((a) => a.q <= 0 && !a.type.includes("*")).map((a) => MEDIA_FORMATS[a.type.toLowerCase()]),
  );
  const ranked = ranges.filter((a) => a.q > 0).sort((a, b) => b.q - a.q);
  for (const a of ranked) {
    const f = MEDIA_FORMATS[a.type.toLowerCase()];
    if (f && !(a.type.includes("*") && refused.has(f))) return f;
  }
  return "json";
}

/** Header line of the logs CSV (the fields of spec 2.6 rows). */
export const LOG_COLUMNS = [
  "timestamp",
  "widget_id",
  "placement_id",
  "deployment_type",
  "ai_agent",
  "referring_url",
  "interaction_type",
  "prompt",
  "response",
] as const;

const DAY_MS = 86_400_000;
const enc = new TextEncoder();

/**
 * Validates a logs export request (dates, zone, widget) as the export would, without running it:
 * what a `HEAD` of an export needs. @throws the export's 400s
 */
export async function checkLogsExport(deps: RollupDeps, tenantId: string, q: AnalyticsQuery): Promise<void> {
  await logParams(deps, tenantId, q);
}

async function logParams(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const agent = await widgetAgent(deps, tenantId, q);
  const interaction = opt(q, "interaction_type");
  const wp = windowParams(w);
  return {
    wp,
    params: {
      tenant_id: tenantId,
      start_ts: wp.start_ts,
      end_ts: wp.end_ts,
      ai_agent: agent,
      placement_id: opt(q, "placement_id"),
      deployment_type: opt(q, "deployment_type"),
      interaction_types: interaction === null ? [...DEFAULT_LOG_INTERACTION_TYPES] : [interaction],
    },
  };
}

/**
 * UTC day folders per CSV write. A day is one Parquet file of one row group once compacted, which
 * DuckDB reads on one thread: two days keep both cores busy (measured 1.5x the rows/s of one day
 * per write; four days add little speed and more memory).
 */
const DAYS_PER_BATCH = 2;
/**
 * Size of the pieces a batch's CSV is handed to the response in. Each piece is a fresh buffer the
 * server frees once sent (core/owned_chunks.ts); below glibc's largest mmap threshold step, freed
 * pieces are reused for the next ones: 256 KiB measured 75 to 82 MB of RSS growth over a served
 * 988,634-row export, 1 MiB 97 to 104 MB, at the same rate.
 */
const PIECE_BYTES = 1 << 18;

/**
 * Every log row of the request's window as a CSV byte stream (header first). Validation happens
 * before the stream is returned, so a bad request is still a 400.
 *
 * The window's UTC day folders are taken newest first, a few at a time: DuckDB's CSV writer
 * (parallel over the batch's files, sorted newest first) writes the batch to a scratch file
 * under the events folder, which is read in one piece, handed over in views of it and removed.
 * The next batch is written while the client reads the current one, so DuckDB and the client
 * overlap, and at most two batches exist at once.
 */
export async function logsCsvStream(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const { wp, params } = await logParams(deps, tenantId, q);
  const days: string[] = [];
  for (let d = parseDay(wp.to_date)!; d >= parseDay(wp.from_date)!; d -= DAY_MS) days.push(formatDay(d));
  const batches: { newest: string; oldest: string }[] = [];
  for (let i = 0; i < days.length; i += DAYS_PER_BATCH) {
    batches.push({ newest: days[i]!, oldest: days[Math.min(i + DAYS_PER_BATCH, days.length) - 1]! });
  }
  const engine = deps.engine;
  const dir = `${engine.eventsDir}/${FLUSH_SCRATCH}/export-${crypto.randomUUID()}`;
  await Deno.mkdir(dir, { recursive: true });
  // A batch's CSV file, or null when its folders hold no Parquet file. Compaction may replace a
  // day's files between the listing and the read: the batch is then listed and written again.
  const write = async (i: number): Promise<string | null> => {
    const path = `${dir}/${i}.csv`;
    const { newest, oldest } = batches[i]!;
    for (let attempt = 0;; attempt++) {
      let files: string[] = [];
      try {
        // Listed under the swap guard too: a day being swapped lists no file and would be left out.
        const wrote = await engine.listingThenQuery((day) => day >= oldest && day <= newest, async () => {
          files = await parquetFiles(engine.eventsDir, batches[i]!);
          if (!files.length) return false;
          await engine.copyToCsv("ask_ai_logs_day", { ...params, files }, path);
          return true;
        });
        return wrote ? path : null;
      } catch (err) {
        if (attempt > 0 || (await parquetFiles(engine.eventsDir, batches[i]!)).join() === files.join()) throw err;
      }
    }
  };
  async function* pieces(): AsyncGenerator<Uint8Array> {
    let next: Promise<string | null> | null = null;
    try {
      yield enc.encode(LOG_COLUMNS.join(",") + "\n");
      next = batches.length ? write(0) : null;
      for (let i = 0; next; i++) {
        const path = await next;
        next = i + 1 < batches.length ? write(i + 1) : null;
        if (path === null) continue;
        // A fresh piece per read, never shared: the server frees each one once it is sent.
        const file = await Deno.open(path, { read: true });
        try {
          for (;;) {
            const piece = new Uint8Array(PIECE_BYTES);
            const n = await file.read(piece);
            if (n === null) break;
            yield piece.subarray(0, n);
          }
        } finally {
          file.close();
          await Deno.remove(path).catch(() => {});
        }
      }
    } finally {
      // A cancelled download: let a write in flight finish before its folder goes.
      await next?.catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
  const it = pieces();
  // Every piece is its own buffer, so the server may free each one once it is sent.
  return markOwnedChunks(
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const r = await it.next();
          if (r.done) controller.close();
          else controller.enqueue(r.value);
        } catch (err) {
          controller.error(err);
        }
      },
      async cancel() {
        await it.return(undefined);
      },
    }, { highWaterMark: 1 }),
  );
}

/** The `*.parquet` files of the day folders oldest..newest, sorted. */
async function parquetFiles(eventsDir: string, b: { newest: string; oldest: string }): Promise<string[]> {
  const out: string[] = [];
  for (let d = parseDay(b.oldest)!; d <= parseDay(b.newest)!; d += DAY_MS) {
    const folder = `${eventsDir}/date=${formatDay(d)}`;
    try {
      for await (const e of Deno.readDir(folder)) {
        if (e.isFile && e.name.endsWith(".parquet")) out.push(`${folder}/${e.name}`);
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return out.sort();
}

/** A file streamed to the client and removed once sent (or abandoned). */
function streamAndRemove(path: string, file: Deno.FsFile): ReadableStream<Uint8Array> {
  const reader = file.readable.getReader();
  const remove = () => Deno.remove(path).catch(() => {});
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const r = await reader.read();
      if (r.done) {
        await remove(); // before the reader sees the end
        controller.close();
      } else controller.enqueue(r.value);
    },
    async cancel() {
      await reader.cancel().catch(() => {});
      await remove();
    },
  });
}

/** Every log row of the window as a Parquet file (zstd), streamed from a scratch file DuckDB wrote under the events folder. */
export async function logsParquet(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const { wp, params } = await logParams(deps, tenantId, q);
  const scratch = `${deps.engine.eventsDir}/${FLUSH_SCRATCH}`;
  await Deno.mkdir(scratch, { recursive: true });
  const path = `${scratch}/export-${crypto.randomUUID()}.parquet`;
  try {
    await deps.engine.copyToParquet(
      "ask_ai_logs_parquet",
      { ...params, from_date: wp.from_date, to_date: wp.to_date },
      path,
    );
    return streamAndRemove(path, await Deno.open(path, { read: true }));
  } catch (err) {
    await Deno.remove(path).catch(() => {});
    throw err;
  }
}

/**
 * A cell a spreadsheet could run as a formula: it starts with tab, CR or LF, or with = + - @ after
 * any run of blanks, byte-order marks or zero-width characters (spreadsheets skip those before
 * reading a formula). analytics/sql/ask_ai_logs_day.sql holds the same pattern in RE2 syntax.
 */
export const FORMULA_START = /^(?:[\t\r\n]|[\s\u200B-\u200D\u2060]*[=+\-@])/;

/** One CSV field: quoted, quotes doubled, a formula-looking start defused with an apostrophe. */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return String(v);
  let s = String(v);
  if (FORMULA_START.test(s)) s = "'" + s;
  return `"${s.replaceAll('"', '""')}"`;
}

/** Rows of plain objects as CSV text with a header line. */
export function toCsv(columns: readonly string[], rows: Record<string, unknown>[]): string {
  const out = [columns.join(",")];
  for (const r of rows) out.push(columns.map((c) => csvCell(r[c])).join(","));
  return out.join("\n") + "\n";
}

/** A column of an exported table: its name and the DuckDB type its Parquet column gets. */
export type ExportColumn = readonly [name: string, type: "VARCHAR" | "BIGINT" | "DOUBLE"];

/**
 * Rows of plain objects as a Parquet file (zstd), each column of the type given: DuckDB reads the
 * rows as NDJSON with those types, so text that looks like a date or a number stays text, an
 * empty string stays empty (not null), and a rate stays a DOUBLE whatever this answer holds.
 */
export async function toParquet(
  db: AnalyticsDb,
  columns: readonly ExportColumn[],
  rows: Record<string, unknown>[],
): Promise<Uint8Array<ArrayBuffer>> {
  const dir = await Deno.makeTempDir({ prefix: "an-export-" });
  try {
    const ndjson = `${dir}/rows.ndjson`;
    const out = `${dir}/rows.parquet`;
    // Raw values (no formula guard): Parquet readers do not evaluate cells.
    const lines = rows.map((r) => JSON.stringify(Object.fromEntries(columns.map(([c]) => [c, r[c] ?? null]))));
    await Deno.writeTextFile(ndjson, lines.join("\n") + "\n");
    const types = `{${columns.map(([c, t]) => `${sqlString(c)}: ${sqlString(t)}`).join(", ")}}`;
    const names = columns.map(([c]) => `"${c.replaceAll('"', '""')}"`).join(", ");
    await db.withConnection((c) =>
      c.run(
        `COPY (SELECT ${names} FROM read_json(${
          sqlString(ndjson)
        }, format = 'newline_delimited', columns = ${types})) TO ${sqlString(out)} (FORMAT parquet, COMPRESSION zstd)`,
      )
    );
    return await Deno.readFile(out);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
