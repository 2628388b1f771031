/** A source of the current time. Injected everywhere so tests never read the wall clock. */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The wall clock, for production. */
export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until moved; for tests. */
export class FixedClock implements Clock {
  #ms: number;

  constructor(start: Date | string | number = "2026-11-22T12:00:00Z") {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  /** Moves the clock forward by `ms` milliseconds (negative moves it back). */
  advance(ms: number): void {
    this.#ms += ms;
  }

  /** Sets the clock to `at`. */
  set(at: Date | string | number): void {
    this.#ms = new Date(at).getTime();
  }
}

/** Seconds since the UNIX epoch, floored. */
export function unixSeconds(clock: Clock): number {
  return Math.floor(clock.now().getTime() / 1000);
}

/**
 * How long past a record's logical expiry KV is asked to keep it. KV drops entries by its own
 * clock (the KV server's, under KV Connect) while each process judges the logical expiry by its
 * own, a few seconds apart; a record dropped at the very instant of its logical end would be gone
 * while a process still honours it.
 */
export const KV_EXPIRY_SLACK_MS = 60_000;
