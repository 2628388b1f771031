/** Calls to the widget's public routes on our origin (never the tenant's API key). */
import type { Citation, InteractionType, Recommendation, WidgetConfig } from "./types.ts";

/** A refusal or failure, with the server's message (shown as text) when it sent one. */
export class WidgetApiError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}

/** What {@link ask} reports while an answer streams. */
export interface AnswerHandlers {
  /** The service took the question: the answer is coming (a refusal throws instead). */
  started?(): void;
  token(text: string): void;
  citations(list: Citation[]): void;
  related(questions: string[]): void;
}

/** Body of `POST /widget/v1/{wd}/ask`. */
export interface AskBody {
  query: string;
  session_id: string;
  interaction_type: InteractionType;
  history?: { role: "user" | "assistant"; content: string }[];
  page_url?: string;
  /** The embed's placement fields (`placement_id`, `deployment_type`, ad macros). */
  [placement: string]: unknown;
}

/**
 * JSON from the server as objects without a prototype: on a page whose `Object.prototype` was
 * polluted (`?__proto__[line_item_id]=...` through a page's query-string parser), a field the server
 * left out reads as absent, not as the pollution (which would end up in events and on screen).
 */
export function parseJson(text: string): unknown {
  return JSON.parse(
    text,
    (_key, v) => v && typeof v === "object" && !Array.isArray(v) ? Object.assign(Object.create(null), v) : v,
  );
}

async function json(res: Response): Promise<unknown> {
  return parseJson(await res.text());
}

async function failure(res: Response): Promise<WidgetApiError> {
  const body = await json(res).catch(() => null) as { message?: unknown; code?: unknown } | null;
  const message = typeof body?.message === "string" ? body.message : "The answer service is unavailable";
  return new WidgetApiError(message, typeof body?.code === "string" ? body.code : `http_${res.status}`);
}

/** The widget's API on one origin. */
export class WidgetApi {
  constructor(readonly base: string, readonly widgetId: string) {}

  #url(path: string): string {
    return `${this.base}/widget/v1/${encodeURIComponent(this.widgetId)}/${path}`;
  }

  /** The public configuration; `started` is the same request already under way (the loader starts it). */
  async config(started?: Promise<Response>): Promise<WidgetConfig> {
    const res = await (started ?? fetch(this.#url("config"), { credentials: "omit" }));
    if (!res.ok) throw await failure(res);
    return await json(res) as WidgetConfig;
  }

  async recommend(body: Record<string, string | number | undefined>): Promise<Recommendation[]> {
    const res = await fetch(this.#url("recommend"), {
      method: "POST",
      credentials: "omit",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw await failure(res);
    const out = await json(res) as { results?: Recommendation[] };
    return Array.isArray(out.results) ? out.results : [];
  }

  /**
   * Asks and streams the answer (SSE); resolves with the full answer text and the answer's
   * `request_id` (its `query` event names it: the service's own record of a question its reader
   * left at the last moment has the same event id, so the two are stored once).
   */
  async ask(body: AskBody, on: AnswerHandlers, signal?: AbortSignal): Promise<{ text: string; requestId?: string }> {
    const res = await fetch(this.#url("ask"), {
      method: "POST",
      credentials: "omit",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
    if (!res.ok || !res.body) throw await failure(res);
    on.started?.();
    let answer = "";
    let done = false;
    let requestId: string | undefined;
    for await (const ev of sseEvents(res.body)) {
      let data: Record<string, unknown>;
      try {
        data = parseJson(ev.data) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (ev.event === "token" && typeof data.text === "string") {
        answer += data.text;
        on.token(data.text);
      } else if (ev.event === "citations" && Array.isArray(data.citations)) on.citations(data.citations as Citation[]);
      else if (ev.event === "related" && Array.isArray(data.questions)) on.related(data.questions as string[]);
      else if (ev.event === "error") {
        throw new WidgetApiError(
          typeof data.message === "string" ? data.message : "The answer failed",
          typeof data.code === "string" ? data.code : "error",
        );
      } else if (ev.event === "done") {
        if (typeof data.answer === "string") answer = data.answer;
        if (typeof data.request_id === "string") requestId = data.request_id;
        done = true;
      }
    }
    if (!done) throw new WidgetApiError("The answer was cut off", "incomplete");
    return { text: answer, requestId };
  }
}

/** Server-sent events of a response body (`event:` + `data:` lines, blank-line separated). */
export async function* sseEvents(body: ReadableStream<BufferSource>): AsyncGenerator<{ event: string; data: string }> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let event = "message";
  let data: string[] = [];
  // One line; returns the event it completes, if any.
  const line = (text: string): { event: string; data: string } | null => {
    if (text === "") {
      const done = data.length ? { event, data: data.join("\n") } : null;
      event = "message";
      data = [];
      return done;
    }
    if (text.startsWith("event:")) event = text.slice(6).trim();
    else if (text.startsWith("data:")) data.push(text.slice(5).replace(/^ /, ""));
    return null;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl: number;
    while ((nl = buf.search(/\r?\n/)) >= 0) {
      const ev = line(buf.slice(0, nl));
      buf = buf.slice(nl + (buf[nl] === "\r" ? 2 : 1));
      if (ev) yield ev;
    }
  }
  // A last event without its blank line is still taken (lenient: it is our own server).
  if (buf) line(buf);
  const last = line("");
  if (last) yield last;
}
