/**
 * Retention: articles published more than a data model's `maxAgeDays` ago leave search.
 * Searches filter them out at once ({@link liveSince}); this sweep deletes them from KV and the
 * sweeping process's index (one process per data model at a time, under a KV lease), and every
 * other process's index drops them through the article change log. The same sweep trims each
 * data model's change log.
 */
import type { Clock } from "../../clock.ts";
import { KvLease } from "../../kv_lease.ts";
import { describeError, type Logger } from "../../log.ts";
import type { DataModel } from "../../store/mod.ts";
import { systemTimers, type TimerId, type Timers } from "../../timers.ts";

/** The oldest publication time (unix seconds) a data model keeps, or undefined without retention. */
export function liveSince(dm: Pick<DataModel, "maxAgeDays">, clock: Clock): number | undefined {
  if (!dm.maxAgeDays) return undefined;
  return Math.floor(clock.now().getTime() / 1000) - dm.maxAgeDays * 86_400;
}

/**
 * Whether a data model serves an article published at `pubdateUnix` now: the rule every ranking
 * applies ({@link liveSince}), for reads by URL and counts that do not go through a ranking.
 */
export function isLive(dm: Pick<DataModel, "maxAgeDays">, pubdateUnix: number, clock: Clock): boolean {
  const since = liveSince(dm, clock);
  return since === undefined || pubdateUnix >= since;
}

/** What one sweep did to a data model. */
export interface SweepOutcome {
  dataModelId: string;
  /** Articles deleted from KV (this process held the lease). */
  deleted: number;
  /** Change-log entries trimmed (this process held the lease). */
  trimmed: number;
}

/** Runs retention on a schedule. */
export class RetentionSweeper {
  readonly owner: string;
  #timer: TimerId | undefined;
  #running = false;
  #sweeping: Promise<SweepOutcome[]> | null = null;
  readonly #timers: Timers;

  constructor(
    private readonly deps: {
      kv: Deno.Kv;
      clock: Clock;
      log: Logger;
      engine: {
        expire(dataModelId: string, cutoffUnix: number): Promise<number>;
        trimChanges(dataModelId: string): Promise<number>;
      };
      dataModels(): Promise<DataModel[]>;
      /** One data model as stored now (re-read under the lease: the round's list may be older). */
      dataModel(id: string): Promise<DataModel | null>;
      timers?: Timers;
      owner?: string;
    },
    private readonly settings: { intervalMs: number; leaseMs: number },
  ) {
    this.owner = deps.owner ?? crypto.randomUUID();
    this.#timers = deps.timers ?? systemTimers;
  }

  /** Sweeps every `intervalMs` until {@link stop}. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const schedule = () => {
      this.#timer = this.#timers.setTimeout(() => {
        this.sweep().catch((err) => this.deps.log.error("retention sweep failed", { error: describeError(err) }))
          .finally(() => {
            if (this.#running) schedule();
          });
      }, this.settings.intervalMs);
    };
    schedule();
  }

  /** Stops the schedule and waits for a sweep in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#sweeping?.catch(() => {});
  }

  /** One sweep over every data model: retention where it is set, change-log trimming everywhere. */
  sweep(): Promise<SweepOutcome[]> {
    if (this.#sweeping) return this.#sweeping;
    const run = async () => {
      const out: SweepOutcome[] = [];
      for (const listed of await this.deps.dataModels()) {
        let dm = listed;
        const lease = new KvLease({
          kv: this.deps.kv,
          clock: this.deps.clock,
          key: ["retention_lease", dm.id],
          owner: this.owner,
          ttlMs: this.settings.leaseMs,
        });
        const outcome: SweepOutcome = { dataModelId: dm.id, deleted: 0, trimmed: 0 };
        if (await lease.acquire()) {
          try {
            // Deletion is final: it follows the retention in force now, which another process may
            // have lengthened or cleared since the round listed the data models.
            const current = await this.deps.dataModel(dm.id);
            if (current) dm = current;
            const since = current ? liveSince(current, this.deps.clock) : undefined;
            if (since !== undefined) outcome.deleted = await this.deps.engine.expire(dm.id, since);
            outcome.trimmed = await this.deps.engine.trimChanges(dm.id);
          } finally {
            await lease.release();
          }
        }
        if (outcome.deleted || outcome.trimmed) {
          this.deps.log.info("retention sweep", {
            data_model_id: dm.id,
            max_age_days: dm.maxAgeDays,
            deleted: outcome.deleted,
            change_log_trimmed: outcome.trimmed,
          });
        }
        out.push(outcome);
      }
      return out;
    };
    this.#sweeping = run().finally(() => this.#sweeping = null);
    return this.#sweeping;
  }
}
