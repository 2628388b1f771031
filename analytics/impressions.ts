/**
 * Impressions as analytics events: for a page of search results, one `api_call` (the search, for
 * agent readership) and one `result_impression` per result on it; for an answer, one
 * `result_impression` per cited article (the answer itself is the `query` event the answer engine
 * records). They are buffered and recorded in batches off the response path (a search or an answer
 * never waits for the event log): when 200 events wait, when the oldest is a second old, and when
 * the pipeline stops.
 */
import type { CitedArticles } from "../core/answer/types.ts";
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

/** Batches impression events into the event sink. */
export class ImpressionRecorder {
  #buffer: EventInput[] = [];
  #oldestMs = 0;

  constructor(private readonly sink: EventSink, private readonly clock: Clock, private readonly log: Logger) {}

  /** Takes a served page (never throws, never waits). */
  add(served: ServedResults): void {
    this.#push(impressionEvents(served));
  }

  /** Takes the citations of a served answer (never throws, never waits). */
  addCited(cited: CitedArticles): void {
    this.#push(citationEvents(cited));
  }

  #push(events: EventInput[]): void {
    if (!events.length) return;
    if (!this.#buffer.length) this.#oldestMs = this.clock.now().getTime();
    this.#buffer.push(...events);
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
