/**
 * Retention: articles published more than a data model's `maxAgeDays` ago leave search.
 * Searches filter them out at once (engine.ts); this sweep removes them from every process's
 * index (each process on its own schedule) and from KV (one process per data model at a time,
 * under a KV lease).
 */
import type { Clock } from "../clock.ts";
import { KvLease } from "../kv_lease.ts";
import { describeError, type Logger } from "../log.ts";
import type { DataModel } from "../store/models.ts";
import { type ArticleService, liveSince } from "./engine.ts";
import { systemTimers, type TimerId, type Timers } from "../timers.ts";

/** What one sweep did to a data model. */
export interface SweepOutcome {
  dataModelId: string;
  /** Deleted from KV (this process held the lease). */
  deleted: number;
  /** Taken out of this process's index only. */
  pruned: number;
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
      engine: Pick<ArticleService, "expire" | "pruneIndex">;
      dataModels(): Promise<DataModel[]>;
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

  /** One sweep over every data model that has a retention. */
  sweep(): Promise<SweepOutcome[]> {
    if (this.#sweeping) return this.#sweeping;
    const run = async () => {
      const out: SweepOutcome[] = [];
      for (const dm of await this.deps.dataModels()) {
        const since = liveSince(dm, this.deps.clock);
        if (since === undefined) continue;
        const lease = new KvLease({
          kv: this.deps.kv,
          clock: this.deps.clock,
          key: ["retention_lease", dm.id],
          owner: this.owner,
          ttlMs: this.settings.leaseMs,
        });
        const outcome: SweepOutcome = { dataModelId: dm.id, deleted: 0, pruned: 0 };
        if (await lease.acquire()) {
          try {
            outcome.deleted = await this.deps.engine.expire(dm.id, since);
          } finally {
            await lease.release();
          }
        } else {
          outcome.pruned = (await this.deps.engine.pruneIndex(dm.id, since)).length;
        }
        if (outcome.deleted || outcome.pruned) {
          this.deps.log.info("retention sweep", {
            data_model_id: dm.id,
            max_age_days: dm.maxAgeDays,
            deleted: outcome.deleted,
            pruned: outcome.pruned,
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
