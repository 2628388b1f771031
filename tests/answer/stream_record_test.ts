/**
 * A question answered as server-sent events is one Ask AI interaction, recorded once, whether the
 * reader reads it to the end or leaves mid-answer (then with the answer as far as it went, even if
 * the provider fails after); a provider failing while the reader is there is an error, recorded as
 * the 502 of a non-streamed answer is: not at all. The widget's route leaves the answers its reader
 * read to `done` to the widget (which sends their `query` event) and records the ones left itself.
 */
import assert from "node:assert/strict";
import type { EventInput } from "../../core/events.ts";
import { newId } from "../../core/ids.ts";
import { startServer } from "../../routes/server.ts";
import { bearer, within } from "../_helpers.ts";
import { chatReply, failReply, heldSseReply, type Reply, sseReply, startChatServer } from "./_chat_server.ts";
import { ORIGIN, sseEvents, widgetWorld } from "../widget/_world.ts";

/**
 * A provider stream that sends its first piece, then the rest once released (the test releases it
 * after the reader left, and the server saw it leave).
 */
const heldStream = ({ fail = false } = {}) => heldSseReply(["Bus fares rise "], ["by 25 cents."], { fail });

/** A provider stream that fails after its first piece. */
const brokenStream = sseReply(["Bus fares rise "], {
  raw: [`data: ${JSON.stringify({ error: { message: "overloaded" } })}\n\n`],
  done: false,
});

async function world(replies: Reply[]) {
  const chat = startChatServer(replies);
  const w = await widgetWorld({ env: { OPENAI_BASE_URL: chat.baseUrl, OPENAI_API_KEY: "sk-stream-test" } });
  const a = await w.tenant("Acme");
  await w.deps.repos.aiModels.update({ ...a.model, provider: { kind: "openai", model: "gpt-test" } });
  // Every query event the service records, as it hands it to the event log.
  const queries: EventInput[] = [];
  const all: EventInput[] = [];
  let told!: () => void;
  const recorded = new Promise<void>((r) => told = r);
  const record = w.deps.events.record.bind(w.deps.events);
  w.deps.events.record = async (events) => {
    all.push(...events);
    const q = events.filter((e) => e.event_type === "query");
    queries.push(...q);
    if (q.length) told();
    return await record(events);
  };
  const server = startServer(w.app.fetch);
  return Object.assign(w, {
    a,
    chat,
    queries,
    all,
    recorded,
    server,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await chat.close();
      await w.close();
    },
  });
}

/** Lets the server see what just happened on the wire (a closed connection, a last write). */
const settle = () => new Promise((r) => setTimeout(r, 150));

/** Reads a stream's first event, then leaves (closes the connection); the provider goes on after. */
async function readFirstEventAndLeave(res: Response, release: () => void): Promise<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("\n\n")) seen += (await reader.read()).value ?? "";
  await reader.cancel();
  await settle();
  release();
  return seen;
}

const askModel = (w: Awaited<ReturnType<typeof world>>) =>
  fetch(`${w.server.url}/app/aimodel/${w.a.model.id}`, {
    method: "POST",
    headers: { ...bearer(w.a.key), "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-1" }),
  });

const askWidget = (w: Awaited<ReturnType<typeof world>>) =>
  fetch(`${w.server.url}/widget/v1/${w.a.widget.id}/ask`, {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-1" }),
  });

Deno.test("POST /app/aimodel/{id} SSE: a reader who leaves mid-answer is one query event, with the answer so far", async () => {
  const held = heldStream();
  await using w = await world([held.reply]);
  const res = await askModel(w);
  assert.equal(res.status, 200);
  assert.match(await readFirstEventAndLeave(res, held.release), /Bus fares rise/);
  await within(w.recorded, 5_000, "the query event of the answer the reader left");
  await settle();
  assert.equal(w.queries.length, 1);
  assert.equal(w.queries[0]!.prompt, "Why are bus fares rising?");
  // As far as the answer went when the service stopped it.
  assert.match(w.queries[0]!.response ?? "", /^Bus fares rise /);
  assert.equal(w.queries[0]!.ai_agent, w.a.model.id);
});

