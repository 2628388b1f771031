import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import type { OpenAiConfig } from "../../core/config.ts";
import { AppError } from "../../core/errors.ts";
import { memoryLogger } from "../../core/log.ts";
import { OpenAiProvider } from "../../core/answer/openai.ts";
import { compileSchema } from "../../core/answer/schema.ts";
import type { GroundedRequest } from "../../core/answer/provider.ts";
import type { AiModel } from "../../core/store/models.ts";
import { arrayRetriever, fixtureArticles, NOW } from "./_articles.ts";
import { chatReply, failReply, hangReply, type Reply, sseReply, startChatServer } from "./_chat_server.ts";
import { httpStatus } from "../../routes/error_status.ts";

const API_KEY = "sk-test-7f3c9a1e5b2d4c6e8a0b";
const articles = fixtureArticles("dm_news", "dm_tech");
const model: AiModel = {
  id: "am_openai",
  tenantId: "tn_test",
  name: "Ledger Assistant",
  groundingDataModelIds: ["dm_news"],
  provider: { kind: "openai", model: "gpt-test-mini", temperature: 0.1 },
  output: { kind: "text" },
  private: false,
  marketplace: false,
  createdAt: NOW.toISOString(),
};

async function request(query = "bus fares", m: AiModel = model): Promise<GroundedRequest> {
  return { model: m, query, passages: await arrayRetriever(articles)(["dm_news"], query, { k: 3 }), now: NOW };
}

/** A provider against `baseUrl` whose waits are recorded instead of slept. */
function provider(baseUrl: string, config: Partial<OpenAiConfig> = {}) {
  const sleeps: number[] = [];
  const log = memoryLogger();
  const p = new OpenAiProvider({
    config: { apiKey: API_KEY, baseUrl, timeoutMs: 5_000, maxRetries: 2, ...config },
    fetch: globalThis.fetch,
    log,
    clock: new FixedClock(NOW),
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    random: () => 0.5,
  });
  return { p, sleeps, log };
}

async function rejectsWith(promise: Promise<unknown>, status: number, message: string | RegExp) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AppError, String(err));
    assert.equal(httpStatus(err), status);
    if (typeof message === "string") assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

const noKeyIn = (log: { lines: unknown[] }) => assert.ok(!JSON.stringify(log.lines).includes(API_KEY), "key logged");

Deno.test("OpenAiProvider.text() sends a grounded prompt and appends the sources the reply cites", async () => {
  await using server = startChatServer([chatReply("Bus fares rise by 25 cents in January [1].")]);
  const { p, log } = provider(server.baseUrl);
  const text = await p.text(await request());
  assert.equal(
    text,
    "Bus fares rise by 25 cents in January [1].\n\nSources:\n" +
      "[1] Metro Wire (19 Nov 2026): Bus fares to rise in January — https://metrowire.example/news/ar_transit",
  );
  const seen = server.requests[0]!;
  assert.equal(seen.headers.get("authorization"), `Bearer ${API_KEY}`);
  assert.equal(seen.body.model, "gpt-test-mini");
  assert.equal(seen.body.temperature, 0.1);
  const messages = seen.body.messages as { role: string; content: string }[];
  assert.equal(messages[0]!.role, "system");
  assert.match(messages[0]!.content, /only the numbered articles/);
  assert.match(messages[1]!.content, /\[1\] Bus fares to rise in January\nSite: Metro Wire \| Published: 19 Nov 2026/);
  assert.match(messages[1]!.content, /Question: bus fares$/);
  noKeyIn(log);
});

Deno.test("OpenAiProvider retries a 429 after its Retry-After, then succeeds", async () => {
  await using server = startChatServer([failReply(429, { "retry-after": "2" }), chatReply("Fares rise [1].")]);
  const { p, sleeps } = provider(server.baseUrl);
  assert.match(await p.text(await request()), /^Fares rise \[1\]\./);
  assert.deepEqual(sleeps, [2_000]);
  assert.equal(server.requests.length, 2);
});

Deno.test("OpenAiProvider backs off exponentially with jitter on 5xx", async () => {
  await using server = startChatServer([failReply(503), failReply(502), chatReply("Fares rise [1].")]);
  const { p, sleeps } = provider(server.baseUrl);
  await p.text(await request());
  // 500 ms then 1000 ms steps, half fixed and half jitter (random = 0.5).
  assert.deepEqual(sleeps, [375, 750]);
});

Deno.test("OpenAiProvider gives a 502 after the retries of a 500 run out, without logging the key", async () => {
  await using server = startChatServer([
    failReply(500, {}, `{"error":"bad key ${API_KEY}"}`),
    failReply(500),
    failReply(500),
  ]);
  const { p, log } = provider(server.baseUrl);
  await rejectsWith(p.text(await request()), 502, "AI provider failed: HTTP 500 after 3 attempts");
  assert.equal(server.requests.length, 3);
  assert.equal(log.lines.filter((l) => l.msg === "ai provider attempt failed").length, 3);
  noKeyIn(log);
});

