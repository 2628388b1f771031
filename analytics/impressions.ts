/**
 * Search result impressions as analytics events: one `api_call` per page served (the search, for
 * agent readership) and one `result_impression` per result on it. They are buffered and recorded
 * in batches off the response path (a search never waits for the event log): when 200 events wait,
 * when the oldest is a second old, and when the pipeline stops.
 */
import type { Clock } from "../core/clock.ts";
import { describeError, type Logger } from "../core/log.ts";
import type { ServedResults } from "../core/search/engine.ts";
import type { EventInput, EventSink } from "./events.ts";

const MAX_EVENTS = 200;
const MAX_AGE_MS = 1000;

/** The events one served page of results stands for. */
export function impressionEvents(s: ServedResults): EventInput[] {
  const base = {
    ts: s.at.toISOString(),
    tenant_id: s.tenantId,
    data_model_id: s.dataModelId,
    ...(s.caller ? { agent_identity: s.caller } : {}),
  };
  return [
    { ...base, event_type: "api_call", interaction_type: "search", prompt: s.query.slice(0, 2000) },
    ...s.results.map((r) => ({
      ...base,
      event_type: "result_impression",
      article_id: r.articleId,
      article_url: r.url,
      position: r.position,
    })),
  ];
}

/** Batches impression events into the event sink. */
export class ImpressionRecorder {
  #buffer: EventInput[] = [];
  #oldestMs = 0;

  constructor(private readonly sink: EventSink, private readonly clock: Clock, private readonly log: Logger) {}

  /** Takes a served page (never throws, never waits). */
  add(served: ServedResults): void {
    if (!this.#buffer.length) this.#oldestMs = this.clock.now().getTime();
    this.#buffer.push(...impressionEvents(served));
    if (this.#buffer.length >= MAX_EVENTS || this.clock.now().getTime() - this.#oldestMs >= MAX_AGE_MS) {
      void this.flush();
    }
  }

  /** Records what waits. */
  async flush(): Promise<void> {
    const batch = this.#buffer;
    if (!batch.length) return;
    this.#buffer = [];
    try {
      await this.sink.record(batch);
    } catch (err) {
      this.log.error("search impressions not recorded", { events: batch.length, error: describeError(err) });
    }
  }
}
