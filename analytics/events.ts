/**
 * The event-recording contract other rooms use (article clicks, Ask AI interactions, payproxy
 * calls), and its implementation: the analytics pipeline. Events are validated, enriched and
 * written to the KV write-ahead log before `record` resolves; a flusher moves them to Parquet.
 */
import type { Clock } from "../core/clock.ts";
import { KvLease } from "../core/kv_lease.ts";
import type { Logger } from "../core/log.ts";
import { describeError } from "../core/log.ts";
import type { Repos } from "../core/store/mod.ts";
import { compactDay, listEventDates, recoverCompactions } from "./compaction.ts";
import type { AnalyticsDb } from "./duckdb.ts";
import { type IngestContext, prepareEvents } from "./enrich.ts";
import { analyticsErrors } from "./errors.ts";
import { writeAll, writeNdjsonAsParquet } from "./parquet_writer.ts";
import { uuidv7 } from "./uuid7.ts";
import { EventWal, type WalChunk, wellFormedChunk } from "./wal.ts";

export type { EventInput, EventSink } from "../core/events.ts";
import type { EventInput, EventSink } from "../core/events.ts";

/** Tuning of the pipeline (from config). */
export interface PipelineOptions {
  /** Folder of the hive-partitioned Parquet files (`<DATA_DIR>/events`). */
  eventsDir: string;
  /** Flush at least this often while started. */
  flushIntervalMs: number;
  /** Flush as soon as this many events wait in the log. */
  flushMaxEvents: number;
  /** Compact a day once it has this many files. */
  compactMinFiles: number;
  /** How long the flusher lease lasts without renewal (a dead flusher's is taken over after this). */
  leaseMs: number;
  /**
   * Most bytes the log may hold: past it new batches are refused (503) until a flush makes room, so a
   * flusher that cannot write (a full disk, DuckDB failing, no lease holder) lets KV grow only so far.
   */
  walMaxBytes: number;
  /**
   * Most bytes of the log one tenant's events may take (default: a quarter of `walMaxBytes`) once the
   * log holds `walMaxBytes` less this: past both, that tenant's batches are refused (503) while the
   * others' are still taken (the log's last part is kept for them).
   */
  walTenantMaxBytes?: number;
}

/** Dependencies of the pipeline. */
export interface PipelineDeps {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  repos: Repos;
  duckdb: AnalyticsDb;
}

interface FlushPlan {
  fileId: string;
  keys: Deno.KvKey[];
  state: "planned" | "written";
  /** The chunks' bytes, taken off the log's size when they are deleted (absent in older plans). */
  bytes?: number;
}

const PLAN_PREFIX = ["ev_flush_plan"];
/** Scratch folder of the flusher inside the events folder (no `date=` name, no Parquet: queries never see it). */
export const FLUSH_SCRATCH = ".tmp";
const LEASE_KEY = ["ev_flush_lease"];
const LEASE_POLL_MS = 250;
// Chunks per Parquet write; the plan listing their keys must stay under 64 KiB.
const MAX_CHUNKS_PER_FLUSH = 600;
// Tenants of a batch whose part of the log is checked: their sizes and the log's fill one KV read (10 keys).
const CHECKED_TENANTS = 4;
// Tries of a batch whose session states another batch changed meanwhile, before it is written unchecked.
const MAX_SESSION_RETRIES = 3;

/**
 * The analytics event pipeline: `record`/`ingest` -> KV WAL -> `flush` -> Parquet.
 *
 * Crash safety of a flush: a plan naming the WAL keys and the file id is stored first; the files
 * are written (tmp + rename, names fixed by the file id); the plan is marked written; then WAL
 * keys and plan are deleted. Recovery redoes a `planned` plan (same names: overwrite, no
 * duplicate) and finishes a `written` one (deletes what is left), so a kill at any point neither
 * loses an acknowledged event nor writes it twice.
 */
export class EventPipeline implements EventSink {
  readonly wal: EventWal;
  #pending = 0;
  #flushing: Promise<FlushResult> | null = null;
  #compacting: Promise<number> | null = null;
  #again = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started = false;
  #listeners: Array<() => void> = [];
  readonly #lease: KvLease;
  #beforeStop: Array<() => Promise<void>> = [];

