import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

const zeroDay = (date: string) => ({
  date,
  widget_loads: 0,
  viewable_sessions: 0,
  engagement_queries: 0,
  total_clicks: 0,
  sessions: 0,
});

Deno.test("GET /v1/analytics/ask-ai: numbers match the hand-computed fixture", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = async (qs: string) => {
    const res = await world.w.app.request(`/v1/analytics/ask-ai${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    return await res.json();
  };

  await t.step("widget_id=wd_main scopes to its AI agent (server query included, other widget excluded)", async () => {
    const body = await get("?widget_id=wd_main");
    assert.deepEqual(body.filters, { widget_id: "wd_main" });
    assert.deepEqual(body.summary, {
      widget_loads: 5,
      viewable_sessions: 3,
      engagement_queries: 9,
      total_clicks: 4,
      article_clicks: 2,
      cta_clicks: 2,
      sessions: 5,
      total_session_time_seconds: 55,
      avg_session_duration_seconds: 11,
      viewability_rate: 60,
      engagement_rate: 180,
      engagement_session_rate: 80,
      query_to_click_rate: 44.44,
    });
    assert.deepEqual(body.daily_breakdown, [
      zeroDay("2026-11-16"),
      zeroDay("2026-11-17"),
      zeroDay("2026-11-18"),
      zeroDay("2026-11-19"),
      {
        date: "2026-11-20",
        widget_loads: 3,
        viewable_sessions: 1,
        engagement_queries: 3,
        total_clicks: 2,
        sessions: 3,
      },
      {
        date: "2026-11-21",
        widget_loads: 1,
        viewable_sessions: 1,
        engagement_queries: 4,
        total_clicks: 0,
        sessions: 1,
      },
      {
        date: "2026-11-22",
        widget_loads: 1,
        viewable_sessions: 1,
        engagement_queries: 2,
        total_clicks: 2,
        sessions: 1,
      },
    ]);
    assert.deepEqual(body.meta, { timezone: "UTC", generated_at: "2026-11-22T12:00:00.000Z" });
    assert.equal(body.success, true);
  });

  await t.step("no filters: every widget of the tenant, never another tenant's", async () => {
    const body = await get("");
    assert.deepEqual(body.filters, {});
    assert.equal(body.summary.widget_loads, 6);
    assert.equal(body.summary.sessions, 6);
    assert.equal(body.summary.viewability_rate, 50);
    assert.equal(body.summary.engagement_rate, 150);
    assert.equal(body.summary.engagement_session_rate, 66.67);
    assert.equal(body.summary.avg_session_duration_seconds, 9);
  });

  await t.step("daily rows add up to the summary", async () => {
    const body = await get("?start_date=2026-11-01&end_date=2026-11-30");
    assert.equal(body.daily_breakdown.length, 30);
    for (const k of ["widget_loads", "viewable_sessions", "engagement_queries", "total_clicks", "sessions"]) {
      const sum = body.daily_breakdown.reduce((n: number, d: Record<string, number>) => n + d[k]!, 0);
      assert.equal(sum, body.summary[k], k);
    }
    assert.equal(body.summary.total_clicks, body.summary.article_clicks + body.summary.cta_clicks);
  });

  await t.step("publisher macros match only events before the sponsored freeze", async () => {
    const body = await get("?creative_id=pub_cr_9");
    assert.deepEqual(body.filters, { creative_id: "pub_cr_9" });
    assert.equal(body.summary.widget_loads, 1);
    assert.equal(body.summary.engagement_queries, 0);
    const frozen = await get("?creative_id=cr_1001&line_item_id=li_7&publisher_id=pub_42");
    assert.equal(frozen.summary.engagement_queries, 2);
    assert.equal(frozen.summary.total_clicks, 2);
    // The frozen events belong to session D: its session, load and viewability are the block's.
    assert.equal(frozen.summary.sessions, 1);
    assert.equal(frozen.summary.widget_loads, 1);
    assert.equal(frozen.summary.viewable_sessions, 1);
  });

  await t.step("placement_id and deployment_type filter and are echoed in spec order", async () => {
    const body = await get("?placement_id=pl_2&deployment_type=embed&start_date=2026-11-21&end_date=2026-11-21");
    assert.deepEqual(Object.keys(body.filters), ["start_date", "end_date", "deployment_type", "placement_id"]);
    assert.equal(body.summary.widget_loads, 1);
    assert.equal(body.summary.engagement_queries, 3);
    assert.equal(body.daily_breakdown.length, 1);
    const brand = await get("?deployment_type=brand_agent");
    assert.equal(brand.summary.widget_loads, 1);
  });
});

Deno.test("GET /v1/analytics/ask-ai/logs: filters, default interaction types, newest first, paging", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = async (qs: string) => {
    const res = await world.w.app.request(`/v1/analytics/ask-ai/logs${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, await res.clone().text());
    return await res.json();
  };
  await t.step("defaults: the three interaction types, 50 a page", async () => {
    const body = await get("");
    assert.equal(body.count, 8); // the sponsored_prompt query is not among the defaults
    assert.equal(body.total_pages, 1);
    assert.equal(body.data.length, 8);
    const times = body.data.map((r: { timestamp: string }) => r.timestamp);
    assert.deepEqual(times, [...times].sort().reverse());
    assert.deepEqual(body.data[1], {
      timestamp: "2026-11-21T12:00:00.000Z",
      widget_id: "",
      placement_id: "",
      deployment_type: "",
      ai_agent: "am_main",
      referring_url: "",
      interaction_type: "search",
      prompt: "Best laptop for students",
      response: "The X1.",
    });
    assert.deepEqual(body.meta, { timezone: "UTC", generated_at: "2026-11-22T12:00:00.000Z" });
  });
  await t.step("a single interaction_type", async () => {
    const body = await get("?interaction_type=sponsored_prompt");
    assert.equal(body.count, 1);
    assert.equal(body.data[0].prompt, "Where should I travel this spring?");
    assert.equal((await get("?interaction_type=automated_followup")).count, 1);
  });
  await t.step("page 2 of limit 3", async () => {
    const body = await get("?limit=3&page=2");
    assert.equal(body.count, 8);
    assert.equal(body.total_pages, 3);
    assert.deepEqual(
      body.data.map((r: { prompt: string }) => r.prompt),
      [
        "Compare electric cars vs hybrids",
        "How is inflation affecting mortgage rates?",
        "Who won the football match last night?",
      ],
    );
    const last = await get("?limit=3&page=3");
    assert.equal(last.data.length, 2);
    assert.equal(last.data[1].prompt, "Where should I travel this spring?");
    assert.equal(last.data[1].referring_url, "https://news.example/a");
    assert.equal(last.data[1].response, "Try Lisbon.");
    assert.deepEqual((await get("?limit=3&page=9")).data, []);
  });
  await t.step("limit over 500 is silently 500", async () => {
    const body = await get("?limit=100000");
    assert.equal(body.total_pages, 1);
    assert.equal(body.data.length, 8);
  });
  await t.step("placement, deployment type and widget scope", async () => {
    assert.equal((await get("?placement_id=pl_2")).count, 3);
    assert.equal((await get("?deployment_type=brand_agent")).count, 0);
    assert.equal((await get("?widget_id=wd_second")).count, 0);
    assert.equal((await get("?widget_id=wd_main&start_date=2026-11-20&end_date=2026-11-20")).count, 3);
  });
});