Deno.test("POST /app/aimodel/{id} SSE: a provider failing mid-answer to a reader still there is an error, not a query", async () => {
  await using w = await world([brokenStream]);
  const res = await askModel(w);
  assert.equal(res.status, 200);
  const events = sseEvents(await res.text());
  assert.deepEqual(events.map((e) => e.event), ["message", "error"]);
  await settle();
  assert.equal(w.queries.length, 0, "as the 502 of a non-streamed answer");
});

for (
  const [name, ask] of [
    ["POST /app/aimodel/{id} SSE: a reader who left, then the provider failed, is one query event", askModel],
    ["POST /widget/v1/{wd}/ask SSE: a reader who left, then the provider failed, is recorded once", askWidget],
  ] as const
) {
  Deno.test(name, async () => {
    const held = heldStream({ fail: true });
    await using w = await world([held.reply]);
    const res = await ask(w);
    await readFirstEventAndLeave(res, held.release);
    await within(w.recorded, 5_000, "the query event of the answer the reader left");
    await settle();
    assert.equal(w.queries.length, 1);
    assert.equal(w.queries[0]!.response, "Bus fares rise ");
  });
}

Deno.test("POST /app/aimodel/{id} SSE: an answer read to the end is one query event", async () => {
  await using w = await world([sseReply(["Bus fares rise ", "by 25 cents."])]);
  const res = await askModel(w);
  const events = sseEvents(await res.text());
  assert.equal(events.at(-1)!.event, "done");
  await settle();
  assert.equal(w.queries.length, 1);
  assert.equal(w.queries[0]!.response, "Bus fares rise by 25 cents.");
});

Deno.test("POST /widget/v1/{wd}/ask SSE: a reader who leaves mid-answer is recorded once by the service", async () => {
  const held = heldStream();
  await using w = await world([held.reply]);
  const res = await askWidget(w);
  assert.equal(res.status, 200);
  assert.match(await readFirstEventAndLeave(res, held.release), /event: token/);
  await within(w.recorded, 5_000, "the query event of the answer the reader left");
  await settle();
  assert.equal(w.queries.length, 1);
  const q = w.queries[0]!;
  assert.equal(q.prompt, "Why are bus fares rising?");
  assert.match(q.response ?? "", /^Bus fares rise /);
  assert.equal(q.widget_id, w.a.widget.id);
  assert.equal(q.session_id, "sess-1");
  assert.equal(q.interaction_type, "free_form");
  assert.match(q.client_key ?? "", /^[0-9a-f]{16}$/, "one network is one sender in trending");
  // It reached the log: it counts in the widget's figures.
  await w.deps.events.stop();
  const fig = await w.app.request(`/v1/analytics/ask-ai?widget_id=${w.a.widget.id}`, { headers: bearer(w.a.key) });
  assert.equal((await fig.json()).summary.engagement_queries, 1);
});

Deno.test("POST /widget/v1/{wd}/ask SSE: a provider failing mid-answer to a reader still there records none", async () => {
  await using w = await world([brokenStream]);
  const res = await askWidget(w);
  const events = sseEvents(await res.text());
  assert.deepEqual(events.map((e) => e.event), ["token", "error"]);
  await settle();
  assert.equal(w.queries.length, 0, "the widget drops a failed turn; the service records none either");
});

Deno.test("POST /widget/v1/{wd}/ask SSE: an answer read to `done` is the widget's to record (the service records none)", async () => {
  await using w = await world([sseReply(["Bus fares rise ", "by 25 cents."])]);
  const res = await askWidget(w);
  const events = sseEvents(await res.text());
  assert.equal(events.at(-1)!.event, "done");
  await settle();
  assert.equal(w.queries.length, 0);
});

/** A provider's whole (non-streamed) answer, sent once released. */
function heldReply(content: string): { reply: Reply; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  return {
    reply: async (req, signal) => {
      await released;
      return await chatReply(content)(req, signal);
    },
    release,
  };
}

/** Asks as JSON and leaves (aborts the fetch) while the provider is still answering; then it answers. */
async function askJsonAndLeave(
  w: Awaited<ReturnType<typeof world>>,
  url: string,
  init: RequestInit,
  release: () => void,
) {
  const leave = new AbortController();
  const before = w.chat.requests.length;
  const asked = fetch(url, { ...init, signal: leave.signal }).catch((err) => err);
  while (w.chat.requests.length === before) await new Promise((r) => setTimeout(r, 10));
  leave.abort();
  assert.equal((await asked as Error).name, "AbortError");
  await settle();
  release();
}

