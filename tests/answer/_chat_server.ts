/**
 * A small OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 for provider tests. Each
 * test scripts its replies in order; every request is kept for assertions.
 */

/** A request as the server saw it. */
export interface SeenRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** Answers one request. */
export type Reply = (request: SeenRequest, signal: AbortSignal) => Response | Promise<Response>;

/** A running chat server. */
export interface ChatServer {
  /** Base address including `/v1`. */
  baseUrl: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** Starts the server; replies are used in order, and a request beyond them gets a 500. */
export function startChatServer(replies: Reply[]): ChatServer & AsyncDisposable {
  const requests: SeenRequest[] = [];
  const closing = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const seen: SeenRequest = {
      path: new URL(req.url).pathname,
      headers: req.headers,
      body: await req.json().catch(() => ({})),
    };
    const reply = replies[requests.length];
    requests.push(seen);
    if (seen.path !== "/v1/chat/completions") return new Response("not found", { status: 404 });
    if (!reply) return Response.json({ error: { message: "no scripted reply" } }, { status: 500 });
    return await reply(seen, closing.signal);
  });
  const close = async () => {
    closing.abort();
    await server.shutdown();
  };
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A normal chat completion whose message is `content`. */
export const chatReply = (content: string): Reply => () =>
  Response.json({
    id: "chatcmpl-test",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  });

/** A failure with `status`, optional headers and body. */
export const failReply = (status: number, headers: Record<string, string> = {}, body = "{}"): Reply => () =>
  new Response(body, { status, headers: { "content-type": "application/json", ...headers } });

/** A reply that never comes (until the server closes). */
export const hangReply = (): Reply => (_req, signal) =>
  new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(new Response("late", { status: 200 })), { once: true })
  );

/** A `stream: true` reply sending `deltas` as SSE chunks, then `[DONE]`; `raw` events are sent verbatim. */
export const sseReply = (deltas: string[], { raw = [] as string[], done = true } = {}): Reply => () => {
  const enc = new TextEncoder();
  const events = [
    ...deltas.map((d) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: d } }] })}\n\n`),
    ...raw,
    ...(done ? ["data: [DONE]\n\n"] : []),
  ];
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const e of events) controller.enqueue(enc.encode(e));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
};

/**
 * A provider stream that sends `before`, then, once released, `after` and its end, or with `fail` a
 * provider error and no end (for a reader who leaves mid-answer, or a provider slow to start).
 */
export function heldSseReply(
  before: string[],
  after: string[],
  { fail = false } = {},
): { reply: Reply; release: () => void } {
  const enc = new TextEncoder();
  const delta = (d: string) => enc.encode(`data: ${JSON.stringify({ choices: [{ delta: { content: d } }] })}\n\n`);
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const reply: Reply = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const d of before) controller.enqueue(delta(d));
          await released;
          if (fail) {
            controller.enqueue(enc.encode(`data: ${JSON.stringify({ error: { message: "overloaded" } })}\n\n`));
            controller.close();
            return;
          }
          for (const d of after) controller.enqueue(delta(d));
          controller.enqueue(enc.encode("data: [DONE]\n\n"));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  return { reply, release };
}
