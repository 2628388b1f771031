import type { AnalyticsDb } from "../../analytics/duckdb.ts";
import { sqlString } from "../../analytics/sql_util.ts";

/** Event ids in the Parquet files under `eventsDir` with how often each occurs. */
export async function parquetIdCounts(db: AnalyticsDb, eventsDir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  try {
    await Deno.stat(eventsDir);
  } catch {
    return out;
  }
  let any = false;
  for await (const d of Deno.readDir(eventsDir)) {
    if (!d.isDirectory) continue;
    for await (const f of Deno.readDir(`${eventsDir}/${d.name}`)) if (f.name.endsWith(".parquet")) any = true;
  }
  if (!any) return out;
  await db.withConnection(async (c) => {
    const r = await c.runAndReadAll(
      `SELECT event_id, count(*)::INTEGER AS n FROM read_parquet(${
        sqlString(`${eventsDir}/*/*.parquet`)
      }, hive_partitioning = true) GROUP BY event_id`,
    );
    for (const row of r.getRowObjectsJS()) out.set(String(row.event_id), Number(row.n));
  });
  return out;
}

/** Every `.parquet` file path under `eventsDir`, sorted. */
export async function parquetFiles(eventsDir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const d of Deno.readDir(eventsDir)) {
      if (!d.isDirectory) continue;
      for await (const f of Deno.readDir(`${eventsDir}/${d.name}`)) {
        if (f.name.endsWith(".parquet")) out.push(`${d.name}/${f.name}`);
      }
    }
  } catch {
    // no folder yet
  }
  return out.sort();
}