const widgetJson = (w: Awaited<ReturnType<typeof world>>): [string, RequestInit] => [
  `${w.server.url}/widget/v1/${w.a.widget.id}/ask`,
  {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json" },
    body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-1" }),
  },
];

Deno.test("POST /widget/v1/{wd}/ask JSON: a reader who leaves before the answer is recorded once by the service, as a stream left is", async () => {
  const held = heldReply("Bus fares rise by 25 cents.");
  await using w = await world([held.reply]);
  await askJsonAndLeave(w, ...widgetJson(w), held.release);
  await within(w.recorded, 5_000, "the query event of the answer the reader left");
  await settle();
  assert.equal(w.queries.length, 1);
  const q = w.queries[0]!;
  assert.equal(q.prompt, "Why are bus fares rising?");
  assert.match(q.response ?? "", /^Bus fares rise by 25 cents\./);
  assert.doesNotMatch(q.response ?? "", /Sources:/, "the text the widget shows, as it would have sent it");
  assert.equal(q.widget_id, w.a.widget.id);
  assert.equal(q.session_id, "sess-1");
  assert.equal(q.interaction_type, "free_form");
  assert.match(q.client_key ?? "", /^[0-9a-f]{16}$/);
  await w.deps.events.stop();
  const fig = await w.app.request(`/v1/analytics/ask-ai?widget_id=${w.a.widget.id}`, { headers: bearer(w.a.key) });
  const summary = (await fig.json()).summary;
  assert.equal(summary.engagement_queries, 1);
  assert.equal(summary.sessions, 1);
  const logs = await w.app.request(`/v1/analytics/ask-ai/logs?widget_id=${w.a.widget.id}`, {
    headers: bearer(w.a.key),
  });
  const rows = (await logs.json()).data;
  assert.equal(rows.length, 1);
  assert.equal(rows[0].prompt, "Why are bus fares rising?");
});

Deno.test("POST /widget/v1/{wd}/ask JSON: a reader who leaves once the answer was made, before its body reached them, is recorded once by the service", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  const [url, init] = widgetJson(w);
  const leave = new AbortController();
  const res = await w.app.request(new URL(url).pathname, { ...init, signal: leave.signal });
  assert.equal(res.status, 200);
  // The response is made; the reader leaves before reading its body.
  leave.abort();
  await res.body?.cancel();
  await within(w.recorded, 5_000, "the query event of the answer the reader never received");
  await settle();
  assert.equal(w.queries.length, 1);
  assert.match(w.queries[0]!.response ?? "", /^Bus fares rise by 25 cents\./);
});

Deno.test("POST /widget/v1/{wd}/ask JSON: an answer the reader received is the widget's to record (the service records none)", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  const res = await fetch(...widgetJson(w));
  assert.equal(res.status, 200);
  assert.match((await res.json()).answer, /^Bus fares rise/);
  await settle();
  assert.equal(w.queries.length, 0);
});

Deno.test("A stream its reader left is one query event of one shape on /app/aimodel and on the widget, stamped when asked", async () => {
  const shapes: Record<string, unknown>[] = [];
  for (const route of ["aimodel", "widget"] as const) {
    const held = heldStream();
    await using w = await world([held.reply]);
    const asked = w.clock.now().toISOString();
    const res = await fetch(
      route === "aimodel"
        ? `${w.server.url}/app/aimodel/${w.a.model.id}`
        : `${w.server.url}/widget/v1/${w.a.widget.id}/ask`,
      {
        method: "POST",
        headers: {
          ...(route === "aimodel" ? bearer(w.a.key) : { origin: ORIGIN }),
          "content-type": "application/json",
          accept: "text/event-stream",
        },
        body: JSON.stringify({
          query: "Why are bus fares rising?",
          session_id: "sess-1",
          ...(route === "aimodel" ? { widget_id: w.a.widget.id } : {}),
        }),
      },
    );
    assert.equal(res.status, 200);
    // The reader reads a while before leaving.
    const reading = readFirstEventAndLeave(res, held.release);
    w.clock.advance(40_000);
    await reading;
    await within(w.recorded, 5_000, `the ${route} query event of the answer the reader left`);
    await settle();
    assert.equal(w.queries.length, 1, route);
    // The widget's copy carries the id its own `query` event of the answer gets (recorded by both, stored once).
    const { client_key: _networkOfAPublicRoute, event_id: _sharedWithTheWidgetsOwn, ...q } = w.queries[0]!;
    assert.equal(q.ts, asked, `${route}: the question's time, as every answer's query event`);
    shapes.push({ ...q, tenant_id: "tn", ai_agent: "am", widget_id: "wd" });
  }
  assert.deepEqual(shapes[1], shapes[0]);
});

