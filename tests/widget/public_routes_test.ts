import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { TestWorld } from "../_helpers.ts";
import { ORIGIN, sseEvents, widgetWorld } from "./_world.ts";

/** The event rows the real pipeline holds in its write-ahead log. */
async function recorded(w: TestWorld): Promise<Record<string, unknown>[]> {
  const chunks = await w.deps.events.wal.take(1000);
  const lines = chunks.flatMap((c) => new TextDecoder().decode(c.bytes).split("\n").filter(Boolean));
  return lines.map((line) => JSON.parse(line));
}

const ASK = { query: "What did the council decide about the budget?", session_id: "sess-1" };
const SSE = { accept: "text/event-stream" };

Deno.test("GET /widget/v1/{wd}/config answers the public configuration with defaults, ETag and 304", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const res = await w.call(`/${a.widget.id}/config`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "public, max-age=60");
  assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(res.headers.get("vary") ?? "", /Origin/);
  const etag = res.headers.get("etag");
  assert.match(etag ?? "", /^"[0-9a-f]{32}"$/);
  const text = await res.text();
  const body = JSON.parse(text);
  assert.deepEqual(body, {
    widget_id: a.widget.id,
    title: "Ask AI",
    placeholder: "Ask a question",
    mode: "inline",
    position: "bottom-right",
    theme: "auto",
    colors: { accent: "#1a73e8" },
    prompts: [],
    sponsored: [],
    recommendations: { enabled: true },
    attribution: { show_powered_by: true, text: "Powered by Ask AI", url: "http://svc.test/docs" },
    deployment_type: "embed",
  });
  // No secret and no internal id: no tenant, AI model, data model, key or origin list.
  for (const leak of [a.tenantId, a.model.id, a.dmNews, a.key, "allowedOrigins", "tenant"]) {
    assert.ok(!text.includes(leak), `config must not hold ${leak}`);
  }

  const again = await w.call(`/${a.widget.id}/config`, { headers: { "if-none-match": etag! } });
  assert.equal(again.status, 304);
  assert.equal(again.headers.get("etag"), etag);
  assert.equal(await again.text(), "");
  const weak = await w.call(`/${a.widget.id}/config`, { headers: { "if-none-match": `"x", W/${etag}` } });
  assert.equal(weak.status, 304);
  const stale = await w.call(`/${a.widget.id}/config`, { headers: { "if-none-match": '"0000"' } });
  assert.equal(stale.status, 200);
});

Deno.test("GET /widget/v1/{wd}/config shows configured prompts and the prompts of active attached campaigns only", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const now = w.clock.now().toISOString();
  const r = w.deps.repos;
  const active = await r.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: a.tenantId,
    name: "Spring travel",
    creativeIds: ["cr_1"],
    createdAt: now,
  });
  const paused = await r.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: a.tenantId,
    name: "Paused",
    creativeIds: [],
    active: false,
    createdAt: now,
  });
  const sponsoredPrompt = await r.prompts.create({
    id: newId("pm", w.clock),
    tenantId: a.tenantId,
    campaignId: active.id,
    text: "Where should I travel this spring?",
    createdAt: now,
  });
  await r.prompts.create({
    id: newId("pm", w.clock),
    tenantId: a.tenantId,
    campaignId: paused.id,
    text: "Paused prompt",
    createdAt: now,
  });
  const suggested = await r.prompts.create({
    id: newId("pm", w.clock),
    tenantId: a.tenantId,
    text: "What happened at city hall?",
    createdAt: now,
  });
  await r.widgets.update({
    ...a.widget,
    title: "Ask the Ledger",
    mode: "docked",
    position: "bottom-left",
    theme: "dark",
    colors: { accent: "#112233", text: "#ffffff" },
    promptIds: [suggested.id],
    campaignIds: [active.id, paused.id],
    recommendations: { enabled: false },
  });
  const body = await (await w.call(`/${a.widget.id}/config`)).json();
  assert.equal(body.title, "Ask the Ledger");
  assert.equal(body.mode, "docked");
  assert.equal(body.position, "bottom-left");
  assert.equal(body.theme, "dark");
  assert.deepEqual(body.colors, { accent: "#112233", text: "#ffffff" });
  assert.deepEqual(body.prompts, [{ id: suggested.id, text: "What happened at city hall?" }]);
  assert.deepEqual(body.sponsored, [{
    campaign_id: active.id,
    prompt_id: sponsoredPrompt.id,
    text: "Where should I travel this spring?",
    creative_id: "cr_1",
  }]);
  assert.deepEqual(body.recommendations, { enabled: false });
});

