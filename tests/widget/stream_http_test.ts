import assert from "node:assert/strict";
import { startServer } from "../../routes/server.ts";
import { type Reply, startChatServer } from "../answer/_chat_server.ts";
import { ORIGIN, sseEvents, widgetWorld } from "./_world.ts";

Deno.test("POST /widget/v1/{wd}/ask over real HTTP relays the first token before the provider has finished", async () => {
  const enc = new TextEncoder();
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const chunk = (d: string) => enc.encode(`data: ${JSON.stringify({ choices: [{ delta: { content: d } }] })}\n\n`);
  // An OpenAI-compatible provider that sends one piece, then holds the rest until the test saw it.
  const slowStream: Reply = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(chunk("Bus fares rise "));
          await released;
          controller.enqueue(chunk("by 25 cents [1]."));
          controller.enqueue(enc.encode("data: [DONE]\n\n"));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  await using chat = startChatServer([slowStream]);
  await using w = await widgetWorld({ env: { OPENAI_BASE_URL: chat.baseUrl, OPENAI_API_KEY: "sk-widget-test" } });
  const a = await w.tenant("Acme");
  await w.deps.repos.aiModels.update({ ...a.model, provider: { kind: "openai", model: "gpt-test" } });
  const server = startServer(w.app.fetch);
  try {
    const res = await fetch(`${server.url}/widget/v1/${a.widget.id}/ask`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-http" }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("\n\n")) seen += (await reader.read()).value ?? "";
    assert.equal(seen, `event: token\ndata: ${JSON.stringify({ text: "Bus fares rise " })}\n\n`);
    release();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += value;
    }
    const events = sseEvents(seen);
    assert.deepEqual(events.map((e) => e.event), ["token", "token", "citations", "related", "done"]);
    assert.deepEqual(events.at(-1)!.data, {
      answer: "Bus fares rise by 25 cents [1].",
      request_id: res.headers.get("x-request-id"),
    });
    // The provider's sources block became the citations: numbered as the text cites them, tracking links.
    const { citations } = events[2]!.data as { citations: { n: number; url: string }[] };
    assert.equal(citations.length, 1);
    assert.equal(citations[0]!.n, 1);
    assert.match(citations[0]!.url, /\/r\//);
  } finally {
    release();
    await server.shutdown();
  }
});
