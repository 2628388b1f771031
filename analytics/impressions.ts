/**
 * Impressions as analytics events: for a page of search results, one `api_call` (the search, for
 * agent readership) and one `result_impression` per result on it; for an answer, one
 * `result_impression` per cited article (the answer itself is the `query` event the answer engine
 * records). They are buffered and recorded in batches off the response path (a search or an answer
 * never waits for the event log, and a batch is written in a later macrotask, not inside the
 * request that filled it): when 200 events wait, when the oldest is a second old, at each timed
 * flush of the event pipeline, and when the pipeline stops.
 *
 * What "nothing lost" means here (docs/events-and-metrics.md, "Impressions"):
 * - every orderly path writes what waits: the batch size, the age, the pipeline's timer, shutdown
 *   (SIGTERM, SIGINT) and a failed write, which keeps its batch and retries it at the next flush;
 * - one batch is written at a time, through the same durable path as every event (the KV
 *   write-ahead log, then Parquet), so once written an impression survives any crash;
 * - a hard crash (SIGKILL, out of memory, power) loses what waited in memory: at most the events of
 *   the last second, or since the pipeline's last timed flush on a server that served fewer than 200
 *   since. The search response does not wait for the write-ahead log: impressions are measurement,
 *   not something the caller was promised, and waiting would put a KV commit on every search;
 * - the buffer is bounded (`maxEvents`, 50,000 by default): reached only when the log refuses
 *   writes for a long while, and then the oldest events are dropped and counted in an error line.
 */
import { createHash } from "node:crypto";
import type { CitedArticles } from "../core/answer/mod.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { systemTimers, type TimerId, type Timers } from "../core/timers.ts";
import { describeError, type Logger } from "../core/log.ts";
import type { ServedResults } from "../core/search/mod.ts";
import type { EventInput, EventSink } from "./events.ts";
import { uuidv7 } from "./uuid7.ts";

/**
 * Event ids of a served page that are the same for every attempt of one request: a balancer resends
 * a search that timed out to another process with the same `X-Request-Id` (docs/operations.md), and
 * the event log stores an event id once per tenant and day. Without an idempotency key, fresh ids.
 */
function requestEventIds(s: ServedResults): { call?: string; impression: (position: number) => string | undefined } {
  if (!s.idempotencyKey) return { impression: () => undefined };
  const key = createHash("sha256").update([s.tenantId, s.idempotencyKey, s.dataModelId, s.query].join("\u0000"))
    .digest("hex").slice(0, 32);
  return { call: `rq-${key}`, impression: (position) => `rq-${key}.${position}` };
}

/** The events one served page of results stands for. */
export function impressionEvents(s: ServedResults): EventInput[] {
  const ids = requestEventIds(s);
  const base = {
    ts: s.at.toISOString(),
    tenant_id: s.tenantId,
    data_model_id: s.dataModelId,
    ...(s.caller ? { agent_identity: s.caller } : {}),
    // A search a public route served counts in trending as its reader's network, not as a sender of its own.
    ...(s.clientKey ? { client_key: s.clientKey } : {}),
  };
  const idOf = (id: string | undefined) => id ? { event_id: id } : {};
  return [
    { ...base, ...idOf(ids.call), event_type: "api_call", interaction_type: "search", prompt: s.query.slice(0, 2000) },
    ...s.results.map((r) => ({
      ...base,
      ...idOf(ids.impression(r.position)),
      event_type: "result_impression",
      article_id: r.articleId,
      article_url: r.url,
      position: r.position,
    })),
  ];
}

/**
 * The events the citations of one answer stand for: shown to the caller like search results,
 * told apart from them by `ai_agent` (the answering model).
 */
export function citationEvents(c: CitedArticles): EventInput[] {
  return c.articles.map((a) => ({
    event_type: "result_impression",
    ts: c.at.toISOString(),
    tenant_id: c.tenantId,
    ai_agent: c.aiModelId,
    ...(c.caller ? { agent_identity: c.caller } : {}),
    data_model_id: a.dataModelId,
    article_id: a.articleId,
    article_url: a.url,
    position: a.position,
  }));
}

