/**
 * The widget's analytics events (docs/events-and-metrics.md): queued, sent in batches to
 * `POST /v1/events`, flushed with `navigator.sendBeacon` when the page is hidden or left. Each event
 * has its own `event_id`, so a batch sent again after a failure is stored once. No timestamps: the
 * server stamps arrival, so a wrong browser clock cannot push events out of the accepted window.
 */

/** Fields an event may carry (the rest are added by the server). */
export type EventFields = Record<string, string | number | undefined>;

/** Queue bound: beyond it the oldest events are dropped (a page left open offline must not grow). */
const MAX_QUEUE = 200;
/** Events per request (the route takes up to 500). */
const MAX_BATCH = 50;
/** How long events wait for company before a batch is sent. */
const FLUSH_DELAY_MS = 2000;
/** A failed batch is tried again this many times before it is dropped. */
const MAX_ATTEMPTS = 3;

/** Random hex of `bytes` bytes (also on plain-http pages, where `crypto.randomUUID` is missing). */
export function randomHex(bytes: number): string {
  const a = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * This tab's session id for the widget: kept in `sessionStorage` only (no cookie, no
 * `localStorage`), so it ends with the tab and never follows the reader to another site.
 */
export function sessionIdFor(widgetId: string): string {
  const key = `ask-ai-widget:session:${widgetId}`;
  try {
    const existing = sessionStorage.getItem(key);
    if (existing && /^s_[0-9a-f]{24}$/.test(existing)) return existing;
    const id = `s_${randomHex(12)}`;
    sessionStorage.setItem(key, id);
    return id;
  } catch {
    // Storage blocked: a session per page view.
    return `s_${randomHex(12)}`;
  }
}

/** Sends the events of one widget on one page. */
export class Tracker {
  #queue: { body: EventFields; attempts: number }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #url: string;

  /**
   * @param common fields every event carries (session, placement, ad macros, page)
   * @param enabled false under `data-no-track`: nothing is queued or sent
   */
  constructor(base: string, readonly widgetId: string, readonly common: EventFields, readonly enabled: boolean) {
    this.#url = `${base}/v1/events`;
    if (enabled) {
      addEventListener("pagehide", () => this.flush(true));
      document.addEventListener("visibilitychange", () => {
        if (document.visibilityState === "hidden") this.flush(true);
      });
    }
  }

  /** Queues one event; it is sent within {@link FLUSH_DELAY_MS} or when the page is hidden. */
  send(eventType: string, fields: EventFields = {}): void {
    if (!this.enabled) return;
    const body: EventFields = { event_id: `ev_${randomHex(12)}`, event_type: eventType, ...this.common };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== "") body[k] = v;
    this.#queue.push({ body, attempts: 0 });
    if (this.#queue.length > MAX_QUEUE) this.#queue.splice(0, this.#queue.length - MAX_QUEUE);
    this.#timer ??= setTimeout(() => this.flush(false), FLUSH_DELAY_MS);
  }

  /** Sends what is queued: with `sendBeacon` when the page is going away, else with `fetch`. */
  flush(leaving: boolean): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#queue.length) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      const json = JSON.stringify({ widget_id: this.widgetId, events: batch.map((e) => e.body) });
      if (leaving && this.#beacon(json)) continue;
      this.#post(json, batch, leaving);
    }
  }

  #beacon(json: string): boolean {
    try {
      return navigator.sendBeacon(this.#url, new Blob([json], { type: "application/json" }));
    } catch {
      // Browsers that refuse a JSON beacon (a non-safelisted type) get the keepalive fetch instead.
      return false;
    }
  }

  #post(json: string, batch: { body: EventFields; attempts: number }[], leaving: boolean): void {
    fetch(this.#url, {
      method: "POST",
      credentials: "omit",
      keepalive: leaving,
      headers: { "content-type": "application/json" },
      body: json,
    }).then((res) => {
      // 4xx other than 429: the batch itself is refused; sending it again changes nothing.
      if (res.ok || (res.status >= 400 && res.status < 500 && res.status !== 429)) return;
      // A 429 says when to come back (Retry-After, seconds); within a minute, it is followed.
      const after = Number(res.headers.get("retry-after"));
      this.#retry(batch, Number.isFinite(after) && after > 0 ? Math.min(after * 1000, 60_000) : FLUSH_DELAY_MS * 2);
    }, () => this.#retry(batch, FLUSH_DELAY_MS * 2));
  }

  #retry(batch: { body: EventFields; attempts: number }[], delayMs: number): void {
    const again = batch.filter((e) => ++e.attempts < MAX_ATTEMPTS);
    if (!again.length) return;
    // Same event ids: the server stores an id once, so a batch that did arrive is not counted twice.
    this.#queue.unshift(...again);
    if (this.#queue.length > MAX_QUEUE) this.#queue.length = MAX_QUEUE;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.flush(false), Math.max(delayMs, FLUSH_DELAY_MS));
  }
}