/** A provider stream that sends nothing until released, then the whole answer. */
const slowStartStream = () => heldSseReply([], ["Bus fares rise by 25 cents."]);

Deno.test("POST /widget/v1/{wd}/ask SSE: a reader who leaves before the first piece is recorded once by the service", async () => {
  const held = slowStartStream();
  await using w = await world([held.reply]);
  const [url, init] = widgetJson(w);
  await askJsonAndLeave(w, url, { ...init, headers: { ...init.headers, accept: "text/event-stream" } }, held.release);
  await within(w.recorded, 5_000, "the query event of the answer the reader left");
  await settle();
  assert.equal(w.queries.length, 1);
  assert.equal(w.queries[0]!.response, "Bus fares rise by 25 cents.");
  assert.equal(w.queries[0]!.widget_id, w.a.widget.id);
});

Deno.test("POST /app/aimodel/{id}: a turn its caller left before the answer is recorded but not kept in its conversation, streamed or not", async () => {
  const json = heldReply("The parks get more.");
  const sse = slowStartStream();
  await using w = await world([chatReply("The council passed the budget."), json.reply, sse.reply, chatReply("Yes.")]);
  const url = `${w.server.url}/app/aimodel/${w.a.model.id}`;
  const init = (body: unknown, accept = "application/json"): RequestInit => ({
    method: "POST",
    headers: { ...bearer(w.a.key), "content-type": "application/json", accept },
    body: JSON.stringify(body),
  });
  const started = await (await fetch(url, init({ query: "What did the council decide?", conversation: true }))).json();
  const id = started.conversation_id;
  await askJsonAndLeave(w, url, init({ query: "And the parks?", conversation_id: id }), json.release);
  await askJsonAndLeave(
    w,
    url,
    init({ query: "And the buses?", conversation_id: id }, "text/event-stream"),
    sse.release,
  );
  for (let i = 0; i < 100 && w.queries.length < 3; i++) await settle();
  assert.deepEqual(w.queries.map((q) => q.prompt ?? ""), [
    "What did the council decide?",
    "And the parks?",
    "And the buses?",
  ], "each question asked is recorded once");
  const next = await (await fetch(url, init({ query: "Is that so?", conversation_id: id, explain: true }))).json();
  assert.equal(next.explain.history_turns, 2, "the turns its caller never received are not its history");
});

Deno.test("POST /widget/v1/{wd}/ask: a sponsored prompt its reader left counts for its campaign and prompt, as the widget's own query does", async () => {
  const held = heldReply("Lisbon is lovely in spring.");
  await using w = await world([held.reply]);
  const r = w.deps.repos;
  const now = w.clock.now().toISOString();
  const campaign = await r.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: w.a.tenantId,
    name: "Spring travel",
    creativeIds: ["cr_1"],
    createdAt: now,
  });
  const prompt = await r.prompts.create({
    id: newId("pm", w.clock),
    tenantId: w.a.tenantId,
    campaignId: campaign.id,
    text: "Where should I travel this spring?",
    createdAt: now,
  });
  await r.widgets.update({ ...w.a.widget, campaignIds: [campaign.id] });
  w.clock.advance(10_000); // past the widget cache
  const [url, init] = widgetJson(w);
  const body = JSON.stringify({ query: prompt.text, session_id: "sess-1", interaction_type: "sponsored_prompt" });
  await askJsonAndLeave(w, url, { ...init, body }, held.release);
  await within(w.recorded, 5_000, "the query event of the answer the reader left");
  await settle();
  assert.equal(w.queries.length, 1);
  const q = w.queries[0]!;
  assert.equal(q.interaction_type, "sponsored_prompt");
  assert.deepEqual([q.campaign_id, q.prompt_id, q.prompt_text], [campaign.id, prompt.id, prompt.text]);
  await w.deps.events.stop();
  const res = await w.app.request(`/v1/analytics/sponsored-conversations?campaign_id=${campaign.id}`, {
    headers: bearer(w.a.key),
  });
  const sponsored = await res.json();
  assert.equal(sponsored.summary.queries, 1);
  assert.deepEqual(sponsored.prompt_breakdown.map((p: { prompt_text: string }) => p.prompt_text), [prompt.text]);
});

