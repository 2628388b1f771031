import assert from "node:assert/strict";
import { sessionKey, type SessionState } from "../../analytics/enrich.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld } from "./_fixture.ts";
import { parquetFiles, parquetIdCounts } from "./_count.ts";

const post = (
  world: Awaited<ReturnType<typeof analyticsWorld>>,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  world.w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const walCount = async (kv: Deno.Kv) => {
  let n = 0;
  for await (const _ of kv.list({ prefix: ["ev_wal"] })) n++;
  return n;
};

Deno.test("POST /v1/events from the widget: 202 for an allowed origin, stored in the WAL before the answer", async () => {
  await using world = await analyticsWorld();
  const res = await post(world, {
    widget_id: "wd_main",
    events: [
      { event_id: "evt-00000001", event_type: "widget_load", session_id: "s1" },
      { event_id: "evt-00000002", event_type: "query", session_id: "s1", prompt: "Where should I travel?" },
    ],
  }, { origin: "https://news.example" });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { accepted: 2 });
  assert.equal(res.headers.get("access-control-allow-origin"), "https://news.example");
  assert.ok((await walCount(world.w.deps.kv)) > 0);
  const flushed = await world.w.deps.events.flush();
  assert.equal(flushed.rows, 2);
  assert.equal(await walCount(world.w.deps.kv), 0);
  const files = await parquetFiles(world.w.deps.analytics.eventsDir);
  assert.equal(files.length, 1);
  assert.match(
    files[0]!,
    /^date=2026-11-22\/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.parquet$/,
  );
  // Enrichment: tenant, AI agent and deployment type from the widget; the query classified.
  const row = await world.w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT tenant_id, ai_agent, deployment_type, source, intent_type, category, topic, date::VARCHAR AS d
       FROM read_parquet('${world.w.deps.analytics.eventsDir}/*/*.parquet', hive_partitioning = true)
       WHERE event_id = 'evt-00000002'`,
    )).getRowObjectsJS()[0]
  );
  assert.deepEqual(row, {
    tenant_id: world.tenantId,
    ai_agent: "am_main",
    deployment_type: "embed",
    source: "widget",
    intent_type: "recommendation",
    category: "travel",
    topic: "travel",
    d: "2026-11-22",
  });
});

Deno.test("POST /v1/events from the widget: 403 for a wrong, missing origin or unknown widget", async () => {
  await using world = await analyticsWorld();
  const batch = { widget_id: "wd_main", events: [{ event_type: "widget_load" }] };
  for (
    const [body, headers] of [
      [batch, { origin: "https://evil.example" }],
      [batch, {}],
      [{ ...batch, widget_id: "wd_nope" }, { origin: "https://news.example" }],
      [{ events: batch.events }, { origin: "https://news.example" }],
    ] as const
  ) {
    const res = await post(world, body, headers);
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), { message: "widget_id not found or origin not allowed" });
  }
  assert.equal(await walCount(world.w.deps.kv), 0);
});

Deno.test("POST /v1/events from the widget: impressions and API calls are the service's own, a widget cannot send them", async () => {
  await using world = await analyticsWorld();
  for (const event_type of ["result_impression", "api_call"]) {
    const res = await post(world, {
      widget_id: "wd_main",
      events: [{ event_type: "widget_load" }, {
        event_type,
        data_model_id: "dm_x",
        article_id: "ar_1",
        article_url: "https://news.example/a",
      }],
    }, { origin: "https://news.example" });
    assert.equal(res.status, 422, event_type);
    assert.deepEqual(await res.json(), {
      message: "events.1.event_type: is recorded by the service itself, not sent by a widget",
    });
  }
  assert.equal(await walCount(world.w.deps.kv), 0);
});

Deno.test("POST /v1/events from a server: bearer key of the owning tenant; other tenants' widgets are refused", async () => {
  await using world = await analyticsWorld();
  let res = await post(
    world,
    { events: [{ event_type: "query", ai_agent: "am_main", prompt: "hi" }] },
    bearer(world.key),
  );
  assert.equal(res.status, 202);
  await res.body?.cancel();
  res = await post(world, { events: [{ event_type: "widget_load", widget_id: "wd_other" }] }, bearer(world.key));
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "events.0.widget_id: widget_id not found" });
  res = await post(world, { events: [{ event_type: "query", ai_agent: "am_other", prompt: "x" }] }, bearer(world.key));
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "events.0.ai_agent: ai_agent not found" });
  res = await post(world, { events: [{ event_type: "widget_load" }] }, bearer("ak_" + "y".repeat(43)));
  assert.equal(res.status, 403);
  await res.body?.cancel();
  res = await post(world, { events: [{ event_type: "widget_load" }] }, bearer("nope"));
  assert.equal(res.status, 401);
  await res.body?.cancel();
});

Deno.test("POST /v1/events: batches of 1 to 500; one bad event rejects the whole batch with its field named", async () => {
  await using world = await analyticsWorld();
  const h = bearer(world.key);
  let res = await post(world, { events: [] }, h);
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "events: must contain 1 to 500 events" });
  const many = Array.from({ length: 501 }, () => ({ event_type: "widget_load", ai_agent: "am_main" }));
  res = await post(world, { events: many }, h);
  assert.equal(res.status, 422);
  await res.body?.cancel();
  res = await post(world, { events: many.slice(0, 500) }, h);
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { accepted: 500 });
  const cases: Array<[unknown, string]> = [
    [{ event_type: "nope", ai_agent: "am_main" }, "events.1.event_type: "],
    [{ event_type: "click", ai_agent: "am_main" }, "events.1.click_type: is required on click events"],
    [{ event_type: "query", ai_agent: "am_main" }, "events.1.prompt: is required on query events"],
    [{ event_type: "widget_load", ai_agent: "am_main", ts: "yesterday" }, "events.1.ts: must be an ISO 8601 timestamp"],
    [
      { event_type: "widget_load", ai_agent: "am_main", ts: "2026-11-22T12:10:00Z" },
      "events.1.ts: must not be more than 5 minutes in the future",
    ],
    [
      { event_type: "widget_viewable", ai_agent: "am_main", in_view_pct: 101 },
      "events.1.in_view_pct: ",
    ],
    [{ event_type: "sponsored_impression", ai_agent: "am_main" }, "events.1.campaign_id: is required"],
    [
      { event_type: "sponsored_impression", ai_agent: "am_main", campaign_id: "cp_nope" },
      "events.1.campaign_id: campaign not found",
    ],
    [{ event_type: "widget_load", ai_agent: "am_main", referring_url: "ftp://x" }, "events.1.referring_url: "],
  ];
  const before = await walCount(world.w.deps.kv);
  for (const [bad, message] of cases) {
    res = await post(world, { events: [{ event_type: "widget_load", ai_agent: "am_main" }, bad] }, h);
    assert.equal(res.status, 422, JSON.stringify(bad));
    const body = await res.json();
    assert.ok(body.message.startsWith(message), `${body.message} should start with ${message}`);
  }
  assert.equal(await walCount(world.w.deps.kv), before, "nothing of a rejected batch is stored");
  res = await world.w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", ...h },
    body: "{not json",
  });
  assert.equal(res.status, 400);
  await res.body?.cancel();
});

Deno.test("POST /v1/events: an event whose stored row would not fit a log chunk is a 422 naming it, not a 500", async () => {
  await using world = await analyticsWorld();
  // JSON escapes a control character (or a lone surrogate) as 6 bytes: texts within their character
  // limits (2,000 + 2,000 + 10,000) make a row of about 84 KB, over the 64 KiB a KV value holds.
  const escaped = (n: number) => "\u0001".repeat(n);
  const huge = {
    event_type: "query",
    session_id: "s_huge",
    prompt: escaped(2_000),
    prompt_text: escaped(2_000),
    response: escaped(10_000),
  };
  const widget = { origin: "https://news.example", "x-forwarded-for": "198.51.100.7" };
  const before = await walCount(world.w.deps.kv);
  const res = await post(world, { widget_id: "wd_main", events: [{ event_type: "widget_load" }, huge] }, widget);
  assert.equal(res.status, 422);
  const { message } = await res.json();
  assert.match(message, /^events\.1: is too large to store/);
  assert.ok(!message.includes("\u0001"), "the text is not echoed");
  assert.equal(await walCount(world.w.deps.kv), before, "nothing of the batch is stored");
  // The same texts in plain letters fit, and are stored whole.
  const plain = { ...huge, prompt: "a".repeat(2_000), prompt_text: "b".repeat(2_000), response: "c".repeat(10_000) };
  const ok = await post(world, { widget_id: "wd_main", events: [plain] }, widget);
  assert.deepEqual(await ok.json(), { accepted: 1 });
});

Deno.test("OPTIONS /v1/events answers the CORS preflight", async () => {
  await using world = await analyticsWorld();
  const res = await world.w.app.request("/v1/events", {
    method: "OPTIONS",
    headers: { origin: "https://news.example" },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), "https://news.example");
  assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
});

Deno.test("EventSink.record(): article clicks, Ask AI queries and payproxy calls from other rooms", async () => {
  await using world = await analyticsWorld();
  await world.w.deps.events.record([
    { event_type: "click", click_type: "article", ai_agent: "am_main", article_url: "https://news.example/a" },
    {
      event_type: "query",
      ai_agent: "am_main",
      prompt: "Who won the cup?",
      response: "The Reds.",
      interaction_type: "free_form",
      agent_identity: "payproxy:bot-7",
    },
  ]);
  await assert.rejects(world.w.deps.events.record([{ event_type: "click", ai_agent: "am_main" }]), /click_type/);
  await world.w.deps.events.flush();
  const rows = await world.w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT event_type, tenant_id, agent_identity, source FROM read_parquet('${world.w.deps.analytics.eventsDir}/*/*.parquet')
       ORDER BY event_type`,
    )).getRowObjectsJS()
  );
  assert.deepEqual(rows, [
    { event_type: "click", tenant_id: world.tenantId, agent_identity: null, source: "server" },
    { event_type: "query", tenant_id: world.tenantId, agent_identity: "payproxy:bot-7", source: "server" },
  ]);
});

