/**
 * Per-day compaction: merges a day's small Parquet files into one (deduplicated by tenant and event_id) and
 * removes the originals. Crash-safe through a KV manifest at `["ev_compaction", date]`:
 *   planned  -> the merged file is being written under a `.tmp` name (inputs untouched);
 *   written  -> the merged `.tmp` is complete; inputs are being deleted, then it is renamed.
 * {@link recoverCompactions} finishes or undoes whatever a crash interrupted, so a day never holds
 * both the inputs and the merged file under `*.parquet` (no double counting).
 */
import type { Clock } from "../core/clock.ts";
import type { AnalyticsDb } from "./duckdb.ts";
import { sqlString } from "./sql_util.ts";
import { uuidv7 } from "./uuid7.ts";

interface Manifest {
  date: string;
  output: string;
  inputs: string[];
  state: "planned" | "written";
}

const key = (date: string) => ["ev_compaction", date];

async function listParquet(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith(".parquet")) out.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

/** The day directories (`YYYY-MM-DD`) under the events folder. */
export async function listEventDates(eventsDir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(eventsDir)) {
      const m = /^date=(\d{4}-\d{2}-\d{2})$/.exec(e.name);
      if (e.isDirectory && m) out.push(m[1]!);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

const removeIfThere = async (path: string) => {
  await Deno.remove(path).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
};

async function finish(kv: Deno.Kv, dir: string, m: Manifest): Promise<void> {
  for (const f of m.inputs) await removeIfThere(`${dir}/${f}`);
  const tmp = `${dir}/${m.output}.tmp`;
  try {
    await Deno.rename(tmp, `${dir}/${m.output}`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  await kv.delete(key(m.date));
}

/** Completes or rolls back compactions a crash interrupted. */
export async function recoverCompactions(kv: Deno.Kv, eventsDir: string): Promise<void> {
  for await (const e of kv.list<Manifest>({ prefix: ["ev_compaction"] })) {
    const m = e.value;
    const dir = `${eventsDir}/date=${m.date}`;
    if (m.state === "written") await finish(kv, dir, m);
    else {
      await removeIfThere(`${dir}/${m.output}.tmp`);
      await kv.delete(e.key);
    }
  }
}

/**
 * Merges the day's files into one when there are at least `minFiles` of them.
 * @returns the number of files merged (0 when nothing was done).
 */
export async function compactDay(
  deps: { kv: Deno.Kv; db: AnalyticsDb; clock: Clock },
  eventsDir: string,
  date: string,
  minFiles = 2,
): Promise<number> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`bad date: ${date}`);
  const dir = `${eventsDir}/date=${date}`;
  const inputs = await listParquet(dir);
  if (inputs.length < Math.max(2, minFiles)) return 0;
  const m: Manifest = { date, output: `${uuidv7(deps.clock)}.parquet`, inputs, state: "planned" };
  const claim = await deps.kv.atomic().check({ key: key(date), versionstamp: null }).set(key(date), m).commit();
  if (!claim.ok) return 0; // another compaction of this day is running or needs recovery
  try {
    const list = `[${inputs.map((f) => sqlString(`${dir}/${f}`)).join(", ")}]`;
    await deps.db.withConnection((conn) =>
      conn.run(
        `COPY (
           SELECT * FROM (
             SELECT DISTINCT ON (tenant_id, event_id) * FROM read_parquet(${list}, hive_partitioning = false, union_by_name = true)
             ORDER BY tenant_id, event_id, ts
           ) ORDER BY ts
         ) TO ${sqlString(`${dir}/${m.output}.tmp`)} (FORMAT parquet, COMPRESSION zstd)`,
      )
    );
  } catch (err) {
    await removeIfThere(`${dir}/${m.output}.tmp`);
    await deps.kv.delete(key(date));
    throw err;
  }
  const written: Manifest = { ...m, state: "written" };
  await deps.kv.set(key(date), written);
  await finish(deps.kv, dir, written);
  return inputs.length;
}
