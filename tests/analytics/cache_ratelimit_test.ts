import assert from "node:assert/strict";
import { AnalyticsCache } from "../../analytics/cache.ts";
import { FixedClock } from "../../core/clock.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

Deno.test("analytics cache: MISS, then HIT with the same body; no-cache is BYPASS and refreshes", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = (qs = "", headers: Record<string, string> = {}) =>
    world.w.app.request(`/v1/analytics/ask-ai${qs}`, { headers: { ...bearer(world.key), ...headers } });
  let res = await get("?widget_id=wd_main");
  assert.equal(res.headers.get("x-cache"), "MISS");
  const first = await res.text();
  res = await get("?widget_id=wd_main");
  assert.equal(res.headers.get("x-cache"), "HIT");
  assert.equal(await res.text(), first);
  // Filter order and resolved default dates normalise to the same key.
  res = await get("?end_date=2026-11-22&widget_id=wd_main&start_date=2026-11-16");
  assert.equal(res.headers.get("x-cache"), "HIT");
  await res.body?.cancel();

  // New events arrive: the cached answer stays until refreshed with no-cache.
  await world.w.deps.events.record([{ event_type: "widget_load", widget_id: "wd_main", session_id: "s_new" }]);
  await world.w.deps.events.flush();
  res = await get("?widget_id=wd_main");
  assert.equal((await res.json()).summary.widget_loads, 5);
  res = await get("?widget_id=wd_main", { "cache-control": "no-cache" });
  assert.equal(res.headers.get("x-cache"), "BYPASS");
  assert.equal((await res.json()).summary.widget_loads, 6);
  res = await get("?widget_id=wd_main");
  assert.equal(res.headers.get("x-cache"), "HIT");
  assert.equal((await res.json()).summary.widget_loads, 6);
});

Deno.test("analytics cache: entries expire after the TTL (30 min by default) and are per tenant", async () => {
  await using world = await analyticsWorld();
  const get = (key = world.key) => world.w.app.request("/v1/analytics/session-intelligence", { headers: bearer(key) });
  let res = await get();
  assert.equal(res.headers.get("x-cache"), "MISS");
  await res.body?.cancel();
  res = await get(world.other.key);
  assert.equal(res.headers.get("x-cache"), "MISS");
  await res.body?.cancel();
  world.w.clock.advance(29 * 60_000);
  res = await get();
  assert.equal(res.headers.get("x-cache"), "HIT");
  await res.body?.cancel();
  world.w.clock.advance(60_001);
  res = await get();
  assert.equal(res.headers.get("x-cache"), "MISS");
  await res.body?.cancel();
});

Deno.test("analytics cache: ANALYTICS_CACHE_TTL_S=0 disables it (X-Cache DISABLED)", async () => {
  await using world = await analyticsWorld({ ANALYTICS_CACHE_TTL_S: "0" });
  for (let i = 0; i < 2; i++) {
    const res = await world.w.app.request("/v1/analytics/ask-ai/logs", { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-cache"), "DISABLED");
    await res.body?.cancel();
  }
});

Deno.test("AnalyticsCache stores values over 64 KiB in chunks and reads them back whole", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const cache = new AnalyticsCache(kv, clock, 60);
    const key = await cache.key("tn_1", "ask-ai", { b: "2", a: "1" });
    assert.deepEqual(key, await cache.key("tn_1", "ask-ai", { a: "1", b: "2" }));
    const big = JSON.stringify({ rows: Array.from({ length: 20_000 }, (_, i) => ({ i, s: "é".repeat(5) })) });
    assert.ok(big.length > 300_000);
    await cache.set(key, big);
    assert.equal(await cache.get(key), big);
    clock.advance(60_001);
    assert.equal(await cache.get(key), null);
  } finally {
    kv.close();
  }
});

Deno.test("analytics rate limit: X-RateLimit-* and RateLimit headers, then 429 with Retry-After", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "2" });
  world.w.clock.set("2026-11-22T12:00:15Z");
  const get = (key = world.key) => world.w.app.request("/v1/analytics/ask-ai", { headers: bearer(key) });
  let res = await get();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-ratelimit-limit"), "2");
  assert.equal(res.headers.get("x-ratelimit-remaining"), "1");
  assert.equal(res.headers.get("x-ratelimit-reset"), "45");
  assert.equal(res.headers.get("ratelimit-policy"), '"default";q=2;w=60');
  assert.equal(res.headers.get("ratelimit"), '"default";r=1;t=45');
  await res.body?.cancel();
  res = await get();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
  await res.body?.cancel();
  res = await get();
  assert.equal(res.status, 429);
  assert.deepEqual(await res.json(), { message: "rate limit exceeded" });
  assert.equal(res.headers.get("retry-after"), "45");
  assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
  assert.equal(res.headers.get("ratelimit"), '"default";r=0;t=45');
  // Another key has its own budget; the next window starts afresh.
  res = await get(world.other.key);
  assert.equal(res.status, 200);
  await res.body?.cancel();
  world.w.clock.advance(45_000);
  res = await get();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-ratelimit-remaining"), "1");
  assert.equal(res.headers.get("x-ratelimit-reset"), "60");
  await res.body?.cancel();
});

Deno.test("analytics cache: a HIT echoes the caller's own filters, never those of the request that filled it", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  for (const path of ["ask-ai", "sponsored-conversations"]) {
    const get = async (qs: string) => {
      const res = await world.w.app.request(`/v1/analytics/${path}${qs}`, { headers: bearer(world.key) });
      assert.equal(res.status, 200);
      return { cache: res.headers.get("x-cache"), body: await res.json() };
    };
    const spelled = await get("?start_date=2026-11-16&end_date=2026-11-22");
    assert.equal(spelled.cache, "MISS");
    assert.deepEqual(spelled.body.filters, { start_date: "2026-11-16", end_date: "2026-11-22" });
    const plain = await get("");
    assert.equal(plain.cache, "HIT", path);
    assert.deepEqual(plain.body.filters, {}, path);
    const endOnly = await get("?end_date=2026-11-22");
    assert.equal(endOnly.cache, "HIT", path);
    assert.deepEqual(endOnly.body.filters, { end_date: "2026-11-22" }, path);
    assert.deepEqual(endOnly.body.summary, spelled.body.summary, path);
  }
});
