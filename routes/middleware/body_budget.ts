import { AppError } from "../../core/errors.ts";

/**
 * Bodies of at most this many bytes take nothing from the budget: they cost about what their
 * connection's own buffers do, and the widget's and the storefront's small bodies never wait
 * behind a flood of large ones.
 */
export const SMALL_BODY_BYTES = 64 * 1024;

/** Settings of a {@link BodyBudget}. */
export interface BodyBudgetOptions {
  /** Bytes of bodies read and held at once, all requests together. */
  bytes: number;
  /** Requests waiting for room; past it a request is refused (503 `server_busy`). */
  maxWaiting: number;
  /** How long a request may wait for room before it is refused. */
  waitMs: number;
  /**
   * Bytes one holder (a keyless sender's address) may hold at once: a body taking its share before
   * it is read keeps it while the read goes on, so one address trickling a few large bodies would
   * otherwise hold the whole budget. Default: a quarter of `bytes`.
   */
  perHolderBytes?: number;
  /**
   * Requests one holder may have waiting at once; past it that holder's next one is refused at once,
   * so one address's flood of queued bodies never fills the queue for everyone else. Default: an
   * eighth of `maxWaiting` (at least 1).
   */
  perHolderWaiting?: number;
}

/** The process's default: 32 MiB of bodies (8 MiB a holder), 256 requests waiting at most 30 s each. */
const DEFAULT_BODY_BUDGET: BodyBudgetOptions = {
  bytes: 32 * 1024 * 1024,
  maxWaiting: 256,
  waitMs: 30_000,
};

interface Waiter {
  bytes: number;
  holder?: string;
  admit(): void;
}

const busy = () =>
  new AppError("unavailable", "server_busy", "Too many large request bodies at once, try again shortly", {
    headers: { "Retry-After": "1" },
  });

/**
 * A process-wide budget of request-body bytes being read and held at once. A request takes its
 * share before its body is read and gives it back when it is answered; one that does not fit waits,
 * unread (TCP holds its bytes at the sender), in a bounded first-come queue with a deadline. A body
 * larger than the whole budget takes all of it and runs alone.
 */
export class BodyBudget {
  readonly #o: BodyBudgetOptions;
  #held = 0;
  readonly #byHolder = new Map<string, number>();
  readonly #waiting: Waiter[] = [];
  readonly #waitingByHolder = new Map<string, number>();

  constructor(options: BodyBudgetOptions = DEFAULT_BODY_BUDGET) {
    this.#o = options;
  }

  /** Bytes taken right now (for tests and logs). */
  get held(): number {
    return this.#held;
  }

  /** Requests waiting for room right now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Takes `bytes` (nothing for a small body), within `holder`'s part when one is named, and resolves
   * with the function that gives them back (calling it twice gives back once). `onWait` is called
   * when it has to wait for room.
   * @throws {AppError} 503 `server_busy` with `Retry-After` when the queue is full or the wait passes its deadline
   */
  async take(bytes: number, holder?: string, onWait?: () => void): Promise<() => void> {
    if (bytes <= SMALL_BODY_BYTES) return () => {};
    const share = Math.min(bytes, this.#o.bytes);
    if (this.#waiting.length > 0 || !this.#fits(share, holder)) {
      if (this.#waiting.length >= this.#o.maxWaiting) throw busy();
      if (holder !== undefined && (this.#waitingByHolder.get(holder) ?? 0) >= this.#holderWaiting()) throw busy();
      onWait?.();
      await this.#wait(share, holder);
    } else {
      this.#hold(share, holder);
    }
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#hold(-share, holder);
      this.#admit();
    };
  }

  /** Whether `share` fits now: in the budget, and (with a holder) in that holder's part of it. */
  #fits(share: number, holder: string | undefined): boolean {
    if (this.#held + share > this.#o.bytes) return false;
    if (holder === undefined) return true;
    const mine = this.#byHolder.get(holder) ?? 0;
    // A holder with nothing held may take a body larger than its part (it runs alone in it).
    return mine === 0 || mine + share <= (this.#o.perHolderBytes ?? this.#o.bytes / 4);
  }

  #holderWaiting(): number {
    return this.#o.perHolderWaiting ?? Math.max(1, Math.floor(this.#o.maxWaiting / 8));
  }

  /** Counts a holder's waiting requests up or down. */
  #countWaiting(holder: string | undefined, delta: number): void {
    if (holder === undefined) return;
    const n = (this.#waitingByHolder.get(holder) ?? 0) + delta;
    if (n > 0) this.#waitingByHolder.set(holder, n);
    else this.#waitingByHolder.delete(holder);
  }

  #hold(delta: number, holder: string | undefined): void {
    this.#held += delta;
    if (holder === undefined) return;
    const mine = (this.#byHolder.get(holder) ?? 0) + delta;
    if (mine > 0) this.#byHolder.set(holder, mine);
    else this.#byHolder.delete(holder);
  }

  #wait(share: number, holder: string | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        bytes: share,
        holder,
        admit: () => {
          clearTimeout(timer);
          this.#countWaiting(holder, -1);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        const at = this.#waiting.indexOf(waiter);
        if (at < 0) return;
        this.#waiting.splice(at, 1);
        this.#countWaiting(holder, -1);
        // The head leaving may let the ones behind it in.
        if (at === 0) this.#admit();
        reject(busy());
      }, this.#o.waitMs);
      this.#waiting.push(waiter);
      this.#countWaiting(holder, 1);
      // Those ahead may be held back by their holder's part only: this one may go in past them.
      this.#admit();
    });
  }

  /**
   * Lets waiters in, first come first served, while the first one that fits the budget fits. A
   * waiter held back only by its holder's part is passed over, so one holder's queued bodies never
   * keep another's out.
   */
  #admit(): void {
    for (let i = 0; i < this.#waiting.length;) {
      const next = this.#waiting[i]!;
      if (this.#held + next.bytes > this.#o.bytes) return;
      if (!this.#fits(next.bytes, next.holder)) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#hold(next.bytes, next.holder);
      next.admit();
    }
  }
}

/** The budget every body reader shares unless given its own (one per process, as the name says). */
export const processBodyBudget = new BodyBudget();