/** `events` by tenant, each tenant's in their order. */
function byTenant(events: EventInput[]): EventInput[][] {
  const groups = new Map<string | undefined, EventInput[]>();
  for (const e of events) {
    const group = groups.get(e.tenant_id);
    if (group) group.push(e);
    else groups.set(e.tenant_id, [e]);
  }
  return [...groups.values()];
}

/** Tuning of an {@link ImpressionRecorder}. */
export interface ImpressionRecorderOptions {
  /** Timers for the deferred write (tests pass their own). */
  timers?: Timers;
  /** Write when this many events wait (200). */
  batchEvents?: number;
  /** Write on the next event once the oldest waiting one is this old (1000 ms). */
  maxAgeMs?: number;
  /** Most events held while writes fail; past it the oldest are dropped (50,000). */
  maxEvents?: number;
}

/** Batches impression events into the event sink. */
export class ImpressionRecorder {
  #buffer: EventInput[] = [];
  // Events the log had no room for, retried from `#heldUntilMs` (its Retry-After) on, or at a
  // flush(): retried at every search instead, a full part of the log made each search prepare them all.
  #held: EventInput[] = [];
  #heldUntilMs = 0;
  #oldestMs = 0;
  #writing: Promise<void> | null = null;
  #scheduled: TimerId | undefined;
  #dropped = 0;
  readonly #timers: Timers;
  readonly #batchEvents: number;
  readonly #maxAgeMs: number;
  readonly #maxEvents: number;

  constructor(
    private readonly sink: EventSink,
    private readonly clock: Clock,
    private readonly log: Logger,
    { timers = systemTimers, batchEvents = 200, maxAgeMs = 1000, maxEvents = 50_000 }: ImpressionRecorderOptions = {},
  ) {
    this.#timers = timers;
    this.#batchEvents = batchEvents;
    this.#maxAgeMs = maxAgeMs;
    this.#maxEvents = maxEvents;
  }

  /** Takes a served page (never throws, never waits). */
  add(served: ServedResults): void {
    this.#push(impressionEvents(served));
  }

  /** Takes the citations of a served answer (never throws, never waits). */
  addCited(cited: CitedArticles): void {
    this.#push(citationEvents(cited));
  }

  /** Events waiting to be written. */
  get waiting(): number {
    return this.#held.length + this.#buffer.length;
  }