Deno.test("POST /widget/v1/{wd}/ask streams token events, then citations, related and done", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const res = await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: SSE });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
  const events = sseEvents(await res.text());
  const names = events.map((e) => e.event);
  const tokens = names.filter((n) => n === "token").length;
  assert.ok(tokens >= 1, "at least one token event");
  assert.deepEqual(names, [...Array(tokens).fill("token"), "citations", "related", "done"]);

  const text = events.filter((e) => e.event === "token").map((e) => (e.data as { text: string }).text).join("");
  const done = events.at(-1)!.data as { answer: string; request_id: string };
  assert.equal(done.answer, text, "done carries the whole text the tokens streamed");
  assert.equal(done.request_id, res.headers.get("x-request-id"));
  assert.match(text, /412 million dollar budget/);
  assert.match(text, /\[1\]/);
  // The reader sees the answer, not the article URLs of the sources block.
  assert.ok(!text.includes("Sources:"), text);
  assert.ok(!text.includes("https://dailyledger.example/"), text);

  const { citations } = events.find((e) => e.event === "citations")!.data as {
    citations: { n: number; title: string; site: string; url: string }[];
  };
  assert.ok(citations.length >= 1);
  assert.deepEqual(citations[0]!.n, 1);
  assert.equal(citations[0]!.title, "Council approves 2027 city budget after late-night vote");
  assert.equal(citations[0]!.site, "The Daily Ledger");
  for (const c of citations) {
    assert.match(c.url, /^http:\/\/svc\.test\/r\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  }

  const { questions } = events.find((e) => e.event === "related")!.data as { questions: string[] };
  assert.equal(questions.length, 3);
  assert.equal(new Set(questions).size, 3);
  for (const q of questions) assert.ok(q.endsWith("?"), q);
  assert.match(questions[0]!, /Council approves 2027 city budget/);
});

Deno.test("POST /widget/v1/{wd}/ask citations are tracking links whose click counts for the widget's session", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const res = await w.call(`/${a.widget.id}/ask`, {
    body: {
      ...ASK,
      interaction_type: "suggested_prompt",
      placement_id: "article-footer",
      creative_id: "cr_77",
      line_item_id: "li_5",
    },
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(Object.keys(body).sort(), ["answer", "citations", "related_questions", "request_id"]);
  assert.equal(body.related_questions.length, 3);
  // The widget records its own query event: the route records none.
  assert.deepEqual((await recorded(w)).filter((e) => e.event_type === "query"), []);

  const click = await w.app.request(new URL(body.citations[0].url).pathname);
  assert.equal(click.status, 302);
  assert.equal(click.headers.get("location"), a.articles.find((x) => x.title.startsWith("Council"))!.url);
  const clicks = (await recorded(w)).filter((e) => e.event_type === "click");
  assert.equal(clicks.length, 1);
  assert.equal(clicks[0]!.click_type, "article");
  assert.equal(clicks[0]!.widget_id, a.widget.id);
  assert.equal(clicks[0]!.session_id, "sess-1");
  assert.equal(clicks[0]!.ai_agent, a.model.id);
  assert.equal(clicks[0]!.tenant_id, a.tenantId);
  // The embed's placement and macros, as on the widget's own events (spec 4.5 filters).
  assert.equal(clicks[0]!.placement_id, "article-footer");
  assert.equal(clicks[0]!.deployment_type, "embed");
  assert.equal(clicks[0]!.creative_id, "cr_77");
  assert.equal(clicks[0]!.line_item_id, "li_5");
  assert.equal(clicks[0]!.publisher_id, null);
});

Deno.test("POST /widget/v1/{wd}/ask makes a short follow-up standalone from history", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const ask = async (history?: { role: string; content: string }[]) => {
    const res = await w.call(`/${a.widget.id}/ask`, {
      body: { query: "What will it cost?", session_id: "sess-2", interaction_type: "automated_followup", history },
    });
    assert.equal(res.status, 200);
    return (await res.json()) as { citations: { title: string }[] };
  };
  // Alone, "it" is anything that costs: the budget comes first.
  const alone = await ask();
  assert.equal(alone.citations[0]!.title, "Council approves 2027 city budget after late-night vote");
  // After a question about bus fares, "it" is the fare.
  const followup = await ask([
    { role: "user", content: "Why are bus fares going up?" },
    { role: "assistant", content: "Fuel and wage costs." },
  ]);
  assert.deepEqual(followup.citations.map((c) => c.title), ["Bus fares to rise in January"]);
});

