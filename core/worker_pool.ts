/**
 * A small pool of module workers for CPU-bound work on untrusted input (page analysis, feed and
 * sitemap parsing). Its cost depends on markup an outsider controls, so the pool bounds it four
 * ways:
 *
 * - a deadline per job that covers the wait in the queue as well as the run: a job still waiting
 *   at its deadline is dropped, a job still running is stopped by terminating its worker (the
 *   only way to stop synchronous work), and a fresh worker takes the slot;
 * - a bounded queue, in total and per caller, that refuses new jobs when full
 *   ({@link PoolBusyError});
 * - turns between callers (the caller served longest ago goes next), so one caller's many slow
 *   jobs do not hold up another caller's one;
 * - at most `perCallerRunning` running jobs per caller (default: all workers but one), so a
 *   worker stays free for the next caller when one caller keeps the pool busy.
 *
 * Protocol with a worker module (see {@link serveJobs}): the worker posts `{ ready: true }` once
 * its modules are loaded, then answers each `{ id, input }` with `{ id, output }` or
 * `{ id, error, kind? }`.
 */

/** The queue (in total or for this caller) is full: try again later. */
export class PoolBusyError extends Error {
  /** Seconds after which a retry may find room. */
  readonly retryAfterS: number;
  constructor(name: string, retryAfterS: number) {
    super(`${name} is busy`);
    this.name = "PoolBusyError";
    this.retryAfterS = retryAfterS;
  }
}

/** A job passed its deadline, waiting or running, and was dropped or stopped. */
export class PoolTimeoutError extends Error {
  /** Whether the job had started (false: it never left the queue). */
  readonly started: boolean;
  constructor(name: string, deadlineMs: number, started: boolean) {
    super(`${name} took longer than ${deadlineMs} ms`);
    this.name = "PoolTimeoutError";
    this.started = started;
  }
}

/** The worker answered with an error: `kind` is the worker's own label for it (e.g. `format`). */
export class PoolJobError extends Error {
  readonly kind?: string;
  constructor(message: string, kind?: string) {
    super(message);
    this.name = "PoolJobError";
    this.kind = kind;
  }
}

/** Settings of a {@link WorkerPool}. */
export interface WorkerPoolOptions {
  /** What the pool does, for messages ("page analysis"). */
  name: string;
  /** The worker module. */
  module: URL;
  /** Workers. */
  size: number;
  /** Deadline of a job from submission: wait plus run. */
  deadlineMs: number;
  /** Most jobs waiting, all callers together. */
  maxQueued: number;
  /** Most jobs one caller may have waiting. Default: `maxQueued`. */
  maxQueuedPerCaller?: number;
  /** Most jobs of one caller running at once. Default: `size - 1` (at least 1). */
  perCallerRunning?: number;
  /** A worker that has not loaded its modules after this long is given up. Default 60 s. */
  startLimitMs?: number;
  /**
   * Workers that may fail to start in a row before waiting jobs fail: a start that hangs (seen
   * once in a while when the runtime is busy) is replaced, not fatal. Default 3.
   */
  startAttempts?: number;
}

interface Job<I, O> {
  caller: string;
  input: I;
  resolve(out: O): void;
  reject(err: Error): void;
  timer?: ReturnType<typeof setTimeout>;
  slot?: Slot;
  /** Set while no worker is up (all starting): the deadline starts once one is. */
  unarmed?: boolean;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job<unknown, unknown>;
  id: number;
  startTimer?: ReturnType<typeof setTimeout>;
}

type Reply = { ready?: boolean; id?: number; output?: unknown; error?: string; kind?: string };

/** Figures of a pool, for logs and tests. */
export interface PoolStats {
  workers: number;
  running: number;
  queued: number;
  timedOut: number;
  refused: number;
  replaced: number;
}

/** See the module comment. All workers start with the first job; {@link close} stops them. */
export class WorkerPool<I, O> {
  readonly #o: Required<WorkerPoolOptions>;
  readonly #slots: Slot[] = [];
  /** Waiting jobs per caller, callers in order of arrival. */
  readonly #queues = new Map<string, Job<I, O>[]>();
  /** When each caller with work was last served (a counter): the longest-waiting caller goes next. */
  readonly #served = new Map<string, number>();
  #turn = 0;
  readonly #running = new Map<string, number>();
  #queued = 0;
  #nextJobId = 1;
  #closed = false;
  /** Workers that failed to start since one last did. */
  #startFailures = 0;
  readonly #stats = { timedOut: 0, refused: 0, replaced: 0 };