Deno.test("A JSON answer its caller left shows its citations to nobody: no result_impression, on the widget and /app/aimodel", async () => {
  const cites = "Bus fares rise by 25 cents [1].";
  for (const route of ["widget", "aimodel"] as const) {
    const held = heldReply(cites);
    // The widget's answer read also asks the provider for its follow-ups (refused here: extractive
    // ones); the one left asks none.
    const followUps = route === "widget" ? [failReply(400)] : [];
    await using w = await world([held.reply, chatReply(cites), ...followUps]);
    const [url, init] = route === "widget" ? widgetJson(w) : [`${w.server.url}/app/aimodel/${w.a.model.id}`, {
      method: "POST",
      headers: { ...bearer(w.a.key), "content-type": "application/json" },
      body: JSON.stringify({ query: "Why are bus fares rising?" }),
    }];
    // One answer left before it came back, then the same answer read.
    await askJsonAndLeave(w, url, init, held.release);
    for (let i = 0; i < 40 && w.queries.length < 1; i++) await settle();
    assert.equal(w.queries.length, 1, `${route}: the question left is recorded`);
    const read = await fetch(url, init);
    assert.equal(read.status, 200);
    assert.equal((await read.json()).citations.length, 1, `${route}: the answer cites one article`);
    await w.deps.events.stop();
    const impressions = w.all.filter((e) => e.event_type === "result_impression");
    assert.equal(impressions.length, 1, `${route}: the answer read is one impression, the one left none`);
  }
});

Deno.test("A JSON answer its caller left gets no follow-up questions written: no related-questions call to the provider, on the widget and /app/aimodel", async () => {
  const cites = "Bus fares rise by 25 cents [1].";
  for (const route of ["widget", "aimodel"] as const) {
    const held = heldReply(cites);
    await using w = await world([held.reply, chatReply("1. Who sets the fares?")]);
    const [url, init] = route === "widget" ? widgetJson(w) : [`${w.server.url}/app/aimodel/${w.a.model.id}`, {
      method: "POST",
      headers: { ...bearer(w.a.key), "content-type": "application/json" },
      body: JSON.stringify({ query: "Why are bus fares rising?", related_questions: true }),
    }];
    await askJsonAndLeave(w, url, init, held.release);
    for (let i = 0; i < 40 && w.queries.length < 1; i++) await settle();
    assert.equal(w.queries.length, 1, `${route}: the question left is recorded`);
    await settle();
    assert.equal(w.chat.requests.length, 1, `${route}: the answer only, no follow-ups for a caller gone`);
  }
});

/** The widget's own `query` event of an answer it received (`request_id` from the answer's body or `done`). */
const sendWidgetQuery = async (
  w: Awaited<ReturnType<typeof world>>,
  requestId: string,
  { sessionId = "sess-1", eventId = `ev_${crypto.randomUUID().replaceAll("-", "")}` } = {},
) => {
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json" },
    body: JSON.stringify({
      widget_id: w.a.widget.id,
      events: [{
        event_id: eventId,
        event_type: "query",
        request_id: requestId,
        session_id: sessionId,
        interaction_type: "free_form",
        prompt: "Why are bus fares rising?",
        response: "Bus fares rise by 25 cents.",
      }],
    }),
  });
  assert.equal(res.status, 202, await res.text());
};

/** The flushed figures of the widget's questions: engagement and the logs. */
const storedQueries = async (w: Awaited<ReturnType<typeof world>>) => {
  const fig = await w.app.request(`/v1/analytics/ask-ai?widget_id=${w.a.widget.id}`, { headers: bearer(w.a.key) });
  const logs = await w.app.request(`/v1/analytics/ask-ai/logs?widget_id=${w.a.widget.id}`, {
    headers: bearer(w.a.key),
  });
  return { engagement: (await fig.json()).summary.engagement_queries, logs: (await logs.json()).data.length };
};