Deno.test("POST /widget/v1/{wd}/recommend finds articles like the page without fetching it, else for the query", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const page = a.articles.find((x) => x.title.startsWith("Council"))!;
  let res = await w.call(`/${a.widget.id}/recommend`, { body: { page_url: page.url, limit: 2 } });
  assert.equal(res.status, 200);
  let body = await res.json();
  assert.equal(body.results.length, 2);
  assert.ok(body.results.every((r: { title: string }) => r.title !== page.title), "never the page itself");
  assert.equal(body.results[0].title, "Budget talks begin at city hall");
  for (const r of body.results) {
    assert.deepEqual(Object.keys(r).sort(), ["image_url", "published_at", "site", "title", "url"]);
    assert.match(r.url, /^http:\/\/svc\.test\/r\//);
    assert.ok(r.image_url === null || r.image_url.startsWith("http://svc.test/img?src="));
  }

  res = await w.call(`/${a.widget.id}/recommend`, {
    body: { query: "bus fares", session_id: "sess-9", placement_id: "sidebar" },
  });
  body = await res.json();
  assert.equal(body.results.length, 3, "limit defaults to 3");
  assert.equal(body.results[0].title, "Bus fares to rise in January");
  // A followed result counts as the widget's click, in the reader's session.
  await w.deps.events.wal.take(1000); // the impressions so far
  assert.equal((await w.app.request(new URL(body.results[0].url).pathname)).status, 302);
  const [click] = (await recorded(w)).filter((e) => e.event_type === "click");
  assert.equal(click!.widget_id, a.widget.id);
  assert.equal(click!.session_id, "sess-9");
  assert.equal(click!.placement_id, "sidebar");

  // A page the data model does not hold: the words of its address, not a fetch.
  res = await w.call(`/${a.widget.id}/recommend`, {
    body: { page_url: "https://dailyledger.example/2026/snow-weekend" },
  });
  body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body.results[0].title, "Snow expected this weekend");

  // A malformed escape in the address is just more letters.
  res = await w.call(`/${a.widget.id}/recommend`, { body: { page_url: "https://dailyledger.example/%E0%A4%A/snow" } });
  assert.equal(res.status, 200);

  res = await w.call(`/${a.widget.id}/recommend`, { body: { query: "https://169.254.169.254/latest" } });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "query: must be words, not a URL", code: "invalid_request" });
});

Deno.test("POST /widget/v1/{wd}/recommend answers 404 recommendations_disabled when the widget turned them off", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme", { recommendations: { enabled: false } });
  const res = await w.call(`/${a.widget.id}/recommend`, { body: { query: "budget" } });
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), {
    message: "Recommendations are off for this widget",
    code: "recommendations_disabled",
  });
});

Deno.test("the widget routes and widget configuration routes are in the OpenAPI document", async () => {
  await using w = await widgetWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  assert.ok(doc.paths["/widget/v1/{wd}/config"].get);
  assert.ok(doc.paths["/widget/v1/{wd}/ask"].post.responses["200"].content["text/event-stream"]);
  assert.ok(doc.paths["/widget/v1/{wd}/recommend"].post);
  assert.ok(doc.paths["/v1/widgets/{id}"].patch);
  assert.ok(doc.paths["/v1/widgets/{id}"].get);
  assert.ok(doc.paths["/v1/widgets"].post);
  for (const name of ["WidgetConfig", "WidgetAskRequest", "WidgetAnswer", "WidgetError", "WidgetSettings"]) {
    assert.ok(doc.components.schemas[name], name);
  }
});