  #push(events: EventInput[]): void {
    if (!events.length) return;
    const nowMs = this.clock.now().getTime();
    if (!this.#buffer.length) this.#oldestMs = nowMs;
    // Each event's id is fixed here, not at each write: a write that reached the log but whose answer
    // was lost is written again under the same ids, which the log stores once.
    for (const e of events) this.#buffer.push(e.event_id ? e : { ...e, event_id: uuidv7(this.clock) });
    this.#bound();
    if (this.#buffer.length >= this.#batchEvents || nowMs - this.#oldestMs >= this.#maxAgeMs) this.#schedule();
  }

  /** Writes in a later macrotask: after the response of the request that filled the batch. */
  #schedule(): void {
    if (this.#scheduled !== undefined || this.#writing) return;
    this.#scheduled = this.#timers.setTimeout(() => {
      this.#scheduled = undefined;
      void this.#writeAll();
    }, 0);
  }

  /** Past `maxEvents` waiting, the oldest (held ones first) are dropped and counted. */
  #bound(): void {
    let excess = this.#held.length + this.#buffer.length - this.#maxEvents;
    if (excess <= 0) return;
    this.#dropped += excess;
    const fromHeld = Math.min(excess, this.#held.length);
    this.#held.splice(0, fromHeld);
    excess -= fromHeld;
    if (excess > 0) this.#buffer.splice(0, excess);
  }

  /**
   * Writes everything that waits (the pipeline's timer and shutdown call it). Resolves once it is
   * in the event log, or the write failed and the events wait for the next flush.
   */
  async flush(): Promise<void> {
    if (this.#scheduled !== undefined) this.#timers.clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    // A write under way first: events that came meanwhile go in the next one.
    if (this.#writing) await this.#writing;
    this.#heldUntilMs = 0;
    await this.#writeAll();
  }

  /** One write at a time, batch after batch, until nothing waits or a write fails. */
  #writeAll(): Promise<void> {
    this.#writing ??= (async () => {
      try {
        while (this.#buffer.length || (this.#held.length && this.clock.now().getTime() >= this.#heldUntilMs)) {
          const nowMs = this.clock.now().getTime();
          let batch = this.#buffer;
          if (nowMs >= this.#heldUntilMs) [batch, this.#held] = [this.#held.concat(batch), []];
          this.#buffer = [];
          this.#reportDropped();
          const unwritten = await this.#write(batch);
          if (unwritten) {
            const { events, held, error: err } = unwritten;
            // Kept, oldest first: for the next flush, or, refused for room, until its Retry-After.
            this.#buffer = events.concat(this.#buffer);
            if (held.length) {
              this.#held = held.concat(this.#held);
              this.#heldUntilMs = nowMs + retryAfterMs(err);
            }
            this.#bound();
            this.#oldestMs = this.clock.now().getTime();
            this.log.error("search impressions not recorded yet, kept for the next flush", {
              events: events.length + held.length,
              error: describeError(err),
            });
            if (events.length) return;
          }
        }
      } finally {
        this.#writing = null;
      }
    })();
    return this.#writing;
  }

  /**
   * Writes a batch. A batch mixes the pages of many requests and tenants, and the log takes a batch
   * whole or not at all: an event it refuses (422) would hold back every other for ever, retried at
   * each flush. So a refused batch is halved until the refused events stand alone; they are dropped
   * and counted. A batch the log has no room for (503: one tenant's part of it full, say) is written
   * a tenant at a time, so one tenant's full part holds back only its own events, kept for the next
   * flush. Each tenant's room is asked first (one KV read each), so a tenant with none costs no
   * preparing of its events. Returns what is not written yet (and why) when a write failed so, else
   * null: `held` the events refused for room (retried after the error's Retry-After), `events` the rest.
   */
  async #write(
    batch: EventInput[],
  ): Promise<{ events: EventInput[]; held: EventInput[]; error: unknown } | null> {
    const kept: EventInput[] = [];
    let keptFor: unknown;
    let parts = [batch];
    const full = (err: unknown) => err instanceof AppError && err.kind === "unavailable";
    if (this.sink.refuseWhenFull) {
      try {
        await this.sink.refuseWhenFull();
      } catch (err) {
        if (full(err)) return { events: [], held: batch, error: err };
        return { events: batch, held: [], error: err };
      }
      parts = [];
      for (const group of byTenant(batch)) {
        const tenantId = group[0]!.tenant_id;
        try {
          await this.sink.refuseWhenFull(typeof tenantId === "string" ? tenantId : undefined);
          parts.push(group);
        } catch (err) {
          if (!full(err)) return { events: batch, held: [], error: err };
          kept.push(...group);
          keptFor ??= err;
        }
      }
      // The tenants with room, in one write as before.
      parts = parts.length ? [parts.flat()] : [];
    }
    let refused = 0;
    try {
      while (parts.length) {
        const part = parts[0]!;
        try {
          await this.sink.record(part);
        } catch (err) {
          const kind = err instanceof AppError ? err.kind : undefined;
          if (kind === "unprocessable") {
            parts.splice(
              0,
              1,
              ...(part.length > 1 ? [part.slice(0, part.length >> 1), part.slice(part.length >> 1)] : []),
            );
            if (part.length === 1) refused++;
            continue;
          }
          // Anything else (KV down) holds back everything left.
          if (kind !== "unavailable") return { events: parts.flat(), held: kept, error: err };
          const tenants = byTenant(part);
          if (tenants.length > 1) parts.splice(0, 1, ...tenants);
          else {
            kept.push(...part);
            keptFor ??= err;
            parts.shift();
          }
          continue;
        }
        parts.shift();
      }
      return kept.length ? { events: [], held: kept, error: keptFor } : null;
    } finally {
      if (refused) this.log.error("search impressions refused by the event log, dropped", { events: refused });
    }
  }

  #reportDropped(): void {
    if (!this.#dropped) return;
    this.log.error("search impressions dropped: the event log refused writes for too long", {
      events: this.#dropped,
    });
    this.#dropped = 0;
  }
}

/** How long a refusal for room asks to wait (its Retry-After), a second at least. */
function retryAfterMs(err: unknown): number {
  const s = err instanceof AppError ? Number(err.headers?.["Retry-After"]) : NaN;
  return Number.isFinite(s) && s > 0 ? s * 1000 : 1000;
}