Deno.test("sponsored freeze: ad-render ids are fixed per session in KV until 30 min idle", async () => {
  await using world = await analyticsWorld();
  const widget = (await world.w.deps.repos.widgets.get("wd_main"))!;
  const ingest = (events: Record<string, unknown>[]) =>
    world.w.deps.events.ingest(events.map((e) => ({ session_id: "s_z", ...e })), { source: "widget", widget });
  await ingest([{
    event_type: "sponsored_impression",
    ts: "2026-11-22T11:00:00Z",
    campaign_id: "cp_spring",
    creative_id: "cr_1002",
    line_item_id: "li_1",
    ad_partner: "adserver_b",
  }]);
  const state = await world.w.deps.kv.get<SessionState>(sessionKey(world.tenantId, "s_z", "2026-11-22"));
  assert.equal(state.value?.sponsor?.creative_id, "cr_1002");
  // A later batch of the same session (macros sent by the page) and a second impression: frozen.
  await ingest([
    { event_type: "query", ts: "2026-11-22T11:10:00Z", prompt: "q", creative_id: "macro", publisher_id: "pub_m" },
    {
      event_type: "sponsored_impression",
      ts: "2026-11-22T11:11:00Z",
      campaign_id: "cp_spring",
      creative_id: "cr_1001",
    },
  ]);
  // 31 minutes idle: the session ended, the page's values stand.
  await ingest([{ event_type: "query", ts: "2026-11-22T11:42:00Z", prompt: "q2", creative_id: "macro2" }]);
  await world.w.deps.events.flush();
  const rows = await world.w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT strftime(ts, '%H:%M') AS t, deployment_type AS dt, campaign_id, creative_id, line_item_id, publisher_id, ad_partner
       FROM read_parquet('${world.w.deps.analytics.eventsDir}/*/*.parquet') ORDER BY ts`,
    )).getRowObjectsJS()
  );
  assert.deepEqual(rows, [
    {
      t: "11:00",
      dt: "sponsored_conversation",
      campaign_id: "cp_spring",
      creative_id: "cr_1002",
      line_item_id: "li_1",
      publisher_id: null,
      ad_partner: "adserver_b",
    },
    {
      t: "11:10",
      dt: "sponsored_conversation",
      campaign_id: "cp_spring",
      creative_id: "cr_1002",
      line_item_id: "li_1",
      publisher_id: null,
      ad_partner: "adserver_b",
    },
    {
      t: "11:11",
      dt: "sponsored_conversation",
      campaign_id: "cp_spring",
      creative_id: "cr_1002",
      line_item_id: "li_1",
      publisher_id: null,
      ad_partner: "adserver_b",
    },
    {
      t: "11:42",
      dt: "embed",
      campaign_id: null,
      creative_id: "macro2",
      line_item_id: null,
      publisher_id: null,
      ad_partner: null,
    },
  ]);
});

Deno.test("event_id makes replays idempotent: the same ids posted twice are stored once", async () => {
  await using world = await analyticsWorld();
  const events = [
    { event_id: "dup-00000001", event_type: "widget_load", ai_agent: "am_main" },
    { event_id: "dup-00000001", event_type: "widget_load", ai_agent: "am_main" },
  ];
  await world.w.deps.events.record(events);
  await world.w.deps.events.record(events);
  await world.w.deps.events.flush();
  // A retry flushed later (another file of the same day) is left out too.
  await world.w.deps.events.record([...events, {
    event_id: "new-00000001",
    event_type: "widget_load",
    ai_agent: "am_main",
  }]);
  const r = await world.w.deps.events.flush();
  assert.equal(r.rows, 1);
  const counts = await parquetIdCounts(world.w.deps.duckdb, world.w.deps.analytics.eventsDir);
  assert.deepEqual([...counts].sort(), [["dup-00000001", 1], ["new-00000001", 1]]);
});

Deno.test("EventSink.record(): the tracking redirect's article_click becomes an article click row", async () => {
  await using world = await analyticsWorld();
  const { deps } = world.w;
  const link = deps.links.trackingUrl(
    {
      id: "ar_01JX0000000000000000000000",
      url: "https://news.example/a?x=1",
      dataModelId: "dm_01JX0000000000000000000000",
    },
    { tenantId: world.tenantId, caller: "payproxy:agent-7", position: 2 },
  );
  const res = await world.w.app.request(new URL(link).pathname, { headers: { referer: "not a url" } });
  assert.equal(res.status, 302);
  await deps.events.flush();
  const rows = await deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT event_type, click_type, tenant_id, agent_identity, article_url, data_model_id, article_id, position,
              referring_url FROM read_parquet('${deps.analytics.eventsDir}/*/*.parquet')`,
    )).getRowObjectsJS()
  );
  assert.deepEqual(rows, [{
    event_type: "click",
    click_type: "article",
    tenant_id: world.tenantId,
    agent_identity: "payproxy:agent-7",
    article_url: "https://news.example/a?x=1",
    data_model_id: "dm_01JX0000000000000000000000",
    article_id: "ar_01JX0000000000000000000000",
    position: 2,
    referring_url: null,
  }]);
  const ask = await world.w.app.request("/v1/analytics/ask-ai", { headers: bearer(world.key) });
  assert.equal((await ask.json()).summary.article_clicks, 1);
});