/**
 * Asks the widget's route for a JSON answer, reads it, then leaves: the connection's end reaches the
 * service as a reader leaving, and it records its query event. The answer's request id.
 */
async function answeredThenLeft(w: Awaited<ReturnType<typeof world>>): Promise<string> {
  const [url, init] = widgetJson(w);
  const leave = new AbortController();
  const res = await w.app.request(new URL(url).pathname, { ...init, signal: leave.signal });
  const { request_id } = await res.json();
  leave.abort();
  await within(w.recorded, 5_000, "the service's query event of the answer");
  return request_id;
}

Deno.test("POST /widget/v1/{wd}/ask JSON: a reader whose cancel arrives after the answer reached the widget is one query, recorded by both", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  // The widget has the answer; the connection's end reaches the service as a reader leaving.
  const request_id = await answeredThenLeft(w);
  await sendWidgetQuery(w, request_id);
  await w.deps.events.stop();
  assert.deepEqual(await storedQueries(w), { engagement: 1, logs: 1 });
});

Deno.test("POST /widget/v1/{wd}/ask SSE: the service's record of a left stream and the widget's own query are one, across flushes", async () => {
  const held = heldStream();
  await using w = await world([held.reply]);
  const res = await askWidget(w);
  const requestId = res.headers.get("x-request-id")!;
  await readFirstEventAndLeave(res, held.release);
  await within(w.recorded, 5_000, "the service's query event of the answer the reader left");
  await settle();
  // Flushed before the widget's copy arrives: the two land in different Parquet files.
  await w.deps.events.flush();
  await sendWidgetQuery(w, requestId);
  await w.deps.events.stop();
  assert.deepEqual(await storedQueries(w), { engagement: 1, logs: 1 });
});

Deno.test("POST /v1/events: a widget query naming another session's request_id is its own question, not that one", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  const request_id = await answeredThenLeft(w);
  // Another page knowing the request id, in its own session, suppresses nothing.
  await sendWidgetQuery(w, request_id, { sessionId: "sess-other" });
  await w.deps.events.stop();
  assert.deepEqual(await storedQueries(w), { engagement: 2, logs: 2 });
});

Deno.test("POST /widget/v1/{wd}/ask SSE: a reader whose leaving reaches the service only after `done` was written is recorded, once with the widget's own", async () => {
  await using w = await world([sseReply(["Bus fares rise ", "by 25 cents."])]);
  const [url, init] = widgetJson(w);
  const leave = new AbortController();
  const res = await w.app.request(new URL(url).pathname, {
    ...init,
    headers: { ...init.headers, accept: "text/event-stream" },
    signal: leave.signal,
  });
  const events = sseEvents(await res.text());
  assert.equal(events.at(-1)!.event, "done");
  // The whole stream was handed over; the connection's end reaches the service after it (the widget
  // may or may not have read `done`: the service cannot tell, so it records, under the shared id).
  leave.abort();
  await within(w.recorded, 5_000, "the service's query event of the answer");
  await sendWidgetQuery(w, (events.at(-1)!.data as { request_id: string }).request_id);
  await w.deps.events.stop();
  assert.deepEqual(await storedQueries(w), { engagement: 1, logs: 1 });
});

Deno.test("GET /v1/analytics/realtime: the service's flushed record of a question and the widget's copy still in the log count once", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  const request_id = await answeredThenLeft(w);
  await settle();
  await w.deps.events.flush();
  // The widget's copy arrives after the flush: in the write-ahead log, not yet in Parquet.
  await sendWidgetQuery(w, request_id);
  const rt = await w.app.request(`/v1/analytics/realtime?widget_id=${w.a.widget.id}`, {
    headers: { ...bearer(w.a.key), "cache-control": "no-cache" },
  });
  const body = await rt.json();
  assert.equal(body.last_5_minutes.queries, 1);
  assert.equal(body.last_30_minutes.queries, 1);
});

