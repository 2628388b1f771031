import assert from "node:assert/strict";
import type { EventInput, EventSink } from "../../analytics/events.ts";
import { ExtractiveProvider } from "../../core/answer/extractive.ts";
import { OpenAiProvider } from "../../core/answer/openai.ts";
import { createAnswerService } from "../../core/answer/service.ts";
import type { AnswerService } from "../../core/answer/types.ts";
import { newId } from "../../core/ids.ts";
import type { AiModel } from "../../core/store/models.ts";
import { startServer } from "../../routes/server.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { fixtureArticles, ingestItem } from "./_articles.ts";
import { chatReply, failReply, hangReply, type Reply, sseReply, startChatServer } from "./_chat_server.ts";

/** An event sink that keeps what it is given, to check what the route records. */
function recordingSink(): EventSink & { events: EventInput[] } {
  const events: EventInput[] = [];
  return {
    events,
    record(batch) {
      events.push(...batch);
      return Promise.resolve();
    },
  };
}

const STRUCTURED_SCHEMA = {
  type: "object",
  properties: {
    answer: { type: "string", minLength: 1 },
    found: { type: "boolean" },
    sources: {
      type: "array",
      items: { type: "object", properties: { title: { type: "string" }, url: { type: "string" } }, required: ["url"] },
    },
  },
  required: ["answer", "found", "sources"],
  additionalProperties: false,
};

/**
 * A test world with the hand-made articles ingested into the real search engine, an answer engine
 * over it that records into a memory sink (or the real event pipeline), and an OpenAI-compatible
 * server when replies are given. Provider waits are not slept.
 */
