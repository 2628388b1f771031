/**
 * Writes events to hive-partitioned Parquet: `<eventsDir>/date=YYYY-MM-DD/<fileId>.parquet`,
 * zstd-compressed, one file per day present in the batch. Each file is written under a
 * `.parquet.tmp` name (invisible to the `*.parquet` glob) and renamed into place, so readers never
 * see half a file, and the same `fileId` always gives the same names: writing a batch again
 * overwrites instead of duplicating.
 */
import type { AnalyticsDb } from "./duckdb.ts";
import { DUPLICATE_WINDOW_MINUTES, EVENT_COLUMNS } from "./schema.ts";
import { sqlString } from "./sql_util.ts";

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const FILE_ID_RE = /^[0-9a-f-]{36}$/;

/** The read_json column spec for NDJSON rows (`ts_ms` instead of `ts`). */
function jsonColumns(): string {
  const cols = EVENT_COLUMNS.map(([name, type]) => name === "ts" ? `ts_ms: 'BIGINT'` : `${name}: '${type}'`);
  return `{${cols.join(", ")}}`;
}

/** The SELECT list that turns NDJSON rows into stored columns, in file order. */
function selectList(): string {
  return EVENT_COLUMNS.map(([name]) => (name === "ts" ? "epoch_ms(ts_ms) AS ts" : name)).join(", ");
}

/** The `.parquet` files of one day folder (none when it does not exist). */
async function dayFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith(".parquet")) out.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

/**
 * How far back into the day before a day's events are checked for ids already stored
 * ({@link DUPLICATE_WINDOW_MINUTES}): the widget sends no timestamps (the server stamps arrival) and
 * retries a batch within a few minutes, so a retry just after midnight lands in the next day and must
 * still find its first copy.
 */
const RETRY_WINDOW_MINUTES = DUPLICATE_WINDOW_MINUTES;

/** The day before `date` (YYYY-MM-DD). */
const dayBefore = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
/** The day after `date` (YYYY-MM-DD). */
const dayAfter = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

/**
 * Writes the NDJSON file at `ndjsonPath` (one {@link EventRow} per line) as Parquet, an event left
 * out when its (tenant_id, event_id) came earlier that UTC day or in the last
 * {@link RETRY_WINDOW_MINUTES} of the day before: within the batch and, unless `dedupeExisting` is
 * false, in the day's other files and the day before's (and in the first minutes of the day after's,
 * a copy across midnight flushed first). Returns the days written and the row count. An event_id is its producer's:
 * another tenant sending the same id (a guessable order number) must not hide this tenant's event.
 */
