import assert from "node:assert/strict";
import type { TestWorld } from "../_helpers.ts";
import { ORIGIN, OTHER_ORIGIN, sseEvents, widgetWorld } from "./_world.ts";
import { newId } from "../../core/ids.ts";

/** The event rows the real pipeline holds in its write-ahead log. */
async function recorded(w: TestWorld): Promise<Record<string, unknown>[]> {
  const chunks = await w.deps.events.wal.take(1000);
  const lines = chunks.flatMap((c) => new TextDecoder().decode(c.bytes).split("\n").filter(Boolean));
  return lines.map((line) => JSON.parse(line));
}

const ASK = { query: "What did the council decide about the budget?", session_id: "sess-1" };
const from = (address: string) => ({ "x-forwarded-for": address });

Deno.test("widget routes answer 403 origin_not_allowed to other origins, and answer and count nothing", async () => {
  await using w = await widgetWorld({ env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "5" } });
  const a = await w.tenant("Acme");
  const origins = [
    OTHER_ORIGIN,
    null, // a non-browser client that sends none
    "null", // sandboxed frames, file: pages
    `${ORIGIN}/`,
    ORIGIN.replace("https:", "http:"),
    `${ORIGIN}.evil.example`,
    ORIGIN.toUpperCase(),
  ];
  for (const origin of origins) {
    for (const [path, body] of [["/ask", ASK], ["/recommend", { query: "budget" }], ["/config", undefined]] as const) {
      const res = await w.call(`/${a.widget.id}${path}`, { origin, body, headers: { accept: "text/event-stream" } });
      assert.equal(res.status, 403, `${origin} ${path}`);
      assert.deepEqual(await res.json(), { message: "Origin not allowed", code: "origin_not_allowed" });
      assert.equal(res.headers.get("access-control-allow-origin"), null);
    }
  }
  assert.equal(await w.deps.widgetLimits.dailyCap.used(a.widget.id), 0, "no answer taken from the daily cap");
  assert.deepEqual(await recorded(w), [], "nothing recorded");
  // Nor counted by the rate limits: the first allowed request still has the whole window.
  const ok = await w.call(`/${a.widget.id}/ask`, { body: ASK });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("x-ratelimit-remaining"), "4");
});

Deno.test("widget routes set CORS to exactly the request's allowed origin and answer its preflight", async () => {
  await using w = await widgetWorld();
  const second = "http://127.0.0.1:8001";
  const a = await w.tenant("Acme", { allowedOrigins: [ORIGIN, second] });
  for (const origin of [ORIGIN, second]) {
    const pre = await w.call(`/${a.widget.id}/ask`, {
      origin,
      method: "OPTIONS",
      headers: { "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), origin);
    assert.equal(pre.headers.get("access-control-allow-methods"), "GET, POST, OPTIONS");
    assert.equal(pre.headers.get("access-control-allow-headers"), "content-type");
    assert.equal(pre.headers.get("access-control-max-age"), "600");
    assert.match(pre.headers.get("vary") ?? "", /Origin/);
    assert.equal(pre.headers.get("access-control-allow-credentials"), null, "no cookies, ever");

    const res = await w.call(`/${a.widget.id}/config`, { origin });
    assert.equal(res.headers.get("access-control-allow-origin"), origin, "never * and never another origin");
  }
  const denied = await w.call(`/${a.widget.id}/ask`, {
    origin: OTHER_ORIGIN,
    method: "OPTIONS",
    headers: { "access-control-request-method": "POST" },
  });
  assert.equal(denied.status, 403);
  assert.equal(denied.headers.get("access-control-allow-origin"), null);
  // Refusals of an allowed origin are readable by its page: they carry the CORS headers too.
  const bad = await w.call(`/${a.widget.id}/ask`, { body: { query: "" } });
  assert.equal(bad.status, 422);
  assert.equal(bad.headers.get("access-control-allow-origin"), ORIGIN);
});

Deno.test("widget routes answer 429 rate_limited with Retry-After per client address", async () => {
  await using w = await widgetWorld({ env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "3", TRUST_PROXY: "1" } });
  const a = await w.tenant("Acme");
  for (let i = 0; i < 3; i++) {
    assert.equal((await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: from("203.0.113.7") })).status, 200);
  }
  const limited = await w.call(`/${a.widget.id}/recommend`, {
    body: { query: "budget" },
    headers: from("203.0.113.7"),
  });
  assert.equal(limited.status, 429);
  assert.deepEqual(await limited.json(), { message: "Rate limit exceeded", code: "rate_limited" });
  assert.equal(limited.headers.get("retry-after"), "60");
  assert.equal(limited.headers.get("access-control-allow-origin"), ORIGIN);
  // Another reader is not held up; the first is let in again in the next window.
  assert.equal((await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: from("203.0.113.8") })).status, 200);
  w.clock.advance(60_000);
  assert.equal((await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: from("203.0.113.7") })).status, 200);
});