async function answerWorld(chatReplies?: Reply[], { realEvents = false } = {}) {
  const chat = chatReplies ? startChatServer(chatReplies) : undefined;
  // The world's answer service is this test's engine (memory sink, no provider sleeps), built
  // below over the world's own search, config and fetch once the world exists.
  const built: { engine?: AnswerService } = {};
  const answer: AnswerService = {
    answer: (model, query, context) => built.engine!.answer(model, query, context),
    stream: (model, query, context) => built.engine!.stream!(model, query, context),
  };
  const w = await createTestWorld({
    env: chat ? { OPENAI_BASE_URL: chat.baseUrl, OPENAI_API_KEY: "sk-route-test", OPENAI_TIMEOUT_MS: "200" } : {},
    overrides: { answer },
  });
  const { tenantId, key } = await w.tenantWithKey();
  const now = w.clock.now().toISOString();
  const dmNews = newId("dm", w.clock);
  const dmTech = newId("dm", w.clock);
  // The hand-made articles go in through the search engine's real ingestion and come back out
  // through its hybrid, recency-weighted retrieval.
  const byModel = new Map<string, ReturnType<typeof fixtureArticles>>();
  for (const a of fixtureArticles(dmNews, dmTech)) byModel.set(a.dataModelId, [...byModel.get(a.dataModelId) ?? [], a]);
  for (const id of [dmNews, dmTech]) {
    const dm = await w.deps.repos.dataModels.create({
      id,
      tenantId,
      name: id,
      sites: [],
      marketplace: false,
      createdAt: now,
    });
    const report = await w.deps.search.ingest(dm, byModel.get(id)!.map(ingestItem));
    assert.equal(report.failed, 0, JSON.stringify(report.results));
  }
  const base = {
    tenantId,
    groundingDataModelIds: [dmNews, dmTech],
    private: false,
    marketplace: false,
    createdAt: now,
  };
  const textModel: AiModel = {
    ...base,
    id: newId("am", w.clock),
    name: "Newsroom",
    provider: { kind: "extractive" },
    output: { kind: "text" },
  };
  const structuredModel: AiModel = {
    ...base,
    id: newId("am", w.clock),
    name: "Newsroom JSON",
    provider: { kind: "extractive" },
    output: { kind: "structured", schema: STRUCTURED_SCHEMA },
  };
  const openaiModel: AiModel = {
    ...base,
    id: newId("am", w.clock),
    name: "Newsroom GPT",
    provider: { kind: "openai", model: "gpt-test" },
    output: { kind: "text" },
  };
  const openaiJsonModel: AiModel = {
    ...base,
    id: newId("am", w.clock),
    name: "Newsroom GPT JSON",
    provider: { kind: "openai", model: "gpt-test" },
    output: { kind: "structured", schema: STRUCTURED_SCHEMA },
  };
  for (const m of [textModel, structuredModel, openaiModel, openaiJsonModel]) await w.deps.repos.aiModels.create(m);
  const widgetId = newId("wd", w.clock);
  await w.deps.repos.widgets.create({
    id: widgetId,
    tenantId,
    name: "Ask AI",
    aiModelId: textModel.id,
    allowedOrigins: [],
    deploymentType: "embed",
    createdAt: now,
  });
  const sink = recordingSink();
  built.engine = createAnswerService({
    retrieve: (ids, query, options) => w.deps.search.retrieve(ids, query, options),
    providers: {
      extractive: new ExtractiveProvider(),
      openai: new OpenAiProvider({
        config: w.deps.config.openai,
        fetch: w.deps.fetch,
        log: w.log,
        clock: w.clock,
        sleep: () => Promise.resolve(),
      }),
    },
    clock: w.clock,
    log: w.log,
    events: () => realEvents ? w.deps.events : sink,
    links: w.deps.links,
  });
  const app = w.app;
  const ask = (id: string, body: unknown, headers: Record<string, string> = {}, k = key) =>
    app.request(`/app/aimodel/${id}`, {
      method: "POST",
      headers: { ...bearer(k), "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const close = async () => {
    await w.close();
    await chat?.close();
  };
  return {
    w,
    app,
    key,
    tenantId,
    textModel,
    structuredModel,
    openaiModel,
    openaiJsonModel,
    widgetId,
    sink,
    chat,
    ask,
    [Symbol.asyncDispose]: close,
  };
}

/** The events of an SSE body: `{event, data}` with data parsed as JSON. */
function parseSse(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.split("\n\n").filter((b) => b.trim()).map((block) => {
    const lines = block.split("\n");
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
    const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    return { event, data: JSON.parse(data) };
  });
}

Deno.test("POST /app/aimodel/{id} answers {message, citations} from the model's grounding articles", async () => {
  await using t = await answerWorld();
  const res = await t.ask(t.textModel.id, { query: "How much will a bus ride cost?" });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["message", "citations"]);
  assert.equal(body.citations.length, 1);
  assert.equal(body.citations[0].url, "https://metrowire.example/news/ar_transit");
  assert.equal(body.citations[0].site, "Metro Wire");
  assert.deepEqual(Object.keys(body.citations[0]).sort(), ["pubdate", "site", "source_url", "title", "url"]);
  assert.match(body.citations[0].source_url, /^http:\/\/svc\.test\/r\//);
  assert.match(body.message, /^According to Metro Wire \(19 Nov 2026\), a single ride will cost 2\.75 dollars\. \[1\]/);
  assert.match(body.message, /Sources:\n\[1\] .*https:\/\/metrowire\.example\/news\/ar_transit$/);
});

Deno.test("POST /app/aimodel/{id} says plainly when nothing relevant was found", async () => {
  await using t = await answerWorld();
  const res = await t.ask(t.textModel.id, { query: "Who won the football match?" });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {
    message: "I could not find anything in the available articles that answers this question.",
    citations: [],
  });
});

Deno.test("POST /app/aimodel/{id} records the exchange as an Ask AI interaction", async (s) => {
  await using t = await answerWorld();
  await s.step("widget and session from headers, interaction type from the body", async () => {
    const res = await t.ask(
      t.textModel.id,
      { query: "bus fares", interaction_type: "search" },
      { "x-widget-id": t.widgetId, "x-session-id": "sess-42", referer: "https://dailyledger.example/a?b=1" },
    );
    assert.equal(res.status, 200);
    const { message } = await res.json();
    const e = t.sink.events.at(-1)!;
    assert.deepEqual(e, {
      event_type: "query",
      ts: "2026-11-22T12:00:00.000Z",
      tenant_id: t.tenantId,
      ai_agent: t.textModel.id,
      interaction_type: "search",
      prompt: "bus fares",
      response: message,
      widget_id: t.widgetId,
      session_id: "sess-42",
      deployment_type: "embed",
      referring_url: "https://dailyledger.example/a?b=1",
    });
  });
  await s.step("body fields, default interaction type free_form", async () => {
    await t.ask(t.textModel.id, { query: "snow this weekend", widget_id: t.widgetId, session_id: "s2" });
    const e = t.sink.events.at(-1)!;
    assert.equal(e.interaction_type, "free_form");
    assert.equal(e.widget_id, t.widgetId);
    assert.equal(e.session_id, "s2");
  });
  await s.step("rejected requests record nothing", async () => {
    const before = t.sink.events.length;
    await t.ask(t.textModel.id, { query: "" });
    assert.equal(t.sink.events.length, before);
  });
});

Deno.test("POST /app/aimodel/{id} checks the optional widget and session fields", async () => {
  await using t = await answerWorld();
  const other = await t.w.tenantWithKey("Other");
  const foreignWidget = newId("wd", t.w.clock);
  await t.w.deps.repos.widgets.create({
    id: foreignWidget,
    tenantId: other.tenantId,
    name: "theirs",
    aiModelId: t.textModel.id,
    allowedOrigins: [],
    deploymentType: "embed",
    createdAt: t.w.clock.now().toISOString(),
  });
  const cases: [Record<string, unknown>, Record<string, string>, string][] = [
    [{ widget_id: foreignWidget }, {}, "widget_id not found"],
    [{}, { "x-widget-id": "not-a-widget" }, "widget_id is not in the correct format"],
    [{ session_id: "has spaces" }, {}, "session_id is not in the correct format"],
    [{ interaction_type: "Free Form" }, {}, "interaction_type is not in the correct format"],
    [{ referring_url: "javascript:alert(1)" }, {}, "referring_url must be an absolute http(s) URL"],
  ];
  for (const [extra, headers, message] of cases) {
    const res = await t.ask(t.textModel.id, { query: "bus fares", ...extra }, headers);
    assert.equal(res.status, 422, message);
    assert.deepEqual(await res.json(), { message });
  }
  assert.equal(t.sink.events.length, 0);
});

Deno.test("POST /app/aimodel/{id} refuses a bad id format with 422, an unknown or foreign model with 404", async () => {
  await using t = await answerWorld();
  for (const id of ["dm_01jd3k6q8s4m0v2x9c7b5n1r3t", "am_", "am_has-dash", "12345"]) {
    const res = await t.ask(id, { query: "bus fares" });
    assert.equal(res.status, 422, id);
    assert.deepEqual(await res.json(), {
      message: "ai_model_id is not in the correct format: expected am_ followed by letters and digits",
    });
  }
  const unknown = newId("am", t.w.clock);
  const res = await t.ask(unknown, { query: "bus fares" });
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { message: "AI model not found" });

  const other = await t.w.tenantWithKey("Other Media");
  const foreign = await t.ask(t.textModel.id, { query: "bus fares" }, {}, other.key);
  assert.equal(foreign.status, 404);
  assert.deepEqual(await foreign.json(), { message: "AI model not found" });
});