Deno.test("GET /v1/analytics/sponsored-conversations: numbers match the hand-computed fixture", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = async (qs: string, key = world.key) => {
    const res = await world.w.app.request(`/v1/analytics/sponsored-conversations${qs}`, { headers: bearer(key) });
    assert.equal(res.status, 200, await res.clone().text());
    return await res.json();
  };
  await t.step("every block", async () => {
    const body = await get("");
    assert.equal(body.success, true);
    assert.deepEqual(body.filters, {});
    assert.deepEqual(body.summary, {
      impressions: 1,
      queries: 2,
      sessions: 1,
      avg_session_duration_seconds: 10,
      total_clicks: 2,
      article_clicks: 1,
      cta_clicks: 1,
      engagement_rate: 200,
      conversion_rate: 200,
      avg_queries_per_session: 2,
    });
    assert.equal(body.daily_breakdown.length, 7);
    assert.deepEqual(body.daily_breakdown[6], {
      date: "2026-11-22",
      queries: 2,
      engagement_rate: 200,
      total_clicks: 2,
    });
    assert.deepEqual(body.daily_breakdown[0], { date: "2026-11-16", queries: 0, engagement_rate: 0, total_clicks: 0 });
    assert.deepEqual(body.campaign_breakdown, [{
      campaign_id: "cp_spring",
      campaign_name: "Spring Travel",
      creative_ids: ["cr_1001", "cr_1002"],
      impressions: 1,
      queries: 2,
      total_clicks: 2,
      engagement_rate: 200,
    }]);
    assert.deepEqual(body.prompt_breakdown, [
      {
        prompt_id: "",
        prompt_text: "Where should I travel this spring?",
        impressions: 1,
        queries: 1,
        engagement_rate: 100,
      },
      {
        prompt_id: "",
        prompt_text: "What are the best budget airlines?",
        impressions: 1,
        queries: 0,
        engagement_rate: 0,
      },
      { prompt_id: "", prompt_text: "Is it cheap to fly to Lisbon?", impressions: 0, queries: 1, engagement_rate: 0 },
    ]);
    assert.deepEqual(body.click_type_breakdown, [{ type: "article", count: 1 }, { type: "cta", count: 1 }]);
    assert.deepEqual(body.meta, { timezone: "UTC", generated_at: "2026-11-22T12:00:00.000Z" });
  });
  await t.step("frozen ad-render ids: filters by them keep the whole conversation, macros match nothing", async () => {
    const body = await get("?creative_id=cr_1001&line_item_id=li_7&publisher_id=pub_42");
    assert.deepEqual(body.filters, { creative_id: "cr_1001", line_item_id: "li_7", publisher_id: "pub_42" });
    assert.equal(body.summary.queries, 2);
    assert.equal(body.summary.impressions, 1);
    assert.equal((await get("?publisher_id=pub_macro")).summary.queries, 0);
    assert.equal((await get("?creative_id=pub_cr_9")).summary.queries, 0);
  });
  await t.step("campaign, agent, placement and prompt filters", async () => {
    assert.equal((await get("?campaign_id=cp_spring&agent_id=am_main&placement_id=pl_1")).summary.queries, 2);
    assert.equal((await get("?agent_id=am_second")).summary.queries, 0);
    assert.equal((await get("?placement_id=pl_2")).summary.queries, 0);
    const prompt = await get("?prompt_id=pm_1");
    assert.equal(prompt.summary.queries, 1);
    assert.deepEqual(prompt.prompt_breakdown.map((p: { prompt_text: string }) => p.prompt_text), [
      "Where should I travel this spring?",
    ]);
  });
  await t.step("another tenant's campaign is not covered", async () => {
    const body = await get("?campaign_id=cp_other");
    assert.equal(body.summary.impressions, 0);
    assert.deepEqual(body.campaign_breakdown, []);
    const other = await get("", world.other.key);
    assert.equal(other.summary.impressions, 0);
  });
});