Deno.test("widget routes answer 429 rate_limited per widget over every address", async () => {
  await using w = await widgetWorld({
    env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "100", WIDGET_RATE_LIMIT_PER_WIDGET: "4", TRUST_PROXY: "1" },
  });
  const a = await w.tenant("Acme");
  const b = await w.tenant("Beta");
  const statuses = [];
  for (let i = 0; i < 6; i++) {
    statuses.push((await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: from(`198.51.100.${i}`) })).status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  // The other widget has its own budget.
  assert.equal((await w.call(`/${b.widget.id}/ask`, { body: ASK, headers: from("198.51.100.9") })).status, 200);
});

Deno.test("POST /widget/v1/{wd}/ask answers 429 daily_cap_reached once the widget's answers for the UTC day are used", async () => {
  await using w = await widgetWorld({ env: { WIDGET_DAILY_ANSWER_CAP: "1" } });
  const a = await w.tenant("Acme", { dailyAnswerCap: 3 });
  const b = await w.tenant("Beta"); // the server default: 1
  // Concurrent requests cannot overshoot the cap.
  const statuses = await Promise.all(
    Array.from({ length: 5 }, async () => (await w.call(`/${a.widget.id}/ask`, { body: ASK })).status),
  );
  assert.deepEqual(statuses.sort(), [200, 200, 200, 429, 429]);
  const capped = await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: { accept: "text/event-stream" } });
  assert.equal(capped.status, 429);
  assert.deepEqual(await capped.json(), {
    message: "This widget has used up its answers for today",
    code: "daily_cap_reached",
  });
  // 12:00 UTC: the allowance starts again at midnight, 12 hours on.
  assert.equal(capped.headers.get("retry-after"), String(12 * 3600));
  assert.equal(capped.headers.get("access-control-allow-origin"), ORIGIN);
  // Recommendations are not answers: they do not use the cap.
  assert.equal((await w.call(`/${a.widget.id}/recommend`, { body: { query: "budget" } })).status, 200);

  assert.equal((await w.call(`/${b.widget.id}/ask`, { body: ASK })).status, 200);
  assert.equal((await w.call(`/${b.widget.id}/ask`, { body: ASK })).status, 429);

  w.clock.advance(12 * 3600_000);
  assert.equal((await w.call(`/${a.widget.id}/ask`, { body: ASK })).status, 200, "a new UTC day");
});

Deno.test("widget routes refuse bodies over the limit with 413 and bad fields with 422, never echoing them", async () => {
  await using w = await widgetWorld({ env: { WIDGET_MAX_BODY_BYTES: "1024" } });
  const a = await w.tenant("Acme");
  const big = await w.call(`/${a.widget.id}/ask`, {
    body: { ...ASK, page_url: `https://x.example/${"a".repeat(1100)}` },
  });
  assert.equal(big.status, 413);
  assert.deepEqual(await big.json(), {
    message: "Request body too large: the limit is 1024 bytes",
    code: "body_too_large",
  });
  assert.equal(big.headers.get("access-control-allow-origin"), ORIGIN);

  const marker = "<script>alert(1)</script>";
  const cases: [unknown, string][] = [
    [`{"query": "${marker}`, "Malformed JSON body: not valid JSON"],
    [[marker], "Malformed JSON body: expected a JSON object"],
    [{ session_id: "s" }, "query is required"],
    [{ query: "   ", session_id: "s" }, "query: must not be empty"],
    [{ query: "x".repeat(501), session_id: "s" }, "query: must be at most 500 characters"],
    [{ query: "budget" }, "session_id is required"],
    [{ query: "budget", session_id: marker }, "session_id: must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ / + -"],
    [{ ...ASK, interaction_type: marker }, "interaction_type"],
    [{ ...ASK, history: Array(7).fill({ role: "user", content: "hi" }) }, "history: must hold at most 6 turns"],
    [{ ...ASK, history: [{ role: marker, content: "hi" }] }, "history.0.role"],
    [{ ...ASK, page_url: `javascript:${marker}` }, "page_url: must be an absolute http(s) URL"],
    [{ ...ASK, placement_id: marker }, "placement_id: must be letters, digits and . _ : @ / + -"],
  ];
  for (const [body, message] of cases) {
    const res = await w.call(`/${a.widget.id}/ask`, { body });
    assert.equal(res.status, 422, message);
    const text = await res.text();
    const parsed = JSON.parse(text);
    assert.equal(parsed.code, "invalid_request");
    assert.ok(parsed.message.startsWith(message), `${parsed.message} / ${message}`);
    assert.ok(!text.includes("script"), `the input is never echoed: ${text}`);
  }
  const limit = await w.call(`/${a.widget.id}/recommend`, { body: { limit: 11 } });
  assert.equal(limit.status, 422);
  assert.equal(await w.deps.widgetLimits.dailyCap.used(a.widget.id), 0, "refused requests use no answers");
});