Deno.test("POST /app/aimodel/{id} refuses empty, missing, mistyped and overlong queries with 422", async () => {
  await using t = await answerWorld();
  const cases: [unknown, string][] = [
    [{ query: "" }, "query cannot be empty"],
    [{ query: "   \n " }, "query cannot be empty"],
    [{}, "query is required"],
    [{ query: 42 }, "query: must be a string"],
    [{ query: "x".repeat(2001) }, "query is too long: the limit is 2000 characters"],
  ];
  for (const [body, message] of cases) {
    const res = await t.ask(t.textModel.id, body);
    assert.equal(res.status, 422, message);
    assert.deepEqual(await res.json(), { message });
  }
});

Deno.test("POST /app/aimodel/{id} answers 401/403 for bad keys and the body errors of the family", async () => {
  await using t = await answerWorld();
  const noKey = await t.app.request(`/app/aimodel/${t.textModel.id}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"query":"x"}',
  });
  assert.equal(noKey.status, 401);
  assert.ok(typeof (await noKey.json()).message === "string");
  const badKey = await t.ask(t.textModel.id, { query: "x" }, {}, "ak_" + "x".repeat(40));
  assert.equal(badKey.status, 403);
  const notJson = await t.ask(t.textModel.id, "{query:", {});
  assert.equal(notJson.status, 400);
  const wrongType = await t.ask(t.textModel.id, "query=x", { "content-type": "text/plain" });
  assert.equal(wrongType.status, 415);
});

Deno.test("POST /app/aimodel/{id} returns a structured model's payload as JSON text in {message}", async () => {
  await using t = await answerWorld();
  const res = await t.ask(t.structuredModel.id, { query: "Tell me about the new AI chip" });
  assert.equal(res.status, 200);
  const payload = JSON.parse((await res.json()).message);
  assert.equal(payload.found, true);
  assert.match(payload.answer, /Berlin startup unveiled a chip/);
  assert.deepEqual(payload.sources, [{
    title: "Startup unveils low-power AI chip",
    url: "https://circuitreview.example/news/ar_chip",
  }]);
  assert.equal(t.sink.events.at(-1)!.response, JSON.stringify(payload));
});

Deno.test("POST /app/aimodel/{id} streams server-sent events with Accept: text/event-stream", async () => {
  await using t = await answerWorld();
  const plain = await (await t.ask(t.textModel.id, { query: "Tell me about the new AI chip" })).json();
  const whole = plain.message;
  const res = await t.ask(t.textModel.id, { query: "Tell me about the new AI chip" }, { accept: "text/event-stream" });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
  const events = parseSse(await res.text());
  const deltas = events.filter((e) => e.event === "message").map((e) => e.data.delta as string);
  assert.ok(deltas.length >= 3, "sentence by sentence");
  assert.equal(deltas.join(""), whole);
  const done = events.at(-1)! as { event: string; data: { message: string; citations: { url: string }[] } };
  assert.equal(done.event, "done");
  assert.equal(done.data.message, whole);
  assert.deepEqual(
    done.data.citations.map((c: { url: string }) => c.url),
    plain.citations.map((c: { url: string }) => c.url),
  );
  assert.ok(done.data.citations.length >= 1);
  assert.equal(t.sink.events.length, 2, "the streamed answer is recorded too");
  assert.equal(t.sink.events[1]!.response, whole);
});

Deno.test("POST /app/aimodel/{id} answers through an OpenAI-compatible provider", async () => {
  // The scripted reply cites the article the prompt numbers [2], whichever the search ranked there.
  await using t = await answerWorld([(req) => {
    const prompt = (req.body.messages as { content: string }[])[1]!.content;
    const second = prompt.match(/^\[2\] (.+)$/m)![1];
    return chatReply(`Per "${second}" [2].`)(req, new AbortController().signal);
  }]);
  const res = await t.ask(t.openaiModel.id, { query: "bus fares" });
  assert.equal(res.status, 200);
  const { message } = await res.json();
  const [, title] = message.match(/^Per "(.+)" \[2\]\.\n\nSources:\n/)!;
  assert.match(message, new RegExp(`\\n\\[2\\] [^\\n]+: ${title} — https://[a-z]+\\.example/news/ar_[a-z_]+$`));
  const prompt = (t.chat!.requests[0]!.body.messages as { content: string }[])[1]!.content;
  assert.match(prompt, /Bus fares to rise in January/, "the grounding came from the ingested articles");
  assert.equal(t.chat!.requests[0]!.headers.get("authorization"), "Bearer sk-route-test");
});

Deno.test("POST /app/aimodel/{id} maps provider failure to 502 and a timeout to 504 {message}", async () => {
  {
    await using t = await answerWorld([failReply(500), failReply(500), failReply(500)]);
    const res = await t.ask(t.openaiModel.id, { query: "bus fares" });
    assert.equal(res.status, 502);
    assert.deepEqual(await res.json(), { message: "AI provider failed: HTTP 500 after 3 attempts" });
    assert.equal(t.sink.events.length, 0);
    assert.ok(!JSON.stringify(t.w.log.lines).includes("sk-route-test"));
  }
  {
    await using t = await answerWorld([hangReply()]);
    const res = await t.ask(t.openaiModel.id, { query: "bus fares" });
    assert.equal(res.status, 504);
    assert.deepEqual(await res.json(), { message: "AI provider did not answer within 200 ms" });
  }
});

Deno.test("POST /app/aimodel/{id} streams an OpenAI-compatible answer; failures before the stream keep their status", async () => {
  {
    await using t = await answerWorld([sseReply(["Fares ", "rise [1]."])]);
    const res = await t.ask(t.openaiModel.id, { query: "bus fares" }, { accept: "text/event-stream" });
    const events = parseSse(await res.text());
    assert.deepEqual(events.slice(0, 2).map((e) => e.data.delta), ["Fares ", "rise [1]."]);
    assert.equal(events.at(-1)!.event, "done");
    assert.match(events.at(-1)!.data.message as string, /^Fares rise \[1\]\.\n\nSources:/);
  }
  {
    await using t = await answerWorld([failReply(400)]);
    const res = await t.ask(t.openaiModel.id, { query: "bus fares" }, { accept: "text/event-stream" });
    assert.equal(res.status, 502);
    assert.deepEqual(await res.json(), { message: "AI provider rejected the request: HTTP 400" });
  }
  {
    await using t = await answerWorld([
      sseReply(["Fares "], { raw: ['data: {"error":{"message":"overloaded"}}\n\n'] }),
    ]);
    const res = await t.ask(t.openaiModel.id, { query: "bus fares" }, { accept: "text/event-stream" });
    assert.equal(res.status, 200);
    const events = parseSse(await res.text());
    assert.deepEqual(events.at(-1), { event: "error", data: { message: "AI provider failed while streaming" } });
    assert.equal(t.sink.events.length, 0, "an unfinished answer is not recorded");
  }
});

Deno.test("POST /app/aimodel/{id} is in the OpenAPI document", async () => {
  await using t = await answerWorld();
  const doc = await (await t.app.request("/openapi.json")).json();
  const op = doc.paths["/app/aimodel/{ai_model_id}"].post;
  assert.ok(op.requestBody.required);
  assert.ok(op.responses["200"].content["text/event-stream"]);
  assert.ok(op.responses["504"]);
});

Deno.test("POST /app/aimodel/{id}: the answered query shows in GET /v1/analytics/ask-ai/logs", async () => {
  await using t = await answerWorld(undefined, { realEvents: true });
  const res = await t.ask(t.textModel.id, { query: "bus fares", session_id: "sess-9" }, {
    "x-widget-id": t.widgetId,
    referer: "https://dailyledger.example/transit",
  });
  assert.equal(res.status, 200);
  const { message } = await res.json();
  await t.w.deps.events.flush();
  const logs = await (await t.app.request(`/v1/analytics/ask-ai/logs?widget_id=${t.widgetId}`, {
    headers: bearer(t.key),
  })).json();
  assert.equal(logs.count, 1);
  assert.deepEqual(logs.data[0], {
    timestamp: "2026-11-22T12:00:00.000Z",
    widget_id: t.widgetId,
    placement_id: "",
    deployment_type: "embed",
    ai_agent: t.textModel.id,
    referring_url: "https://dailyledger.example/transit",
    interaction_type: "free_form",
    prompt: "bus fares",
    response: message,
  });
});

Deno.test("POST /app/aimodel/{id} over real HTTP relays each provider chunk before the provider has finished", async () => {
  const enc = new TextEncoder();
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const chunk = (d: string) => enc.encode(`data: ${JSON.stringify({ choices: [{ delta: { content: d } }] })}\n\n`);
  // The provider sends one chunk, then holds the rest until the test has seen that chunk arrive.
  const slowStream: Reply = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(chunk("Fares rise "));
          await released;
          controller.enqueue(chunk("[1]."));
          controller.enqueue(enc.encode("data: [DONE]\n\n"));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  await using t = await answerWorld([slowStream]);
  const server = startServer(t.app.fetch);
  try {
    const res = await fetch(`${server.url}/app/aimodel/${t.openaiModel.id}`, {
      method: "POST",
      headers: { ...bearer(t.key), "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query: "bus fares" }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("\n\n")) seen += (await reader.read()).value ?? "";
    assert.equal(seen, `data: ${JSON.stringify({ delta: "Fares rise " })}\n\n`);
    release();
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += value;
    }
    const events = parseSse(seen);
    assert.equal(events.at(-1)!.event, "done");
    assert.match(events.at(-1)!.data.message as string, /^Fares rise \[1\]\.\n\nSources:\n\[1\] /);
  } finally {
    release();
    await server.shutdown();
  }
});

Deno.test("POST /app/aimodel/{id}: an OpenAI structured model answers checked JSON text, or 502 naming the mismatch", async () => {
  const valid = {
    answer: "Fares rise by 25 cents [1].",
    found: true,
    sources: [{ url: "https://metrowire.example/x" }],
  };
  {
    await using t = await answerWorld([chatReply('{"answer":"","found":"yes"}'), chatReply(JSON.stringify(valid))]);
    const res = await t.ask(t.openaiJsonModel.id, { query: "bus fares" });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse((await res.json()).message), valid);
    assert.equal(t.chat!.requests.length, 2, "one repair round");
  }
  {
    await using t = await answerWorld([chatReply('{"answer":"x"}'), chatReply('{"answer":"x","found":true}')]);
    const res = await t.ask(t.openaiJsonModel.id, { query: "bus fares" });
    assert.equal(res.status, 502);
    assert.deepEqual(await res.json(), {
      message: "model output did not match the schema: sources is required",
    });
    assert.equal(t.sink.events.length, 0);
  }
});
