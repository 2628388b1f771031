/**
 * Derived visit figures of closed UTC day folders (analytics/sql/visit_cube_build.sql), so the Ask
 * AI time rollup reads about 20 times fewer rows for the days that no longer change.
 *
 * Each figure file is named by the hash of its folder's listing (analytics/day_listing.ts) and of
 * the SQL that built it: a query uses a day's file only while the folder still holds exactly the
 * files it was built from, and reads the events themselves for every other day (today, a day with
 * a late event, a day not built yet). The figures are therefore always what ask_ai_by_time gives.
 * Files are built in the background for days closed for {@link CLOSED_AFTER_MS}; a replaced file is
 * removed once it is {@link STALE_GRACE_MS} old, so a query that chose it can still read it.
 */
import type { Clock } from "../core/clock.ts";
import type { KvLease } from "../core/kv_lease.ts";
import { sha256Hex } from "../core/crypto.ts";
import { describeError, type Logger } from "../core/log.ts";
import { listEventDates } from "./compaction.ts";
import { dayListing, daysListing, type ListedFile } from "./day_listing.ts";
import { type AnalyticsEngine, loadSql } from "./engine.ts";
import { parseDay } from "./filters.ts";

const DAY_MS = 86_400_000;
const STEP_MS = 15 * 60_000;
/** A day folder is built once its day ended this long ago (late events mostly arrive sooner). */
export const CLOSED_AFTER_MS = 2 * 3600_000;
/** How long a replaced figure file stays readable for queries that chose it. */
export const STALE_GRACE_MS = 15 * 60_000;
const FILE = /^visits-([0-9a-f]{32})\.parquet$/;

/** Which days of a window read derived figures and which read their events. */
export interface VisitPlan {
  /** Figure files of the days that have a current one. */
  files: string[];
  /** Days whose events are read (no current figure file). */
  rawDays: string[];
}

/** What {@link VisitCube} needs. */
export interface VisitCubeDeps {
  engine: AnalyticsEngine;
  clock: Clock;
  log: Logger;
  /** Where figure files live (`<DATA_DIR>/derived/visits`), outside the events folder. */
  dir: string;
  /**
   * Taken for each pass when several processes share the events folder, so one builds a due day
   * and the others find it built (docs/operations.md); absent: this process alone.
   */
  lease?: KvLease;
}

/** Derived visit figures per closed day folder: planning for queries and building in the background. */
export class VisitCube {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<number> | null = null;
  #started = false;
  #stopping = false;
  #sqlHash: Promise<string> | null = null;

  constructor(private readonly deps: VisitCubeDeps) {}

  /**
   * Splits the UTC days from..to into days answered from a current figure file and days whose
   * events are read. Days without event files are in neither.
   */
  async plan(from: string, to: string): Promise<VisitPlan> {
    const days = await daysListing(this.deps.engine.eventsDir, from, to);
    const found = await Promise.all(days.map(async ([day, listing]) => {
      if (!listing.length) return null;
      const path = this.#path(day, await this.#hash(listing));
      return { day, path, built: await exists(path) };
    }));
    const plan: VisitPlan = { files: [], rawDays: [] };
    for (const f of found) {
      if (f?.built) plan.files.push(f.path);
      else if (f) plan.rawDays.push(f.day);
    }
    return plan;
  }

  /**
   * Whether a window's edges allow figure files: steps are 15-minute UTC instants, so a window
   * whose edges are too (every local midnight of a zone whose offset is a multiple of 15 minutes)
   * holds a step's events wholly or not at all.
   */
  static fits(startMs: number, endMs: number): boolean {
    return startMs % STEP_MS === 0 && endMs % STEP_MS === 0;
  }