Deno.test("widget routes answer 404 widget_not_found for unknown and malformed ids without echoing them", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const ids = [
    "wd_00000000000000000000000000",
    "wd_%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "am_" + a.model.id.slice(3),
    a.widget.id.toUpperCase(),
    "wd_" + "a".repeat(300),
    "%00",
  ];
  for (const id of ids) {
    for (const path of ["/config", "/ask"]) {
      const res = await w.call(`/${id}${path}`, { body: path === "/ask" ? ASK : undefined });
      assert.equal(res.status, 404, id);
      const text = await res.text();
      assert.deepEqual(JSON.parse(text), { message: "Widget not found", code: "widget_not_found" });
      assert.ok(!text.includes("script") && !text.includes("aaaa"));
    }
  }
});

Deno.test("a widget never reaches another tenant's data models, even when its model record names them", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const b = await w.tenant("Beta");
  // A corrupted or forged record: Beta's AI model grounded in Acme's data models, and its
  // recommendations pointed at one of them.
  await w.deps.repos.aiModels.update({ ...b.model, groundingDataModelIds: [a.dmNews, a.dmTech] });
  await w.deps.repos.widgets.update({ ...b.widget, recommendations: { enabled: true, dataModelId: a.dmNews } });
  w.clock.advance(10_000); // past the widget cache

  const res = await w.call(`/${b.widget.id}/ask`, { body: ASK, headers: { accept: "text/event-stream" } });
  assert.equal(res.status, 200);
  const events = sseEvents(await res.text());
  const done = events.at(-1)!.data as { answer: string };
  const { citations } = events.find((e) => e.event === "citations")!.data as { citations: unknown[] };
  assert.deepEqual(citations, [], "no article of Acme's is cited");
  assert.ok(!done.answer.includes("412 million"), done.answer);

  const rec = await w.call(`/${b.widget.id}/recommend`, { body: { query: "budget" } });
  assert.equal(rec.status, 404);
  assert.equal((await rec.json()).code, "recommendations_disabled");

  // Acme's widget id asked from Beta's page: the origin is Acme's to allow, not Beta's.
  await w.deps.repos.widgets.update({ ...b.widget, allowedOrigins: ["https://beta.example"] });
  w.clock.advance(10_000);
  const cross = await w.call(`/${a.widget.id}/ask`, { body: ASK, origin: "https://beta.example" });
  assert.equal(cross.status, 403);
});

