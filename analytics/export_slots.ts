/**
 * How many logs exports a tenant may have under way at once in a process. An export scans its
 * whole window (up to 366 days of events) and holds scratch files while its client reads, yet
 * counts once against the rate limit, like an answer from the cache: without a bound, one key's
 * quota could keep dozens of year-long scans running at once and starve every other tenant's
 * queries of DuckDB's threads, memory and disk.
 */
import type { Clock } from "../core/clock.ts";
import { analyticsErrors } from "./errors.ts";

/** Exports one tenant may run at once. */
export const EXPORTS_PER_TENANT = 2;
/**
 * A slot is taken back after this long even if its stream never ended (a response dropped without
 * being cancelled), so a lost release cannot lock a tenant out of exports for good.
 */
export const EXPORT_SLOT_MAX_MS = 30 * 60_000;
/** What a refused export is told to wait, in seconds. */
const RETRY_AFTER_S = 10;

/** Per-tenant counts of the exports under way. */
export class ExportSlots {
  readonly #held = new Map<string, Map<number, number>>();
  #next = 0;

  constructor(private readonly clock: Clock, readonly perTenant = EXPORTS_PER_TENANT) {}

  /**
   * Takes one of the tenant's slots.
   * @returns its release (safe to call more than once)
   * @throws 429 `rate limit exceeded` with `Retry-After` when the tenant's slots are all taken
   */
  take(tenantId: string): () => void {
    const now = this.clock.now().getTime();
    const held = this.#held.get(tenantId) ?? new Map<number, number>();
    for (const [id, at] of held) if (now - at >= EXPORT_SLOT_MAX_MS) held.delete(id);
    if (held.size >= this.perTenant) {
      throw analyticsErrors.exports_busy({ headers: { "Retry-After": String(RETRY_AFTER_S) } });
    }
    const id = this.#next++;
    held.set(id, now);
    this.#held.set(tenantId, held);
    return () => {
      held.delete(id);
      if (!held.size && this.#held.get(tenantId) === held) this.#held.delete(tenantId);
    };
  }
}

/**
 * `stream` as seen by the client, calling `end` once when it is read to its end, fails or is
 * cancelled (after the source's own cancellation has finished). Chunks pass through unchanged.
 */
export function onStreamEnd(stream: ReadableStream<Uint8Array>, end: () => void): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  let ended = false;
  const finish = () => {
    if (!ended) (ended = true, end());
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const r = await reader.read();
        if (r.done) {
          finish();
          controller.close();
        } else controller.enqueue(r.value);
      } catch (err) {
        finish();
        controller.error(err);
      }
    },
    async cancel(reason) {
      try {
        await reader.cancel(reason);
      } finally {
        finish();
      }
    },
  }, { highWaterMark: 0 });
}
