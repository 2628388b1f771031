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

/**
 * A yield point for long synchronous work on the event loop (a large ingest): each call resolves
 * at once until `budgetMs` of work has passed since the last yield, then waits one macrotask, so
 * requests that arrived meanwhile are served before the work goes on.
 * @example const slice = timeSlicer(); for (const item of items) { work(item); await slice(); }
 */
export function timeSlicer(budgetMs = 10): () => Promise<void> {
  let since = performance.now();
  return async function slice() {
    if (performance.now() - since < budgetMs) return;
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    since = performance.now();
  };
}
