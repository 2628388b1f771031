import type { AnalyticsDb } from "./analytics/duckdb.ts";
import type { EventPipeline } from "./analytics/events.ts";
import type { VisitCube } from "./analytics/visit_cube.ts";
import type { Mailer } from "./core/identity/mod.ts";
import type { Config } from "./core/config.ts";
import type { SignedLinks } from "./core/links/mod.ts";
import { describeError, type Logger } from "./core/log.ts";
import type { RetentionSweeper, Search, UrlAnalyzer } from "./core/search/mod.ts";
import type { SourcePoller } from "./core/sources/mod.ts";

/** What `deps.start()` brings up beyond what every use needs (the link keys). */
export interface StartOptions {
  /** Build every data model's index from KV and follow the article change log (serving processes). */
  indexes?: boolean;
  /** Runs once the indexes are up and before the background work starts (the demo seed). */
  beforeBackground?: () => Promise<void>;
  /**
   * The poller, retention, the settlement sweep, the event flusher (after replaying the WAL) and
   * visit figures, as the config enables them.
   */
  background?: boolean;
}

/** The parts whose lives the lifecycle runs, in the order they start. */
export interface LifecycleParts {
  config: Config;
  log: Logger;
  kv: Deno.Kv;
  duckdb: AnalyticsDb;
  links: SignedLinks;
  search: Search;
  mailer: Mailer;
  urlAnalyzer: UrlAnalyzer;
  poller: SourcePoller;
  retention: RetentionSweeper;
  events: EventPipeline;
  analyticsVisits: VisitCube;
  /**
   * Its sweep gives back money held for calls and payments nobody came back for, and resolves
   * settlements left `processing` (core/commerce/settle_sweep.ts).
   */
  commerce: { settleSweep: { start(): void; stop(): Promise<void> } };
}

/** How often closed day folders are checked for visit figures to build (a pass over built days is cheap). */
export const VISIT_FIGURES_INTERVAL_MS = 10 * 60_000;

/**
 * One lifecycle for every process (the server, the admin CLI, tests, benches): `start()` brings the
 * services up in dependency order, `stop()` ends the background work (with the final event flush)
 * and `dispose()` also releases workers and closes DuckDB and KV, each once.
 */
export class Lifecycle {
  readonly #parts: LifecycleParts;
  readonly #running = {
    links: false,
    indexes: false,
    poller: false,
    retention: false,
    settleSweep: false,
    events: false,
    visits: false,
  };
  #stopping: Promise<void> | null = null;
  /** Settles when every start called so far has (resolved or failed). */
  #starts: Promise<unknown> = Promise.resolve();
  #disposing: Promise<void> | null = null;

  constructor(parts: LifecycleParts) {
    this.#parts = parts;
  }

  /**
   * Starts what `options` asks for and is not running yet: a later call may bring up more. Once a
   * stop is asked for it starts nothing more, and the stop waits for it to settle.
   */
  start(options: StartOptions = {}): Promise<void> {
    const run = this.#start(options);
    this.#starts = Promise.all([this.#starts, run.catch(() => {})]);
    return run;
  }

  async #start(options: StartOptions): Promise<void> {
    const p = this.#parts;
    // Checked after each step that awaits: a signal may arrive during any of them.
    const stopAsked = () => this.#stopping !== null;
    if (stopAsked()) return;
    if (!this.#running.links) {
      await p.links.init();
      this.#running.links = true;
    }
    if (options.indexes && !this.#running.indexes && !stopAsked()) {
      // Word vectors and every data model's index are loaded before the first request.
      await p.search.start();
      // Articles imported by `admin articles import` or another process reach this one's indexes.
      p.search.watch();
      this.#running.indexes = true;
    }
    if (stopAsked()) return;
    await options.beforeBackground?.();
    if (!options.background || this.#running.retention || stopAsked()) return;
    // Feeds and sitemaps: every process polls, KV leases give each source to one process at a time.
    if (p.config.sources.poller) {
      p.poller.start();
      this.#running.poller = true;
    }
    p.retention.start();
    this.#running.retention = true;
    // Money left held (reservations, abandoned calls, settlements): every process runs one, a KV
    // lease lets one sweep at a time.
    p.commerce.settleSweep.start();
    this.#running.settleSweep = true;
    // Replays the event write-ahead log into Parquet before serving, then flushes on a timer.
    if (p.config.eventsFlusher) {
      // Marked before the replay: a stop waiting on this start (or after a failed replay) then
      // releases the flusher lease the replay took, rather than leaving it to lapse.
      this.#running.events = true;
      await p.events.start();
      if (stopAsked()) return;
      // Closed days' visit figures, built by the process that writes the event files.
      p.analyticsVisits.start(VISIT_FIGURES_INTERVAL_MS);
      this.#running.visits = true;
    }
  }

  /**
   * Ends the background work in the reverse order of its start; every acknowledged event reaches
   * Parquet. A start under way (a signal during start-up) is let finish its step first, so what it
   * took (the event flusher's lease, timers) is known here and released, not left to lapse.
   */
  stop(): Promise<void> {
    return this.#stopping ??= (async () => {
      await this.#starts;
      const p = this.#parts;
      if (this.#running.poller) await p.poller.stop();
      if (this.#running.settleSweep) await p.commerce.settleSweep.stop();
      if (this.#running.retention) await p.retention.stop();
      if (this.#running.visits) await p.analyticsVisits.stop();
      if (this.#running.events) {
        // Every acknowledged event is already in the KV log; this moves it to Parquet before exit.
        await p.events.stop().catch((err) => p.log.error("final event flush failed", { error: describeError(err) }));
      }
      if (this.#running.indexes) await p.search.close();
    })();
  }

  /** {@link stop}, then releases the workers and closes DuckDB (after the queries under way) and KV. */
  dispose(): Promise<void> {
    return this.#disposing ??= (async () => {
      const p = this.#parts;
      await this.stop();
      await p.search.close();
      p.mailer.close?.();
      p.urlAnalyzer.close?.();
      p.poller.close();
      await p.links.close();
      await p.duckdb.close();
      try {
        p.kv.close();
      } catch (err) {
        // A test that takes the store away on purpose (to see a failure path) closed it already.
        if (!(err instanceof Deno.errors.BadResource)) throw err;
      }
    })();
  }
}
