import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

const pct = (n: number, d: number) => (d === 0 ? 0 : Math.round((n * 10_000) / d) / 100);

/** Every rate of a summary block is its counts' ratio, and no subset count exceeds its whole. */
function assertSelfConsistent(s: Record<string, number>, label: string) {
  assert.equal(s.viewability_rate, pct(s.viewable_sessions!, s.sessions!), label);
  assert.equal(s.engagement_rate, pct(s.engagement_queries!, s.widget_loads!), label);
  assert.equal(s.query_to_click_rate, pct(s.total_clicks!, s.engagement_queries!), label);
  assert.equal(s.total_clicks, s.article_clicks! + s.cta_clicks!, label);
  assert.ok(s.viewable_sessions! <= s.sessions!, label);
  assert.ok(s.engagement_session_rate! <= 100, label);
  if (s.engagement_queries! > 0 || s.total_clicks! > 0 || s.total_session_time_seconds! > 0) {
    // Activity belongs to sessions: a block with queries, clicks or time has sessions and loads.
    assert.ok(s.sessions! > 0, `${label}: activity without sessions`);
    assert.ok(s.widget_loads! > 0, `${label}: activity without widget loads`);
  }
  assert.equal(
    s.avg_session_duration_seconds,
    s.sessions === 0 ? 0 : Math.round(s.total_session_time_seconds! / s.sessions!),
    label,
  );
}

Deno.test("ask-ai: deployment_type=sponsored_conversation counts the sessions, loads and viewability its events belong to", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const res = await world.w.app.request("/v1/analytics/ask-ai?deployment_type=sponsored_conversation", {
    headers: bearer(world.key),
  });
  const body = await res.json();
  // Session D: its first event is an `embed` load; from the impression on it is a sponsored conversation.
  assert.deepEqual(body.summary, {
    widget_loads: 1,
    viewable_sessions: 1,
    engagement_queries: 2,
    total_clicks: 2,
    article_clicks: 1,
    cta_clicks: 1,
    sessions: 1,
    total_session_time_seconds: 10,
    avg_session_duration_seconds: 10,
    viewability_rate: 100,
    engagement_rate: 200,
    engagement_session_rate: 100,
    query_to_click_rate: 100,
  });
  const day = body.daily_breakdown.find((d: { date: string }) => d.date === "2026-11-22");
  assert.deepEqual(day, {
    date: "2026-11-22",
    widget_loads: 1,
    viewable_sessions: 1,
    engagement_queries: 2,
    total_clicks: 2,
    sessions: 1,
  });
});

Deno.test("ask-ai: every filter gives a self-consistent block whose daily rows add up to its summary", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const filters = [
    "",
    "?deployment_type=sponsored_conversation",
    "?deployment_type=embed",
    "?deployment_type=brand_agent",
    "?placement_id=pl_1",
    "?placement_id=pl_2",
    "?widget_id=wd_main",
    "?creative_id=cr_1001",
    "?creative_id=pub_cr_9",
    "?publisher_id=pub_42",
    "?line_item_id=li_7&deployment_type=sponsored_conversation",
    "?timezone=Pacific/Kiritimati&deployment_type=sponsored_conversation",
  ];
  for (const f of filters) {
    const res = await world.w.app.request(`/v1/analytics/ask-ai${f}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, f);
    const body = await res.json();
    assertSelfConsistent(body.summary, f || "(none)");
    for (const k of ["widget_loads", "viewable_sessions", "engagement_queries", "total_clicks", "sessions"]) {
      const sum = body.daily_breakdown.reduce((n: number, d: Record<string, number>) => n + d[k]!, 0);
      assert.equal(sum, body.summary[k], `${f}: ${k}`);
    }
  }
});