Deno.test("attack: a non-browser client forging an allowed Origin is bounded by the limits", async () => {
  await using w = await widgetWorld({
    env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "5", WIDGET_RATE_LIMIT_PER_WIDGET: "20", TRUST_PROXY: "1" },
  });
  const a = await w.tenant("Acme", { dailyAnswerCap: 12 });
  // Anyone can send `Origin: https://dailyledger.example`. From one address, spoofed
  // X-Forwarded-For entries further left change nothing: only the trusted proxy's entry counts.
  const oneAddress = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
    const res = await w.call(`/${a.widget.id}/ask`, {
      body: ASK,
      headers: { "x-forwarded-for": `10.9.9.${i}, 192.0.2.1` },
    });
    await res.body?.cancel();
    return res.status;
  }));
  assert.equal(oneAddress.filter((s) => s === 200).length, 5);
  assert.equal(oneAddress.filter((s) => s === 429).length, 25);

  // From many addresses: the per-widget limit and then the daily cap hold the total.
  let answered = 0, refused = 0;
  for (let window = 0; window < 3; window++) {
    const statuses = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const res = await w.call(`/${a.widget.id}/ask`, { body: ASK, headers: from(`203.0.113.${i}`) });
      await res.body?.cancel();
      return res.status;
    }));
    answered += statuses.filter((s) => s === 200).length;
    refused += statuses.filter((s) => s === 429).length;
    w.clock.advance(60_000);
  }
  assert.equal(answered + 5, 12, "never more answers in a day than the widget's cap");
  assert.equal(refused, 120 - answered);
  assert.equal(await w.deps.widgetLimits.dailyCap.used(a.widget.id), 12);
});

Deno.test("attack: IPv6 addresses of one /64 share one per-address widget limit", async () => {
  await using w = await widgetWorld({ env: { WIDGET_RATE_LIMIT_PER_ADDRESS: "3", TRUST_PROXY: "1" } });
  const a = await w.tenant("Acme");
  // One subscriber holds a whole /64: rotating the interface id is still one client.
  const statuses = [];
  for (let i = 1; i <= 6; i++) {
    const res = await w.call(`/${a.widget.id}/recommend`, {
      body: { query: "budget" },
      headers: from(`2001:db8:7:9::${i.toString(16)}`),
    });
    await res.body?.cancel();
    statuses.push(res.status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429]);
  const config = await w.call(`/${a.widget.id}/config`, { headers: from("2001:db8:7:9:abcd::1") });
  assert.equal(config.status, 429, "the configuration route counts the same /64");
  // Another /64 is another client.
  const other = await w.call(`/${a.widget.id}/config`, { headers: from("2001:db8:7:a::1") });
  assert.equal(other.status, 200);
});

Deno.test("attack: a widget stored with the opaque origin null (before origins were checked) still refuses Origin: null", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  // What the admin CLI could store before it checked --origin (`localhost:8001` parsed to origin "null").
  await w.deps.repos.widgets.update({ ...a.widget, allowedOrigins: [...a.widget.allowedOrigins, "null"] });
  for (const [path, body] of [["/ask", ASK], ["/recommend", { query: "budget" }], ["/config", undefined]] as const) {
    const res = await w.call(`/${a.widget.id}${path}`, {
      origin: "null",
      body,
      headers: { accept: "text/event-stream" },
    });
    assert.equal(res.status, 403, path);
    assert.equal(res.headers.get("access-control-allow-origin"), null);
    await res.body?.cancel();
  }
  const event = { event_type: "widget_open", session_id: "sess-1", ts: w.clock.now().toISOString() };
  const sent = await w.app.request("http://svc.test/v1/events", {
    method: "POST",
    headers: { origin: "null", "content-type": "application/json" },
    body: JSON.stringify({ widget_id: a.widget.id, events: [event] }),
  });
  assert.equal(sent.status, 403, "a sandboxed page on any site cannot send the widget's events");
  await sent.body?.cancel();
  const preflight = await w.app.request("http://svc.test/v1/events", {
    method: "OPTIONS",
    headers: { origin: "null", "access-control-request-method": "POST" },
  });
  assert.equal(preflight.headers.get("access-control-allow-origin"), null);
  await preflight.body?.cancel();
  assert.deepEqual(await recorded(w), [], "nothing recorded");
  // The widget's real origin still works.
  const ok = await w.call(`/${a.widget.id}/config`);
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
});

Deno.test("a question asked of one AI model with a widget bound to another is filed under the model that answered", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const other = { ...a.model, id: newId("am", w.clock), name: "Acme Second" };
  await w.deps.repos.aiModels.create(other);
  const res = await w.app.request(`http://svc.test/app/aimodel/${other.id}`, {
    method: "POST",
    headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
    body: JSON.stringify({ query: "What did the council decide about the budget?", widget_id: a.widget.id }),
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const queries = (await recorded(w)).filter((e) => e.event_type === "query");
  assert.equal(queries.length, 1);
  assert.equal(queries[0]!.ai_agent, other.id, "the model asked, not the widget's own");
  assert.equal(queries[0]!.widget_id, a.widget.id);
});