Deno.test("OpenAiProvider does not retry a 4xx and says the provider rejected the request", async () => {
  await using server = startChatServer([failReply(401, {}, `{"error":{"message":"Incorrect API key ${API_KEY}"}}`)]);
  const { p, log } = provider(server.baseUrl);
  const err = await p.text(await request()).catch((e) => e);
  assert.ok(err instanceof AppError);
  assert.equal(httpStatus(err), 502);
  assert.equal(err.message, "AI provider rejected the request: HTTP 401");
  assert.ok(!String((err.cause as Error).message).includes(API_KEY), "key scrubbed from the logged cause");
  assert.equal(server.requests.length, 1);
  noKeyIn(log);
});

Deno.test("OpenAiProvider gives up at once when Retry-After is longer than it will wait", async () => {
  await using server = startChatServer([failReply(429, { "retry-after": "120" })]);
  const { p, sleeps } = provider(server.baseUrl);
  const err = await p.text(await request()).catch((e) => e);
  assert.equal(httpStatus(err), 502);
  assert.equal(err.message, "AI provider is rate limiting: retry after 120 s");
  assert.equal(err.headers["retry-after"], "120");
  assert.deepEqual(sleeps, []);
});

Deno.test("OpenAiProvider answers 504 when the provider does not answer within the timeout", async () => {
  await using server = startChatServer([hangReply(), chatReply("too late")]);
  const { p } = provider(server.baseUrl, { timeoutMs: 150 });
  await rejectsWith(p.text(await request()), 504, "AI provider did not answer within 150 ms");
  assert.equal(server.requests.length, 1, "a timeout is not retried: the caller is waiting");
});

Deno.test("OpenAiProvider answers 502 on a malformed reply", async (t) => {
  const cases: [string, Reply, string][] = [
    ["body not JSON", () => new Response("<html>oops", { status: 200 }), "the body is not JSON"],
    ["no choices", () => Response.json({ object: "chat.completion" }), "choices[0].message.content is missing"],
    ["empty content", chatReply("   "), "the reply was empty"],
  ];
  for (const [name, reply, why] of cases) {
    await t.step(name, async () => {
      await using server = startChatServer([reply]);
      const { p } = provider(server.baseUrl);
      await rejectsWith(p.text(await request()), 502, `AI provider returned a malformed response: ${why}`);
    });
  }
});

Deno.test("OpenAiProvider answers 502 when the provider cannot be reached", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { p, sleeps } = provider(`http://127.0.0.1:${port}/v1`, { maxRetries: 1 });
  await rejectsWith(p.text(await request()), 502, "AI provider could not be reached after 2 attempts");
  assert.equal(sleeps.length, 1);
});