  /** Builds the figure file of one day folder unless a current one exists; returns whether it wrote one. */
  async build(day: string): Promise<boolean> {
    const version = await this.#version(day);
    if (!version) return false;
    const path = this.#path(day, version.hash);
    if (await exists(path)) return false;
    const dir = `${this.deps.dir}/date=${day}`;
    await Deno.mkdir(`${this.deps.dir}/.tmp`, { recursive: true });
    await Deno.mkdir(dir, { recursive: true });
    const tmp = `${this.deps.dir}/.tmp/${crypto.randomUUID()}.parquet`;
    try {
      // Visits are derived from the folder's events alone (they end at UTC midnight).
      await this.deps.engine.copyToParquet("visit_cube_build", { files: version.files }, tmp);
      await Deno.rename(tmp, path);
    } finally {
      await Deno.remove(tmp).catch(() => {});
    }
    await this.#removeStale(dir, path);
    return true;
  }

  /** Builds every closed day that lacks a current figure file; returns how many it built. */
  buildClosedDays(): Promise<number> {
    this.#running ??= (async () => {
      let built = 0;
      if (this.deps.lease && !(await this.deps.lease.acquire())) return built;
      try {
        const closedBefore = this.deps.clock.now().getTime() - CLOSED_AFTER_MS;
        const days = await listEventDates(this.deps.engine.eventsDir);
        // Figures of days whose events are gone (retention) go too.
        const kept = new Set(days);
        for (const day of await listEventDates(this.deps.dir)) {
          if (!kept.has(day)) await Deno.remove(`${this.deps.dir}/date=${day}`, { recursive: true }).catch(() => {});
        }
        for (const day of days) {
          if (parseDay(day)! + DAY_MS > closedBefore) continue;
          try {
            if (await this.build(day)) built++;
          } catch (err) {
            // A folder compacted under the build: its next listing gets built on the next pass.
            this.deps.log.warn("visit figures not built", { day, error: describeError(err) });
          }
          if (this.#stopping) break;
        }
      } finally {
        await this.deps.lease?.release();
      }
      return built;
    })().finally(() => (this.#running = null));
    return this.#running;
  }

  /** Builds closed days now and then every `intervalMs`, until {@link stop}. */
  start(intervalMs: number): void {
    if (this.#started) return;
    this.#started = true;
    this.#stopping = false;
    const tick = async () => {
      const built = await this.buildClosedDays().catch((err) => {
        this.deps.log.error("visit figures failed", { error: describeError(err) });
        return 0;
      });
      if (built) this.deps.log.info("visit figures built", { days: built });
      if (this.#started) this.#timer = setTimeout(tick, intervalMs);
    };
    this.#timer = setTimeout(tick, 0);
  }

  /** Stops the timer and waits for a running pass. */
  async stop(): Promise<void> {
    this.#started = false;
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  async #version(day: string): Promise<{ hash: string; files: string[] } | null> {
    const listing = await dayListing(this.deps.engine.eventsDir, day);
    if (!listing.length) return null;
    return { hash: await this.#hash(listing), files: listing.map((f) => f.path) };
  }

  /** The name of a folder's figures: its listing and the SQL that builds them. */
  async #hash(listing: ListedFile[]): Promise<string> {
    this.#sqlHash ??= loadSql("visit_cube_build").then(sha256Hex);
    return (await sha256Hex(`${await this.#sqlHash}\n${listing.map((f) => f.line).join("\n")}`)).slice(0, 32);
  }

  #path(day: string, hash: string): string {
    return `${this.deps.dir}/date=${day}/visits-${hash}.parquet`;
  }

  /** Removes the folder's other figure files once they are {@link STALE_GRACE_MS} older than `current`. */
  async #removeStale(dir: string, current: string): Promise<void> {
    // File times against file times: the grace is real time, whatever clock the service runs on.
    const now = (await Deno.stat(current)).mtime?.getTime() ?? 0;
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (!e.isFile || !FILE.test(e.name) || path === current) continue;
      const st = await Deno.stat(path).catch(() => null);
      if (st?.mtime && now - st.mtime.getTime() >= STALE_GRACE_MS) await Deno.remove(path).catch(() => {});
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
