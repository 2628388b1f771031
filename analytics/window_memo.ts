/**
 * Block counts of a window kept across requests (the earlier window of `compare`), keyed by the
 * Parquet files they were computed from. A window's figures are a function of the files in its UTC
 * day folders (the rollups read nothing else), and every write to a folder changes its listing
 * (analytics/day_listing.ts). So an entry whose key holds the folders' listing (name,
 * size, modification time) answers exactly what the SQL would answer now, and a late event for an
 * old day simply leads to a new key. That check runs on every read, which is why the memo is read
 * even when a request asks the answer cache to step aside (`Cache-Control: no-cache`).
 */
import { sha256Hex } from "../core/crypto.ts";
import type { AnalyticsCache } from "./cache.ts";
import { loadSql, type RollupName } from "./engine.ts";
import { daysListing } from "./day_listing.ts";
import { type Counts, windowParams, type ZonedWindow } from "./metrics.ts";

/** How long a memo entry lives: a week (an entry whose files changed is never read again). */
export const WINDOW_MEMO_TTL_S = 7 * 86_400;

/** KV-backed memo of window counts (stored through the analytics cache's chunked JSON). */
export class WindowMemo {
  /**
   * @param store where entries live (an {@link AnalyticsCache} with the memo's own TTL; a TTL of 0
   *   turns the memo off)
   * @param eventsDir the hive-partitioned events folder the rollups read
   */
  constructor(private readonly store: AnalyticsCache, readonly eventsDir: string) {}

  /** Whether the memo stores anything. */
  get enabled(): boolean {
    return this.store.enabled;
  }

  /**
   * The key of a window's counts: the tenant, what was asked (filters, grouping, zone, dates), the
   * text of the rollups that may compute them and the listing of every day folder the window reads.
   */
  async key(tenantId: string, rollups: readonly RollupName[], asked: Record<string, unknown>, w: ZonedWindow) {
    const { from_date, to_date } = windowParams(w);
    const parts: Record<string, string> = {
      asked: JSON.stringify(asked),
      window: `${w.start}/${w.end}/${w.tz}`,
      sql: await sha256Hex((await Promise.all(rollups.map(loadSql))).join("\n")),
      files: await this.#listing(from_date, to_date),
    };
    return await this.store.key(tenantId, "window-counts", parts);
  }

  /** The counts stored under `key`, or null. */
  async get(key: Deno.KvKey): Promise<Map<string, Counts> | null> {
    const text = await this.store.get(key);
    return text === null ? null : new Map(JSON.parse(text) as [string, Counts][]);
  }

  /** Stores counts under `key`. */
  async set(key: Deno.KvKey, counts: Map<string, Counts>): Promise<void> {
    await this.store.set(key, JSON.stringify([...counts]));
  }

  /** Hash of the `*.parquet` entries (name, size, mtime) of the day folders from..to. */
  async #listing(from: string, to: string): Promise<string> {
    const listings = await daysListing(this.eventsDir, from, to);
    return await sha256Hex(listings.flatMap(([, files]) => files.map((f) => f.line)).join("\n"));
  }
}
