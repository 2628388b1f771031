/** The handle a timer function returns. */
export type TimerId = ReturnType<typeof setTimeout>;

/** Timer functions, injected (like the clock) so tests drive schedules without sleeping. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId): void;
}

/** The runtime's timers, for production. */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id),
};