Deno.test("sessionisation: a visit never spans two UTC days; a conversation keeps its campaign past midnight", async () => {
  await using world = await analyticsWorld();
  const widget = (await world.w.deps.repos.widgets.get("wd_main"))!;
  const ingest = (events: Record<string, unknown>[]) =>
    world.w.deps.events.ingest(events.map((e) => ({ session_id: "s_mid", ...e })), { source: "widget", widget });
  await ingest([
    { event_type: "sponsored_impression", ts: "2026-11-21T23:50:00Z", campaign_id: "cp_spring", creative_id: "cr_1" },
    { event_type: "query", ts: "2026-11-21T23:58:00Z", prompt: "before midnight" },
    { event_type: "query", ts: "2026-11-22T00:05:00Z", prompt: "after midnight", creative_id: "macro" },
  ]);
  // Late: stamped yesterday, sent after today's events. It continues yesterday's visit.
  await ingest([{ event_type: "heartbeat", ts: "2026-11-21T23:59:00Z" }]);
  await world.w.deps.events.flush();
  const rows = await world.w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT strftime(ts, '%d %H:%M') AS t, visit_id, visit_start, campaign_id, creative_id
       FROM read_parquet('${world.w.deps.analytics.eventsDir}/*/*.parquet') ORDER BY ts`,
    )).getRowObjectsJS()
  );
  assert.deepEqual(rows.map((r) => [r.t, r.visit_start, r.campaign_id, r.creative_id]), [
    ["21 23:50", true, "cp_spring", "cr_1"],
    ["21 23:58", false, "cp_spring", "cr_1"],
    ["21 23:59", false, "cp_spring", "cr_1"],
    ["22 00:05", true, "cp_spring", "cr_1"],
  ]);
  const visits = rows.map((r) => r.visit_id);
  assert.equal(new Set(visits.slice(0, 3)).size, 1);
  assert.notEqual(visits[3], visits[0]);
});

Deno.test("visit_query_no numbers only the queries stored: a retried query, or one sent again 40 minutes on, takes its first number and starts no visit", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const send = async (events: Record<string, unknown>[]) => {
    const res = await post(world, { widget_id: "wd_main", events }, { origin: "https://news.example" });
    assert.equal(res.status, 202);
    await res.body?.cancel();
  };
  const query = (id: string) => ({
    event_id: id,
    event_type: "query",
    session_id: "s_numbered",
    interaction_type: "free_form",
    prompt: `question ${id}`,
  });
  // The widget sends no time: each batch is stamped on arrival.
  w.clock.set("2026-11-22T10:00:00Z");
  await send([query("q-first-0001")]);
  w.clock.set("2026-11-22T10:01:00Z");
  await send([query("q-second-001")]);
  // Its answer lost, the widget sends the batch again; the flush stores the question once.
  w.clock.set("2026-11-22T10:01:30Z");
  await send([query("q-second-001")]);
  w.clock.set("2026-11-22T10:05:00Z");
  await send([query("q-third-0001")]);
  // A page that kept the first question's event and sends it again 40 minutes on: still that day's
  // event, stored at 10:00, so it starts no visit. The next question, 45 minutes after the third, does.
  w.clock.set("2026-11-22T10:45:00Z");
  await send([query("q-first-0001")]);
  w.clock.set("2026-11-22T10:50:00Z");
  await send([query("q-fourth-001")]);
  w.clock.set("2026-11-22T11:00:00Z");
  await send([query("q-fifth-0001")]);
  await w.deps.events.flush();
  const rows = await w.deps.duckdb.withConnection(async (c) =>
    (await c.runAndReadAll(
      `SELECT event_id, visit_query_no, visit_id FROM read_parquet('${w.deps.analytics.eventsDir}/*/*.parquet')
       WHERE event_type = 'query' ORDER BY ts`,
    )).getRowObjectsJS()
  );
  assert.deepEqual(rows.map((r) => [r.event_id, r.visit_query_no]), [
    ["q-first-0001", 1],
    ["q-second-001", 2],
    ["q-third-0001", 3],
    ["q-fourth-001", 1],
    ["q-fifth-0001", 2],
  ]);
  const visits = rows.map((r) => r.visit_id);
  assert.deepEqual([new Set(visits.slice(0, 3)).size, new Set(visits.slice(3)).size], [1, 1]);
  assert.notEqual(visits[3], visits[0]);
});
