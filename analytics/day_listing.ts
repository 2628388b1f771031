/**
 * The listing of one UTC day folder of events: every `*.parquet` file with its size and
 * modification time. Every write to a folder changes it (a flush adds a file with a new id,
 * compaction replaces files by one with a new id, a redone flush rewrites its file), so figures
 * computed from a folder stay valid exactly as long as its listing is unchanged.
 */
import { formatDay, parseDay } from "./filters.ts";

/** One event file of a day folder. */
export interface ListedFile {
  /** Path of the file. */
  path: string;
  /** `date/name size mtime`, the line the listing is hashed from. */
  line: string;
}

/** The `*.parquet` files of `<eventsDir>/date=<day>`, sorted by name (none when the folder is missing). */
export async function dayListing(eventsDir: string, day: string): Promise<ListedFile[]> {
  const dir = `${eventsDir}/date=${day}`;
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith(".parquet")) names.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return await Promise.all(
    names.sort().map(async (name) => {
      const st = await Deno.stat(`${dir}/${name}`).catch(() => null);
      return { path: `${dir}/${name}`, line: `${day}/${name} ${st?.size ?? -1} ${st?.mtime?.getTime() ?? -1}` };
    }),
  );
}

/** The listings of the day folders from..to (UTC days, inclusive), read side by side. */
export function daysListing(eventsDir: string, from: string, to: string): Promise<[string, ListedFile[]][]> {
  const days: string[] = [];
  for (let d = parseDay(from)!; d <= parseDay(to)!; d += 86_400_000) days.push(formatDay(d));
  return Promise.all(days.map(async (day) => [day, await dayListing(eventsDir, day)] as [string, ListedFile[]]));
}