export async function writeNdjsonAsParquet(
  db: AnalyticsDb,
  eventsDir: string,
  fileId: string,
  ndjsonPath: string,
  { dedupeExisting = true, beforeRename }: {
    dedupeExisting?: boolean;
    /**
     * Runs before each file is renamed into place; throwing leaves the file out (its `.tmp` removed).
     * The flusher checks there that it still holds its lease.
     */
    beforeRename?: () => Promise<void>;
  } = {},
): Promise<{ dates: string[]; rows: number }> {
  if (!FILE_ID_RE.test(fileId)) throw new Error(`bad file id: ${fileId}`);
  const table = `ev_batch_${fileId.replaceAll("-", "")}`;
  return await db.withConnection(async (conn) => {
    // Within the batch the rule is the one against earlier files below: an event is left out when the
    // same tenant's id came earlier that UTC day or in the last minutes of the day before, so an id
    // reused days apart is stored each time whether or not one flush carries both. An earlier copy
    // inside that window exists exactly when the latest earlier copy is inside it: one window pass
    // (`lag`), where a self-join on the id took k^2 steps for k copies (152 s for 40,000).
    await conn.run(
      `CREATE OR REPLACE TEMP TABLE ${table} AS
       WITH src AS (
         SELECT ${selectList()}
         FROM read_json(${sqlString(ndjsonPath)}, format = 'newline_delimited', columns = ${jsonColumns()})
       ), ordered AS (
         SELECT *, lag(ts) OVER (PARTITION BY tenant_id, event_id ORDER BY ts) AS prev_ts FROM src
       )
       SELECT * EXCLUDE (prev_ts) FROM ordered
       WHERE prev_ts IS NULL OR prev_ts < date_trunc('day', ts) - INTERVAL ${RETRY_WINDOW_MINUTES} MINUTE
       ORDER BY ts`,
    );
    try {
      // Each day's latest event: only a day with events in its last minutes can have a later copy in
      // the day after's files.
      const days = (await conn.runAndReadAll(
        `SELECT strftime(ts, '%Y-%m-%d') AS d,
                max(ts) >= date_trunc('day', max(ts)) + INTERVAL 1 DAY - INTERVAL ${RETRY_WINDOW_MINUTES} MINUTE AS near_end
         FROM ${table} GROUP BY d ORDER BY d`,
      )).getRowObjectsJS().map((r) => ({ date: String(r.d), nearEnd: r.near_end === true }));
      let rows = 0;
      const written: string[] = [];
      for (const { date, nearEnd } of days) {
        if (!DATE_RE.test(date)) throw new Error(`bad event date: ${date}`);
        const dir = `${eventsDir}/date=${date}`;
        await Deno.mkdir(dir, { recursive: true });
        const final = `${dir}/${fileId}.parquet`;
        const tmp = `${final}.tmp`;
        // Events already in the day's other files, or in the last minutes of the day before (a client
        // retry flushed earlier), are left out, so a tenant's event_id is stored once. So are those in
        // the first minutes of the day after: two copies of one event a few minutes apart across
        // midnight may be flushed later copy first (the widget's `query` of an answer, stamped on
        // arrival, and the service's own record of it, stamped when it was asked), when this copy is in
        // the day's last minutes: otherwise the day after's id is another event, whichever day is
        // flushed first. The file's own earlier version (a redone flush) is not a reason to leave
        // anything out.
        const near = !dedupeExisting ? [] : [
          dir,
          `${eventsDir}/date=${dayBefore(date)}`,
          ...(nearEnd ? [`${eventsDir}/date=${dayAfter(date)}`] : []),
        ];
        const others: string[] = [];
        for (const d of near) {
          others.push(...(await dayFiles(d)).filter((f) => f !== `${fileId}.parquet`).map((f) => `${d}/${f}`));
        }
        const start = `${sqlString(date)}::TIMESTAMP`;
        const window = `INTERVAL ${RETRY_WINDOW_MINUTES} MINUTE`;
        const notSeen = others.length
          ? `AND NOT EXISTS (SELECT 1 FROM read_parquet([${others.map(sqlString).join(", ")}]) AS seen
               WHERE seen.ts >= ${start} - ${window}
                 AND seen.ts < ${start} + INTERVAL 1 DAY + ${window}
                 AND (seen.ts < ${start} + INTERVAL 1 DAY OR b.ts >= ${start} + INTERVAL 1 DAY - ${window})
                 AND seen.event_id = b.event_id AND seen.tenant_id IS NOT DISTINCT FROM b.tenant_id)`
          : "";
        const select = `SELECT * FROM ${table} AS b WHERE ts >= ${sqlString(date)}::TIMESTAMP
                   AND ts < ${sqlString(date)}::TIMESTAMP + INTERVAL 1 DAY ${notSeen}`;
        // With other files to leave events out of, the day may have nothing left: count first and
        // write no empty file. Without, the day has rows (its date came from them): the COPY counts.
        let count: number | null = null;
        if (others.length) {
          count = Number(
            (await conn.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM (${select})`))
              .getRowObjectsJS()[0]!.n,
          );
          if (count === 0) continue;
        }
        const copied = await conn.run(`COPY (${select}) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd)`);
        try {
          await beforeRename?.();
        } catch (err) {
          await Deno.remove(tmp).catch(() => {});
          throw err;
        }
        await Deno.rename(tmp, final);
        rows += count ?? Number(copied.rowsChanged);
        written.push(date);
      }
      return { dates: written, rows };
    } finally {
      await conn.run(`DROP TABLE IF EXISTS ${table}`);
    }
  });
}

/** Writes rows to Parquet through a temp NDJSON file (used by fixtures and the demo seed). */
export async function writeRowsAsParquet(
  db: AnalyticsDb,
  eventsDir: string,
  fileId: string,
  rows: unknown[],
): Promise<{ dates: string[]; rows: number }> {
  const tmp = await Deno.makeTempFile({ prefix: "events-", suffix: ".ndjson" });
  try {
    const file = await Deno.open(tmp, { write: true, truncate: true });
    const enc = new TextEncoder();
    try {
      let buf = "";
      for (const r of rows) {
        buf += JSON.stringify(r) + "\n";
        if (buf.length > 1 << 20) {
          await writeAll(file, enc.encode(buf));
          buf = "";
        }
      }
      if (buf) await writeAll(file, enc.encode(buf));
    } finally {
      file.close();
    }
    // Fixture ids are fresh: skip the look-up of earlier files.
    return await writeNdjsonAsParquet(db, eventsDir, fileId, tmp, { dedupeExisting: false });
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/** Writes every byte of `data` to `file`. */
export async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.byteLength) at += await file.write(data.subarray(at));
}