  constructor(options: WorkerPoolOptions) {
    const size = Math.max(1, Math.floor(options.size));
    this.#o = {
      startLimitMs: 60_000,
      startAttempts: 3,
      maxQueuedPerCaller: options.maxQueued,
      perCallerRunning: Math.max(1, size - 1),
      ...options,
      size,
    };
  }

  /**
   * Runs one job for `caller` (a tenant, an API key, an agent, the poller).
   * @throws {PoolBusyError} at once when the queue has no room
   * @throws {PoolTimeoutError} when the deadline passes first
   * @throws {PoolJobError} when the worker reports an error
   */
  run(caller: string, input: I): Promise<O> {
    if (this.#closed) return Promise.reject(new Error(`${this.#o.name} is closed`));
    const queue = this.#queues.get(caller) ?? [];
    if (this.#queued >= this.#o.maxQueued || queue.length >= this.#o.maxQueuedPerCaller) {
      this.#stats.refused++;
      return Promise.reject(new PoolBusyError(this.#o.name, Math.max(1, Math.ceil(this.#o.deadlineMs / 1000))));
    }
    return new Promise<O>((resolve, reject) => {
      const job: Job<I, O> = { caller, input, resolve, reject };
      queue.push(job);
      this.#queues.set(caller, queue);
      this.#queued++;
      // Starting a worker (loading its modules) is not the job's time: a replaced worker costs no deadline.
      if (this.#slots.some((s) => s.ready)) this.#arm(job);
      else job.unarmed = true;
      this.#pump();
    });
  }

  /** Stops every worker; waiting and running jobs fail. */
  close(): void {
    this.#closed = true;
    const closed = new Error(`${this.#o.name} is closed`);
    for (const queue of this.#queues.values()) {
      for (const job of queue) this.#settle(job, closed);
    }
    this.#queues.clear();
    this.#queued = 0;
    for (const slot of this.#slots.splice(0)) {
      clearTimeout(slot.startTimer);
      slot.worker.terminate();
      if (slot.job) this.#settle(slot.job as Job<I, O>, closed);
    }
    this.#running.clear();
    this.#served.clear();
  }

  /** Workers, running and waiting jobs, and counts of deadlines passed, refusals and replaced workers. */
  stats(): PoolStats {
    let running = 0;
    for (const s of this.#slots) if (s.job) running++;
    return { workers: this.#slots.length, running, queued: this.#queued, ...this.#stats };
  }

  #arm(job: Job<I, O>): void {
    job.unarmed = false;
    job.timer = setTimeout(() => this.#expire(job), this.#o.deadlineMs);
  }

  #expire(job: Job<I, O>): void {
    const slot = job.slot;
    this.#stats.timedOut++;
    if (slot) {
      // Running: stopping the worker is the only way to stop it.
      this.#replace(slot);
      this.#settle(job, new PoolTimeoutError(this.#o.name, this.#o.deadlineMs, true));
    } else {
      this.#dequeue(job);
      this.#settle(job, new PoolTimeoutError(this.#o.name, this.#o.deadlineMs, false));
    }
    this.#pump();
  }

  #settle(job: Job<I, O>, result: Error | { out: O }): void {
    clearTimeout(job.timer);
    job.timer = undefined;
    if (job.slot) {
      job.slot.job = undefined;
      job.slot = undefined;
      const n = (this.#running.get(job.caller) ?? 1) - 1;
      if (n > 0) this.#running.set(job.caller, n);
      else this.#running.delete(job.caller);
      this.#forgetIdle(job.caller);
    }
    if (result instanceof Error) job.reject(result);
    else job.resolve(result.out);
  }

  #dequeue(job: Job<I, O>): void {
    const queue = this.#queues.get(job.caller);
    const at = queue?.indexOf(job) ?? -1;
    if (!queue || at < 0) return;
    queue.splice(at, 1);
    this.#queued--;
    if (!queue.length) this.#queues.delete(job.caller);
    this.#forgetIdle(job.caller);
  }

  /** Starts jobs on idle workers, callers in turn; starts workers up to `size` while jobs wait. */
  #pump(): void {
    while (!this.#closed && this.#queued > 0) {
      const idle = this.#slots.find((s) => s.ready && !s.job);
      if (!idle) {
        // The first job starts every worker: start-up is slow, and a second caller should find one ready.
        if (this.#slots.length < this.#o.size) {
          this.#spawn();
          continue;
        }
        return;
      }
      const job = this.#nextJob();
      if (!job) return;
      this.#start(idle, job);
    }
  }

  /**
   * Takes the next job: from the caller served longest ago (callers never served first, in order
   * of arrival) among those that may run another job.
   */
  #nextJob(): Job<I, O> | undefined {
    let best: string | undefined, bestTurn = Infinity;
    for (const caller of this.#queues.keys()) {
      if ((this.#running.get(caller) ?? 0) >= this.#o.perCallerRunning) continue;
      const turn = this.#served.get(caller) ?? -1;
      if (turn < bestTurn) [best, bestTurn] = [caller, turn];
    }
    if (best === undefined) return undefined;
    const queue = this.#queues.get(best)!;
    const job = queue.shift()!;
    if (!queue.length) this.#queues.delete(best);
    this.#queued--;
    this.#served.set(best, ++this.#turn);
    return job;
  }

  /** Forgets a caller's turn once it has nothing waiting or running (bounds the map). */
  #forgetIdle(caller: string): void {
    if (!this.#queues.has(caller) && !this.#running.has(caller)) this.#served.delete(caller);
  }

  #start(slot: Slot, job: Job<I, O>): void {
    job.slot = slot;
    slot.job = job as Job<unknown, unknown>;
    slot.id = this.#nextJobId++;
    this.#running.set(job.caller, (this.#running.get(job.caller) ?? 0) + 1);
    slot.worker.postMessage({ id: slot.id, input: job.input });
  }

  #spawn(): Slot {
    const worker = new Worker(this.#o.module, { type: "module" });
    const slot: Slot = { worker, ready: false, id: 0 };
    this.#slots.push(slot);
    slot.startTimer = setTimeout(() => this.#failStart(slot), this.#o.startLimitMs);
    worker.onmessage = (e: MessageEvent<Reply>) => this.#onReply(slot, e.data);
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      if (!slot.ready) return this.#failStart(slot);
      const job = slot.job as Job<I, O> | undefined;
      this.#replace(slot);
      if (job) this.#settle(job, new PoolJobError(`${this.#o.name} failed`));
      this.#pump();
    };
    return slot;
  }

  #onReply(slot: Slot, reply: Reply): void {
    if (reply?.ready) {
      clearTimeout(slot.startTimer);
      slot.ready = true;
      this.#startFailures = 0;
      for (const queue of this.#queues.values()) for (const job of queue) if (job.unarmed) this.#arm(job);
      this.#pump();
      return;
    }
    const job = slot.job as Job<I, O> | undefined;
    if (!job || reply.id !== slot.id) return;
    this.#settle(
      job,
      reply.error !== undefined ? new PoolJobError(reply.error, reply.kind) : { out: reply.output as O },
    );
    this.#pump();
  }

  /**
   * A worker that never came up: drop it and start another, up to `startAttempts` in a row; then,
   * while no worker is up, waiting jobs fail rather than hang.
   */
  #failStart(slot: Slot): void {
    clearTimeout(slot.startTimer);
    slot.worker.terminate();
    const at = this.#slots.indexOf(slot);
    if (at >= 0) this.#slots.splice(at, 1);
    if (++this.#startFailures < this.#o.startAttempts) {
      this.#stats.replaced++;
      this.#pump();
      return;
    }
    if (!this.#slots.some((s) => s.ready)) {
      const err = new Error(`${this.#o.name} worker did not start`);
      for (const queue of [...this.#queues.values()]) {
        for (const job of [...queue]) {
          this.#dequeue(job);
          this.#settle(job, err);
        }
      }
    }
  }

  /** Terminates a slot's worker and starts a fresh one in its place (warm for the next job). */
  #replace(slot: Slot): void {
    clearTimeout(slot.startTimer);
    slot.worker.terminate();
    const at = this.#slots.indexOf(slot);
    if (at >= 0) this.#slots.splice(at, 1);
    this.#stats.replaced++;
    if (!this.#closed) this.#spawn();
  }
}

/** What a worker module's job handler may throw to label its error for the caller. */
export interface LabelledError {
  message: string;
  kind?: string;
}

/**
 * The worker side of the protocol: answers each job with `handle(input)`. Call once at the top
 * of a worker module, after its imports have loaded.
 */
export function serveJobs<I, O>(handle: (input: I) => O, label: (err: unknown) => LabelledError): void {
  const scope = self as unknown as {
    onmessage: ((e: MessageEvent<{ id: number; input: I }>) => void) | null;
    postMessage(message: unknown): void;
  };
  scope.onmessage = (e) => {
    const { id, input } = e.data;
    try {
      scope.postMessage({ id, output: handle(input) });
    } catch (err) {
      const { message, kind } = label(err);
      scope.postMessage({ id, error: message, kind });
    }
  };
  // Loading linkedom and friends takes a while on a busy machine; job deadlines start after it.
  // Said on the next task, not while the module is still being evaluated: a message posted then
  // was now and then never delivered (Deno 2.9: 19 of 48 starts with six test processes at once,
  // 0 of 48 deferred), and the pool waited out its start limit (60 s by default) for a worker that
  // had started.
  setTimeout(() => scope.postMessage({ ready: true }), 0);
}
