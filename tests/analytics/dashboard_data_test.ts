import { dayInZone } from "../../analytics/timezone.ts";
import assert from "node:assert/strict";
import { seedDemo } from "../../fixtures/demo.ts";
import { demoEventsStep } from "../../fixtures/demo_events.ts";
import { DASHBOARD_PANELS } from "../../routes/analytics/dashboard_data.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

type Line = { panel: string; status: number; cache?: string; body: Record<string, unknown> };

/**
 * The demo tenant, with its 30 days of events unless `events` is false (the rate-limit and view
 * checks read no figure; the events are most of the seed's cost).
 */
async function demoWorld(env: Record<string, string> = {}, { events = true }: { events?: boolean } = {}) {
  const w = await createTestWorld({ env });
  const seeded = await seedDemo(w.deps, events ? [demoEventsStep] : []);
  return Object.assign(w, { key: seeded.apiKey!, ids: seeded.ids });
}

const lines = (text: string): Line[] => text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));

Deno.test("GET /v1/analytics/dashboard streams every panel, each the same answer as its own endpoint", async () => {
  await using w = await demoWorld();
  const view = "start_date=2026-11-10&end_date=2026-11-22&timezone=Europe/Paris&placement_id=pl_top";
  const res = await w.app.request(`/v1/analytics/dashboard?${view}&compare=previous_period`, {
    headers: bearer(w.key),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^application\/x-ndjson/);
  assert.equal(res.headers.get("x-cache"), "BYPASS"); // the stream itself is never cached
  const got = lines(await res.text());
  // Each line says how its panel's answer was found: computed now, realtime never cached.
  for (const l of got) assert.equal(l.cache, l.panel === "realtime" ? "BYPASS" : "MISS", l.panel);
  assert.deepEqual(got.map((l) => l.panel).sort(), [...DASHBOARD_PANELS].sort());
  assert.ok(got.every((l) => l.status === 200), JSON.stringify(got.filter((l) => l.status !== 200)));
  const parisToday = dayInZone(w.clock.now(), "Europe/Paris");
  const own: Record<string, string> = {
    "ask-ai": `ask-ai?${view}&compare=previous_period`,
    "realtime": "realtime?timezone=Europe/Paris",
    "today": `ask-ai?start_date=${parisToday}&end_date=${parisToday}&timezone=Europe/Paris&placement_id=pl_top`,
    "articles": "articles?start_date=2026-11-10&end_date=2026-11-22&timezone=Europe/Paris&limit=10",
    "agents": "agents?start_date=2026-11-10&end_date=2026-11-22&timezone=Europe/Paris&limit=10",
    "by-placement": `ask-ai/breakdown?${view}&dimension=placement_id&limit=10`,
    "by-deployment": `ask-ai/breakdown?${view}&dimension=deployment_type&limit=10`,
    "by-referrer": `ask-ai/breakdown?${view}&dimension=referring_url&limit=10`,
    "session-intelligence": `session-intelligence?${view}`,
    "logs": `ask-ai/logs?${view}&limit=20`,
  };
  for (const line of got) {
    const single = await w.app.request(`/v1/analytics/${own[line.panel]}`, { headers: bearer(w.key) });
    assert.equal(single.status, 200, line.panel);
    // The same cache entry as the panel's own endpoint.
    if (line.panel !== "realtime") assert.equal(single.headers.get("x-cache"), "HIT", line.panel);
    assert.deepEqual(line.body, await single.json(), line.panel);
  }
  const again = await w.app.request(`/v1/analytics/dashboard?${view}&compare=previous_period`, {
    headers: bearer(w.key),
  });
  for (const l of lines(await again.text())) {
    assert.equal(l.cache, l.panel === "realtime" ? "BYPASS" : "HIT", l.panel);
  }
  const summary = got.find((l) => l.panel === "ask-ai")!.body;
  assert.ok("comparison" in summary);
  assert.ok((summary.summary as { sessions: number }).sessions > 0);
});

Deno.test("GET /v1/analytics/dashboard without dates is the last 7 whole days; today so far is its own panel", async () => {
  await using w = await demoWorld();
  const zone = "America/New_York";
  const today = dayInZone(w.clock.now(), zone);
  const day = (n: number) => new Date(Date.parse(`${today}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
  const res = await w.app.request(`/v1/analytics/dashboard?timezone=${zone}&compare=previous_period`, {
    headers: bearer(w.key),
  });
  const got = lines(await res.text());
  const askAi = got.find((l) => l.panel === "ask-ai")!.body as {
    filters: Record<string, string>;
    daily_breakdown: { date: string }[];
    comparison: { start_date: string; end_date: string };
  };
  // Whole days only, compared with as many whole days just before: like for like.
  assert.deepEqual([askAi.filters.start_date, askAi.filters.end_date], [day(-7), day(-1)]);
  assert.equal(askAi.daily_breakdown.at(-1)!.date, day(-1));
  assert.deepEqual([askAi.comparison.start_date, askAi.comparison.end_date], [day(-14), day(-8)]);
  const todayPanel = got.find((l) => l.panel === "today")!.body as {
    filters: Record<string, string>;
    comparison?: unknown;
  };
  assert.deepEqual([todayPanel.filters.start_date, todayPanel.filters.end_date], [today, today]);
  assert.equal(todayPanel.comparison, undefined);
  const own = await w.app.request(`/v1/analytics/ask-ai?start_date=${today}&end_date=${today}&timezone=${zone}`, {
    headers: bearer(w.key),
  });
  assert.deepEqual(todayPanel, await own.json());
});

Deno.test("GET /v1/analytics/dashboard counts once against the rate limit and checks the view before streaming", async () => {
  await using w = await demoWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "3" }, { events: false });
  const call = (q = "") => w.app.request(`/v1/analytics/dashboard${q}`, { headers: bearer(w.key) });
  const bad: [string, string][] = [
    ["?timezone=Mars/Olympus", "timezone must be a valid IANA time zone name"],
    ["?compare=last_week", "compare: must be one of previous_period, previous_year"],
    ["?start_date=2026-13-01", "start_date must be a valid date in YYYY-MM-DD format"],
  ];
  for (const [q, message] of bad) {
    const res = await call(q);
    assert.equal(res.status, 400, q);
    assert.deepEqual(await res.json(), { message });
  }
  // Three requests were spent; the fourth is over the limit however many panels it would carry.
  const limited = await call();
  assert.equal(limited.status, 429);
  await limited.body?.cancel();

  await using w2 = await demoWorld({}, { events: false });
  const other = await w2.tenantWithKey("Other");
  const foreign = await w2.app.request(`/v1/analytics/dashboard?widget_id=${w2.ids.widgetId}`, {
    headers: bearer(other.key),
  });
  assert.equal(foreign.status, 400);
  assert.deepEqual(await foreign.json(), { message: "widget_id not found" });
  const twice = [await w2.app.request("/v1/analytics/dashboard", { headers: bearer(w2.key) })];
  twice.push(await w2.app.request("/v1/analytics/dashboard", { headers: bearer(w2.key) }));
  for (const r of twice) assert.equal(r.status, 200);
  assert.equal(
    Number(twice[0]!.headers.get("x-ratelimit-remaining")) - Number(twice[1]!.headers.get("x-ratelimit-remaining")),
    1,
  );
  for (const r of twice) await r.body?.cancel();
  const anonymous = await w2.app.request("/v1/analytics/dashboard");
  assert.equal(anonymous.status, 401);
  await anonymous.body?.cancel();
  const doc = await (await w2.app.request("/openapi.json")).json();
  assert.ok(doc.paths["/v1/analytics/dashboard"]?.get, "documented");
});