Deno.test("GET /v1/analytics/session-intelligence: numbers match the hand-computed fixture", async (t) => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = async (qs: string) => {
    const res = await world.w.app.request(`/v1/analytics/session-intelligence${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()).session_intelligence;
  };
  await t.step("every block", async () => {
    const si = await get("?widget_id=wd_main");
    assert.deepEqual(si.summary, {
      total_engaged_sessions: 4,
      total_queries: 8,
      average_queries_per_session: 2,
      sessions_with_2_plus_queries: 3,
      sessions_with_2_plus_queries_percentage: 75,
      single_query_sessions: 1,
      single_query_sessions_percentage: 25,
      max_queries_in_session: 3,
    });
    // Engaged seconds per session: 15, 5, 20, 10 -> total 50, mean 12.5 -> 13, median 12.5 -> 13.
    assert.deepEqual(si.engagement_time, {
      total_session_time_seconds: 50,
      average_engagement_time_per_session_seconds: 13,
      median_engagement_time_per_session_seconds: 13,
    });
    assert.deepEqual(si.intent_breakdown, [
      { intent_type: "informational", label: "Informational", sessions: 2, percentage: 50 },
      { intent_type: "recommendation", label: "Recommendation", sessions: 2, percentage: 50 },
    ]);
    assert.deepEqual(si.top_queried_topics[0], { query: "travel", category: "travel", count: 2 });
    assert.equal(si.top_queried_topics.length, 7);
    assert.deepEqual(si.category_distribution, [
      { category: "travel", count: 3, percentage: 37.5 },
      { category: "general", count: 2, percentage: 25 },
      { category: "finance", count: 1, percentage: 12.5 },
      { category: "sports", count: 1, percentage: 12.5 },
      { category: "technology", count: 1, percentage: 12.5 },
    ]);
    assert.deepEqual(si.session_engagement_distribution, [
      { query_depth: "1", sessions: 1, percentage: 25 },
      { query_depth: "2", sessions: 2, percentage: 50 },
      { query_depth: "3", sessions: 1, percentage: 25 },
      { query_depth: "4", sessions: 0, percentage: 0 },
      { query_depth: "5", sessions: 0, percentage: 0 },
      { query_depth: "6-10", sessions: 0, percentage: 0 },
      { query_depth: "10+", sessions: 0, percentage: 0 },
    ]);
  });
  await t.step("blocks agree: buckets sum to sessions, categories to queries", async () => {
    const si = await get("");
    const buckets = si.session_engagement_distribution.reduce(
      (n: number, b: { sessions: number }) => n + b.sessions,
      0,
    );
    assert.equal(buckets, si.summary.total_engaged_sessions);
    const cats = si.category_distribution.reduce((n: number, c: { count: number }) => n + c.count, 0);
    assert.equal(cats, si.summary.total_queries);
    const intents = si.intent_breakdown.reduce((n: number, c: { sessions: number }) => n + c.sessions, 0);
    assert.equal(intents, si.summary.total_engaged_sessions);
    assert.equal(
      si.summary.single_query_sessions + si.summary.sessions_with_2_plus_queries,
      si.summary.total_engaged_sessions,
    );
  });
  await t.step("creative_id, line_item_id and publisher_id filter", async () => {
    const si = await get("?creative_id=cr_1001&line_item_id=li_7&publisher_id=pub_42");
    assert.equal(si.summary.total_engaged_sessions, 1);
    assert.equal(si.summary.total_queries, 2);
    assert.equal(si.engagement_time.total_session_time_seconds, 10);
  });
  await t.step("all seven buckets even with no data", async () => {
    const si = await get("?start_date=2026-01-01&end_date=2026-01-31");
    assert.deepEqual(si.session_engagement_distribution.map((b: { query_depth: string }) => b.query_depth), [
      "1",
      "2",
      "3",
      "4",
      "5",
      "6-10",
      "10+",
    ]);
    assert.equal(si.summary.total_engaged_sessions, 0);
    assert.equal(si.engagement_time.median_engagement_time_per_session_seconds, 0);
    assert.deepEqual(si.intent_breakdown, []);
  });
});

Deno.test("analytics endpoints answer zeros before any event file exists", async () => {
  await using world = await analyticsWorld();
  for (const path of ["ask-ai", "ask-ai/logs", "sponsored-conversations", "session-intelligence"]) {
    const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, path);
    await res.body?.cancel();
  }
  const res = await world.w.app.request("/v1/analytics/ask-ai", { headers: bearer(world.key) });
  const body = await res.json();
  assert.equal(body.summary.widget_loads, 0);
  assert.equal(body.daily_breakdown.length, 7);
});