  constructor(private readonly deps: PipelineDeps, readonly options: PipelineOptions) {
    this.wal = new EventWal(deps.kv, deps.clock);
    this.#lease = new KvLease({
      kv: deps.kv,
      clock: deps.clock,
      key: LEASE_KEY,
      // The PID first, so an operator (and bench/cluster_faults.ts) can tell which process holds it.
      owner: `${Deno.pid}:${crypto.randomUUID()}`,
      ttlMs: options.leaseMs,
    });
  }

  /** {@link EventSink.record} for the other rooms: trusted, tenant derived from widget or AI agent. */
  async record(events: EventInput[]): Promise<void> {
    await this.ingest(events, { source: "internal" });
  }

  /**
   * Validates, enriches and durably logs a batch.
   * @throws AppError 422 naming the first bad event; 503 `server_busy` with `Retry-After` when the log
   *   is full ({@link PipelineOptions.walMaxBytes}). Nothing of the batch is stored then.
   * @returns the number of events stored.
   */
  async ingest(events: unknown[], ctx: IngestContext): Promise<number> {
    if (!events.length) return 0;
    let rows;
    // Session states are written only at the version read; a batch that lost the race to another batch of
    // the same sessions derives them again, and after a few losses writes them unchecked, flagged late.
    for (let attempt = 0;; attempt++) {
      const prepared = await prepareEvents(this.deps, events, ctx, attempt >= MAX_SESSION_RETRIES);
      rows = prepared.rows;
      await this.#checkRoom(prepared.lines, rows);
      if (await this.wal.append(uuidv7(this.deps.clock), prepared.lines, rows, prepared.sessionSets)) break;
    }
    this.#pending += rows.length;
    if (this.#started && this.#pending >= this.options.flushMaxEvents) {
      this.flush().catch((err) => this.deps.log.error("event flush failed", { error: describeError(err) }));
    }
    return rows.length;
  }

  /**
   * Refuses a batch the log has no room for, or whose tenant's part of the log has none, before
   * anything of it is stored. The sizes are read at each batch (one read), so processes sharing the
   * log overshoot them by at most the batches they are appending at that moment (each at most 500
   * events).
   */
  async #checkRoom(lines: Uint8Array[], rows: readonly { tenant_id: string | null }[]): Promise<void> {
    let bytes = 0;
    const byTenant = new Map<string, number>();
    for (const [i, line] of lines.entries()) {
      bytes += line.byteLength;
      const tenantId = rows[i]!.tenant_id;
      if (tenantId) byTenant.set(tenantId, (byTenant.get(tenantId) ?? 0) + line.byteLength);
    }
    // A batch larger than the whole log never fits, however far the flush gets.
    if (bytes > this.options.walMaxBytes) {
      throw analyticsErrors.event_batch_larger_than_log({ max: this.options.walMaxBytes });
    }
    // One read: the log's size and the parts of the batch's (at most) four largest tenants. A batch
    // of more (the service's own impressions of many searches) adds little of each of the others.
    const largest = [...byTenant].sort((x, y) => y[1] - x[1]).slice(0, CHECKED_TENANTS);
    const held = await this.wal.sizes(largest.map(([tenantId]) => tenantId));
    if (held.total + bytes > this.options.walMaxBytes) throw this.#logFull();
    // A tenant past its part is refused only within the log's last part, kept for the tenants under
    // theirs: alone on an install it may use the rest.
    if (held.total + bytes <= this.options.walMaxBytes - this.#tenantMaxBytes()) return;
    for (const [tenantId, n] of largest) {
      // A tenant holding nothing in the log takes one batch whatever its size (its part may be
      // smaller than one allowed batch); the log's own bound above still applies.
      const mine = held.byTenant.get(tenantId)!;
      if (mine > 0 && mine + n > this.#tenantMaxBytes()) throw this.#logFull(true);
    }
  }

  /**
   * Refuses anything while the log is full, or `tenantId`'s part of it (one read of their kept sizes).
   * @throws AppError 503 `server_busy` with `Retry-After` when the log is full: a route calls it before
   *   it reads a batch, so a sender's bodies are not read and decoded while none could be stored.
   */
  async refuseWhenFull(tenantId?: string): Promise<void> {
    const held = await this.wal.sizes(tenantId ? [tenantId] : []);
    if (held.total >= this.options.walMaxBytes) throw this.#logFull();
    if (
      tenantId && held.byTenant.get(tenantId)! >= this.#tenantMaxBytes() &&
      held.total >= this.options.walMaxBytes - this.#tenantMaxBytes()
    ) throw this.#logFull(true);
  }

  #tenantMaxBytes(): number {
    return this.options.walTenantMaxBytes ?? Math.floor(this.options.walMaxBytes / 4);
  }

  #logFull(tenantPart = false) {
    // Room comes back with the next flush that can write.
    const retryAfterS = Math.max(1, Math.ceil(this.options.flushIntervalMs / 1000));
    const headers = { "Retry-After": String(retryAfterS) };
    return tenantPart ? analyticsErrors.event_log_share_full({ headers }) : analyticsErrors.event_log_full({ headers });
  }

  /** Called after each flush that wrote files (the query engine refreshes its view). */
  onFlushed(fn: () => void): void {
    this.#listeners.push(fn);
  }

  /**
   * Moves everything in the log to Parquet. Concurrent calls share the running flush, and a call
   * made while one runs triggers another pass afterwards.
   */
  flush(): Promise<FlushResult> {
    if (this.#flushing) {
      this.#again = true;
      return this.#flushing;
    }
    const run = async (): Promise<FlushResult> => {
      const total: FlushResult = { rows: 0, files: 0 };
      try {
        do {
          this.#again = false;
          if (this.#compacting) await this.#compacting.catch(() => {});
          // Only the lease holder flushes, so processes sharing one KV never take the same entries.
          if (!(await this.#acquireLease())) {
            total.skipped = true;
            break;
          }
          // A holder that died mid-compaction left a day half-swapped: repair it before writing beside it.
          await recoverCompactions(this.deps.kv, this.options.eventsDir);
          const recovered = await this.#recoverPlans().catch((err) => {
            if (err instanceof FlushLeaseLost) return null;
            throw err;
          });
          if (!recovered) {
            total.skipped = true;
            break;
          }
          total.rows += recovered.rows;
          total.files += recovered.files;
          if (recovered.files) { for (const fn of this.#listeners) fn(); }
          for (let pass = 0;; pass++) {
            // Renewed before the chunks are listed (lost only after stalling a whole lease), and
            // their plan stored only at that renewal (#flushChunks); the first pass's is the take above.
            if (pass > 0 && !(await this.#acquireLease())) break;
            const chunks = await this.wal.take(MAX_CHUNKS_PER_FLUSH);
            if (!chunks.length) {
              await this.wal.settle();
              break;
            }
            this.#pending = 0;
            const r = await this.#flushChunks(chunks).catch((err) => {
              if (err instanceof FlushLeaseLost) return null;
              throw err;
            });
            if (!r) {
              total.skipped = true;
              break;
            }
            total.rows += r.rows;
            total.files += r.files;
            // Tell the query engine at once (a long flush under load may run many rounds).
            if (r.files) { for (const fn of this.#listeners) fn(); }
          }
        } while (this.#again);
      } finally {
        this.#flushing = null;
      }
      return total;
    };
    this.#flushing = run();
    return this.#flushing;
  }

  async #flushChunks(chunks: WalChunk[]): Promise<FlushResult> {
    const plan: FlushPlan = {
      fileId: uuidv7(this.deps.clock),
      keys: chunks.map((c) => c.key),
      state: "planned",
      bytes: chunkBytes(chunks),
    };
    // Stored only while the lease is as our renewal before the listing left it: a holder that stalled
    // past its lease in between could plan chunks the next holder has flushed since, and taking their
    // bytes off the log's size again would let the log grow past its bound.
    const planned = await this.#lease.checkHeld(this.deps.kv.atomic()).set([...PLAN_PREFIX, plan.fileId], plan)
      .commit();
    if (!planned.ok) throw new FlushLeaseLost();
    return await this.#execute(plan, planned.versionstamp, chunks);
  }

  /**
   * Carries out a plan stored at `versionstamp`. Each step past the write commits only at the plan's
   * version: a holder that stalled past its lease and a holder that recovered its plan may both reach
   * them, and the chunks' bytes must leave the log's size once (counted twice, the size drifted low and
   * the log could grow past its bound).
   * @throws FlushLeaseLost when another holder finished the plan, or moved it on, first
   */
  async #execute(plan: FlushPlan, versionstamp: string, chunks: WalChunk[]): Promise<FlushResult> {
    const planKey = [...PLAN_PREFIX, plan.fileId];
    let result: FlushResult = { rows: 0, files: 0 };
    if (plan.state === "planned" && chunks.length) {
      // The batch as NDJSON under the data dir (never the system temp dir): a process that dies
      // mid-flush leaves it there, and the next flusher's start removes it.
      const scratch = `${this.options.eventsDir}/${FLUSH_SCRATCH}`;
      await Deno.mkdir(scratch, { recursive: true });
      const tmp = `${scratch}/wal-${plan.fileId}.ndjson`;
      try {
        const f = await Deno.open(tmp, { write: true, create: true, truncate: true });
        try {
          for (const c of chunks) await writeAll(f, wellFormedChunk(c.bytes));
        } finally {
          f.close();
        }
        // A holder that stalled past its lease (a long write, a paused process) must not rename its
        // file in: the next holder redid this plan and may have compacted the day since, so the file
        // would count its events twice. Renewed just before each rename, the lease cannot lapse
        // between the check and the rename.
        const w = await writeNdjsonAsParquet(this.deps.duckdb, this.options.eventsDir, plan.fileId, tmp, {
          beforeRename: async () => {
            if (!(await this.#acquireLease())) throw new FlushLeaseLost();
          },
        });
        result = { rows: w.rows, files: w.dates.length };
      } finally {
        await Deno.remove(tmp).catch(() => {});
      }
      plan = { ...plan, state: "written" };
      const written = await this.deps.kv.atomic().check({ key: planKey, versionstamp }).set(planKey, plan).commit();
      if (!written.ok) throw new FlushLeaseLost();
      versionstamp = written.versionstamp;
    }
    // A plan from before it kept its bytes: a planned one has its chunks loaded; a written one's are
    // left counted until the log is next found empty (EventWal.settle).
    const bytes = plan.bytes ?? chunkBytes(chunks);
    const done = await this.wal.delete(
      plan.keys,
      bytes,
      (op) => op.delete(planKey),
      (op) => op.check({ key: planKey, versionstamp }),
    );
    if (!done) throw new FlushLeaseLost();
    return result;
  }

  /**
   * Removes what earlier flushers left in the scratch folder. Only the lease holder writes `wal-`
   * files there, and we hold the lease: none is in use (a plan it belonged to is replayed from KV).
   * Log exports (any process) write `export-` folders and files; one older than a day was left by
   * a process that died mid-export.
   */
  async #clearScratch(): Promise<void> {
    const scratch = `${this.options.eventsDir}/${FLUSH_SCRATCH}`;
    const dayAgo = this.deps.clock.now().getTime() - 86_400_000;
    try {
      for await (const e of Deno.readDir(scratch)) {
        const path = `${scratch}/${e.name}`;
        if (e.isFile && e.name.startsWith("wal-")) await Deno.remove(path).catch(() => {});
        else if (e.name.startsWith("export-")) {
          const mtime = (await Deno.stat(path).catch(() => null))?.mtime?.getTime();
          if (mtime !== undefined && mtime < dayAgo) await Deno.remove(path, { recursive: true }).catch(() => {});
        }
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }

  /** Finishes flushes a crash interrupted (see the class comment). */
  async #recoverPlans(): Promise<FlushResult> {
    const total: FlushResult = { rows: 0, files: 0 };
    for await (const e of this.deps.kv.list<FlushPlan>({ prefix: PLAN_PREFIX })) {
      const plan = e.value;
      const chunks: WalChunk[] = [];
      let versionstamp = e.versionstamp;
      if (plan.state === "planned") {
        // Moved on at the version read before its chunks are loaded: a holder that stalled past its
        // lease after renaming its file in then fails its `written` commit before deleting a chunk
        // (had it deleted some between our reads, our smaller file would replace its own).
        const claimed = await this.deps.kv.atomic().check(e).set(e.key, plan).commit();
        if (!claimed.ok) throw new FlushLeaseLost();
        versionstamp = claimed.versionstamp;
        for (let i = 0; i < plan.keys.length; i += 10) {
          const got = await this.deps.kv.getMany<Uint8Array[]>(plan.keys.slice(i, i + 10));
          for (const g of got) if (g.value) chunks.push({ key: g.key, bytes: g.value });
        }
      }
      this.deps.log.warn("recovering an interrupted event flush", { file_id: plan.fileId, state: plan.state });
      const r = await this.#execute(plan, versionstamp, chunks);
      total.rows += r.rows;
      total.files += r.files;
    }
    return total;
  }

  /**
   * Takes or renews the flusher lease `["ev_flush_lease"]` (core/kv_lease.ts). A lease whose
   * holder died lapses after `leaseMs`, then another process takes over.
   */
  #acquireLease(): Promise<boolean> {
    return this.#lease.acquire();
  }

  #releaseLease(): Promise<void> {
    return this.#lease.release();
  }

  /** Merges small files of each day that has at least `compactMinFiles` (lease holder only). */
  async compact(): Promise<number> {
    // Never beside a flush: a flush reads the day's files (event_id check) that compaction deletes.
    while (this.#flushing || this.#compacting) await (this.#flushing ?? this.#compacting)?.catch(() => {});
    const run = async () => {
      // Taken inside the run: a flush that starts meanwhile waits for it (it repairs compactions).
      if (!(await this.#acquireLease())) return 0;
      let merged = 0;
      // Each day under the lease, renewed and checked (a merge may outlast it).
      const kvDeps = { kv: this.deps.kv, db: this.deps.duckdb, clock: this.deps.clock, lease: this.#lease };
      for (const date of await listEventDates(this.options.eventsDir)) {
        merged += await compactDay(kvDeps, this.options.eventsDir, date, this.options.compactMinFiles);
      }
      if (merged) { for (const fn of this.#listeners) fn(); }
      return merged;
    };
    this.#compacting = run();
    try {
      return await this.#compacting;
    } finally {
      this.#compacting = null;
    }
  }

  /** Replays the log (recovering interrupted flushes and compactions: every flush does), then flushes on a timer. */
  async start(): Promise<FlushResult> {
    // Replay needs the lease. A holder that died loses it within one lease period, so wait that
    // long when the log holds events; a live holder keeps it and replays for us.
    let replayed: FlushResult = { rows: 0, files: 0 };
    const attempts = Math.ceil((this.options.leaseMs + 1000) / LEASE_POLL_MS);
    for (let i = 0; i <= attempts; i++) {
      if (await this.#acquireLease()) {
        await this.#clearScratch();
        replayed = await this.flush();
        break;
      }
      if (await this.wal.isEmpty() || i === attempts) break;
      await new Promise((r) => setTimeout(r, LEASE_POLL_MS));
    }
    if (replayed.rows) this.deps.log.info("event log replayed", { ...replayed });
    this.#started = true;
    const tick = async () => {
      try {
        // Buffering producers hand in what they hold, so a quiet server still flushes it on time.
        for (const fn of this.#beforeStop) await fn().catch(() => {});
        await this.flush();
        await this.compact();
      } catch (err) {
        this.deps.log.error("event flush failed", { error: describeError(err) });
      }
      if (this.#started) this.#timer = setTimeout(tick, this.options.flushIntervalMs);
    };
    this.#timer = setTimeout(tick, this.options.flushIntervalMs);
    return replayed;
  }

  /**
   * Runs before each timed flush and the final flush of {@link stop} (producers that buffer hand in
   * what they hold).
   */
  beforeStop(fn: () => Promise<void>): void {
    this.#beforeStop.push(fn);
  }

  /** Stops the timer and flushes what is left (graceful shutdown). */
  async stop(): Promise<FlushResult> {
    for (const fn of this.#beforeStop) await fn().catch(() => {});
    this.#started = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const r = await this.flush();
    await this.#releaseLease();
    return r;
  }
}

const chunkBytes = (chunks: WalChunk[]) => chunks.reduce((n, c) => n + c.bytes.byteLength, 0);

/** The flusher lost its lease mid-flush: the next holder redoes the flush from its plan. */
class FlushLeaseLost extends Error {
  constructor() {
    super("the event flusher lease was lost mid-flush");
    this.name = "FlushLeaseLost";
  }
}

/** What a flush wrote. */
export interface FlushResult {
  rows: number;
  files: number;
  /** Another process holds the flusher lease; nothing was done. */
  skipped?: boolean;
}