Deno.test("OpenAiProvider uses a model's own baseUrl over the configured one", async () => {
  await using server = startChatServer([chatReply("From the model's server [1].")]);
  const { p } = provider("http://127.0.0.1:9/v1", { maxRetries: 0 });
  const m: AiModel = { ...model, provider: { kind: "openai", model: "llama3", baseUrl: server.baseUrl } };
  assert.match(await p.text(await request("bus fares", m)), /^From the model's server/);
  assert.equal(server.requests[0]!.body.model, "llama3");
});

Deno.test("OpenAiProvider sends OPENAI_API_KEY only to the configured server, never to a model's own baseUrl elsewhere", async () => {
  // The key is a credential for OPENAI_BASE_URL's server; a model served elsewhere (an Ollama box, a
  // tenant's own endpoint) got it in its Authorization header with every question.
  await using configured = startChatServer([chatReply("From the configured server [1].")]);
  await using elsewhere = startChatServer([chatReply("From the model's server [1].")]);
  const { p } = provider(configured.baseUrl, { maxRetries: 0 });
  const own = (baseUrl: string): AiModel => ({ ...model, provider: { kind: "openai", model: "llama3", baseUrl } });
  await p.text(await request("bus fares", own(elsewhere.baseUrl)));
  assert.equal(elsewhere.requests[0]!.headers.get("authorization"), null);
  // The configured server, named by the model too, still gets it.
  await p.text(await request("bus fares", own(`${configured.baseUrl}/`)));
  assert.equal(configured.requests[0]!.headers.get("authorization"), `Bearer ${API_KEY}`);
});

Deno.test("OpenAiProvider.text() answers plainly without a call when there are no passages", async () => {
  await using server = startChatServer([]);
  const { p } = provider(server.baseUrl);
  const text = await p.text({ model, query: "anything", passages: [], now: NOW });
  assert.match(text, /could not find anything/);
  assert.equal(server.requests.length, 0);
});

const schema = {
  type: "object",
  properties: {
    answer: { type: "string", minLength: 1 },
    sources: { type: "array", items: { type: "string" }, minItems: 1 },
  },
  required: ["answer", "sources"],
  additionalProperties: false,
};

Deno.test("OpenAiProvider.structured() asks for JSON by schema and returns the valid payload", async () => {
  await using server = startChatServer([
    chatReply(
      '```json\n{"answer":"Fares rise by 25 cents.","sources":["https://metrowire.example/news/ar_transit"]}\n```',
    ),
  ]);
  const { p } = provider(server.baseUrl);
  const payload = await p.structured(await request(), schema, compileSchema(schema));
  assert.deepEqual(payload, {
    answer: "Fares rise by 25 cents.",
    sources: ["https://metrowire.example/news/ar_transit"],
  });
  const sent = server.requests[0]!.body;
  assert.deepEqual(sent.response_format, {
    type: "json_schema",
    json_schema: { name: "answer", schema, strict: false },
  });
});

Deno.test("OpenAiProvider.structured() repairs schema-invalid output in one more round", async () => {
  await using server = startChatServer([
    chatReply('{"answer":"Fares rise.","sources":[],"mood":"calm"}'),
    chatReply('{"answer":"Fares rise.","sources":["https://metrowire.example/news/ar_transit"]}'),
  ]);
  const { p } = provider(server.baseUrl);
  const payload = await p.structured(await request(), schema, compileSchema(schema));
  assert.deepEqual(payload, { answer: "Fares rise.", sources: ["https://metrowire.example/news/ar_transit"] });
  const repair = (server.requests[1]!.body.messages as { role: string; content: string }[]).slice(-2);
  assert.equal(repair[0]!.role, "assistant");
  assert.match(repair[1]!.content, /did not match the JSON schema: sources: Too small.*Unrecognized key: "mood"/);
});

Deno.test("OpenAiProvider.structured(): a key the model made up goes to its repair turn, never to the public message", async () => {
  const reply = chatReply('{"answer":"Fares rise.","sources":["a"],"LEAK-7f3a<script>":1}');
  await using server = startChatServer([reply, reply]);
  const { p } = provider(server.baseUrl);
  await rejectsWith(
    p.structured(await request(), schema, compileSchema(schema)),
    502,
    "model output did not match the schema: (root): has a field it does not take",
  );
  const repair = (server.requests[1]!.body.messages as { content: string }[]).at(-1)!.content;
  assert.match(repair, /Unrecognized key: "LEAK-7f3a<script>"/, "the model is told which key to drop");
});

Deno.test("OpenAiProvider.structured() fails clearly when the repair is still invalid", async () => {
  await using server = startChatServer([chatReply("Sure! Fares rise."), chatReply('{"answer":""}')]);
  const { p } = provider(server.baseUrl);
  await rejectsWith(
    p.structured(await request(), schema, compileSchema(schema)),
    502,
    // Our words in the public message; zod's own sentences went only to the model's repair turn.
    /^model output did not match the schema: answer: must not be empty; sources is required$/,
  );
  assert.match(
    (server.requests[1]!.body.messages as { content: string }[]).at(-1)!.content,
    /the reply is not valid JSON/,
  );
});

Deno.test("OpenAiProvider.streamText() relays SSE deltas, then the cited sources", async () => {
  await using server = startChatServer([sseReply(["Fares ", "rise by 25 cents", " [1]."])]);
  const { p } = provider(server.baseUrl);
  const chunks: string[] = [];
  for await (const c of p.streamText(await request())) chunks.push(c);
  assert.deepEqual(chunks.slice(0, 3), ["Fares ", "rise by 25 cents", " [1]."]);
  assert.match(chunks[3]!, /^\n\nSources:\n\[1\] Metro Wire/);
  assert.equal(server.requests[0]!.body.stream, true);
});

Deno.test("OpenAiProvider.streamText() reads CRLF events, comments, multi-line data and a last event without [DONE]", async () => {
  const event = (content: string) => JSON.stringify({ choices: [{ index: 0, delta: { content } }] });
  const raw = [
    ": keep-alive comment\r\n\r\n",
    `data: ${event("Fares ")}\r\n\r\n`,
    // One JSON document split over two data lines (joined with a newline, still valid JSON).
    `data: {"choices": [{"index": 0,\ndata: "delta": {"content": "rise by 25 cents"}}]}\n\n`,
    // The server ends the stream without [DONE] and without the blank line after the last event.
    `data: ${event(" [1].")}`,
  ];
  await using server = startChatServer([sseReply([], { raw, done: false })]);
  const { p } = provider(server.baseUrl);
  const chunks: string[] = [];
  for await (const c of p.streamText(await request())) chunks.push(c);
  assert.deepEqual(chunks.slice(0, 3), ["Fares ", "rise by 25 cents", " [1]."]);
  assert.match(chunks[3]!, /^\n\nSources:/);
});

Deno.test("OpenAiProvider.streamText() retries before the first byte and fails on a malformed event", async () => {
  await using server = startChatServer([failReply(503), sseReply(["Fares "], { raw: ["data: {not json\n\n"] })]);
  const { p, sleeps } = provider(server.baseUrl);
  const chunks: string[] = [];
  await rejectsWith(
    (async () => {
      for await (const c of p.streamText(await request())) chunks.push(c);
    })(),
    502,
    "AI provider returned a malformed response: a stream event is not JSON",
  );
  assert.deepEqual(chunks, ["Fares "]);
  assert.equal(sleeps.length, 1);
});