Deno.test("One question recorded by both across midnight is one event, whichever copy is flushed first", async () => {
  await using w = await world([chatReply("Bus fares rise by 25 cents.")]);
  w.clock.set("2026-11-22T23:59:40Z");
  const [url, init] = widgetJson(w);
  const leave = new AbortController();
  const res = await w.app.request(new URL(url).pathname, { ...init, signal: leave.signal });
  const { request_id } = await res.json();
  // The widget's copy (stamped on arrival, the next day) is flushed before the service's (stamped when asked).
  w.clock.set("2026-11-23T00:00:05Z");
  await sendWidgetQuery(w, request_id);
  await w.deps.events.flush();
  leave.abort();
  await within(w.recorded, 5_000, "the service's query event of the answer");
  await settle();
  await w.deps.events.stop();
  const dir = `${w.deps.config.dataDir.replace(/\/+$/, "")}/events`;
  const rows = await w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT event_id FROM read_parquet('${dir}/*/*.parquet', hive_partitioning = true) WHERE event_type = 'query'`,
    )).getRowObjectsJS()
  );
  assert.equal(rows.length, 1);
});

/** A provider that holds its reply until released, then fails before any text (an error, as a timeout would). */
const heldFailure = (stream: boolean) => {
  if (stream) return heldSseReply([], [], { fail: true });
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const reply: Reply = async (req, signal) => {
    await released;
    return await failReply(503)(req, signal);
  };
  return { reply, release };
};

Deno.test("A question its reader left before any answer text is one query event with an empty response, on the widget (stream, JSON) and /app/aimodel", async () => {
  for (const route of ["widget SSE", "widget JSON", "/app/aimodel SSE"] as const) {
    const held = heldFailure(route !== "widget JSON");
    await using w = await world([held.reply]);
    const [url, init] = route === "/app/aimodel SSE"
      ? [`${w.server.url}/app/aimodel/${w.a.model.id}`, {
        method: "POST",
        headers: { ...bearer(w.a.key), "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-1" }),
      }]
      : widgetJson(w);
    const headers = route === "widget SSE" ? { ...init.headers, accept: "text/event-stream" } : init.headers;
    // The reader leaves while the answer is awaited; then the provider fails before writing a word.
    await askJsonAndLeave(w, url, { ...init, headers }, held.release);
    await within(w.recorded, 5_000, `${route}: the query event of the question its reader left`);
    await settle();
    assert.equal(w.queries.length, 1, route);
    const q = w.queries[0]!;
    assert.equal(q.prompt, "Why are bus fares rising?", route);
    assert.equal(q.response ?? "", "", route);
    assert.equal(q.session_id, "sess-1", route);
    if (route === "/app/aimodel SSE") continue;
    assert.equal(q.widget_id, w.a.widget.id, route);
    assert.ok(q.event_id, `${route}: the id the widget's own query of that answer would get`);
    await w.deps.events.stop();
    assert.deepEqual(await storedQueries(w), { engagement: 1, logs: 1 }, route);
  }
});

for (const accept of ["text/event-stream", "application/json"]) {
  Deno.test(`POST /app/aimodel/{id} (${accept}): a reader who leaves during grounding, which then fails, is recorded once by the service`, async () => {
    await using w = await world([]);
    await w.deps.repos.aiModels.update({ ...w.a.model, groundingDataModelIds: ["dm_grounding"] });
    // Retrieval holds until the reader left, then fails (an index gone, say).
    const gate = Promise.withResolvers<void>();
    let grounding = false;
    w.deps.search.retrieve = async () => {
      grounding = true;
      await gate.promise;
      throw new Error("retrieval failed");
    };
    const leave = new AbortController();
    const asked = fetch(`${w.server.url}/app/aimodel/${w.a.model.id}`, {
      method: "POST",
      headers: { ...bearer(w.a.key), "content-type": "application/json", accept },
      body: JSON.stringify({ query: "Why are bus fares rising?", session_id: "sess-1" }),
      signal: leave.signal,
    }).then((r) => r.body?.cancel()).catch((err) => err);
    for (let i = 0; !grounding; i++) {
      assert.ok(i < 300, "grounding reached");
      await new Promise((r) => setTimeout(r, 10));
    }
    leave.abort();
    await asked;
    await settle();
    gate.resolve();
    await within(w.recorded, 5_000, "the query event of the question the reader left");
    await settle();
    assert.equal(w.queries.length, 1);
    assert.equal(w.queries[0]!.prompt, "Why are bus fares rising?");
    assert.equal(w.queries[0]!.response, "");
    assert.equal(w.chat.requests.length, 0, "no provider asked");
  });
}
