import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

const ENDPOINTS = ["ask-ai", "ask-ai/logs", "sponsored-conversations", "session-intelligence"];

Deno.test("timezone: days are cut at local midnight and meta.timezone echoes the zone", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = async (qs: string) => {
    const res = await world.w.app.request(`/v1/analytics/ask-ai${qs}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200);
    return await res.json();
  };
  // UTC+14: sessions A and B (2026-11-20 10:00-11:00Z) and C (2026-11-21 09:00Z) fall on the local
  // 21st; D (2026-11-22 08:00Z) and the server query (2026-11-21 12:00Z) on the 22nd.
  const kiri = await get("?widget_id=wd_main&timezone=Pacific/Kiritimati&start_date=2026-11-20&end_date=2026-11-23");
  assert.equal(kiri.meta.timezone, "Pacific/Kiritimati");
  assert.deepEqual(kiri.filters, { start_date: "2026-11-20", end_date: "2026-11-23", widget_id: "wd_main" });
  const days = Object.fromEntries(
    kiri.daily_breakdown.map((
      d: Record<string, unknown>,
    ) => [d.date, [d.widget_loads, d.sessions, d.engagement_queries]]),
  );
  assert.deepEqual(days, {
    "2026-11-20": [0, 0, 0],
    "2026-11-21": [4, 4, 6],
    "2026-11-22": [1, 1, 3],
    "2026-11-23": [0, 0, 0],
  });
  const utc = await get("?widget_id=wd_main&start_date=2026-11-20&end_date=2026-11-23");
  assert.equal(utc.meta.timezone, "UTC");
  assert.deepEqual(kiri.summary, utc.summary);

  // A one-day window in New York (UTC-5) ends at 05:00Z next day: session D's 08:00Z is outside.
  const ny = await get("?timezone=America/New_York&start_date=2026-11-21&end_date=2026-11-21");
  assert.equal(ny.summary.sessions, 2); // C and the second widget's load at 10:00Z
  assert.equal(ny.summary.engagement_queries, 4);
});

Deno.test("timezone: the default window ends today in that zone", async () => {
  await using world = await analyticsWorld();
  // The clock stands at 2026-11-22T12:00Z: already the 23rd in Kiritimati.
  const res = await world.w.app.request("/v1/analytics/ask-ai?timezone=Pacific/Kiritimati", {
    headers: bearer(world.key),
  });
  const body = await res.json();
  assert.equal(body.daily_breakdown[0].date, "2026-11-17");
  assert.equal(body.daily_breakdown.at(-1).date, "2026-11-23");
});

Deno.test("timezone: an unknown or malformed zone is a 400 on every analytics endpoint, without echoing it", async () => {
  await using world = await analyticsWorld();
  for (const e of ENDPOINTS) {
    for (const tz of ["Mars/Olympus", "UTC'; DROP TABLE events; --", "../../etc", "x".repeat(200), "+05:00"]) {
      const res = await world.w.app.request(`/v1/analytics/${e}?timezone=${encodeURIComponent(tz)}`, {
        headers: bearer(world.key),
      });
      assert.equal(res.status, 400, `${e} ${tz}`);
      assert.deepEqual(await res.json(), { message: "timezone must be a valid IANA time zone name" });
    }
    const ok = await world.w.app.request(`/v1/analytics/${e}?timezone=Asia/Kolkata`, { headers: bearer(world.key) });
    assert.equal(ok.status, 200, e);
    const body = await ok.json();
    if (body.meta) assert.equal(body.meta.timezone, "Asia/Kolkata");
  }
});

Deno.test("timezone: part of the cache key, so a zone never gets another zone's answer", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  const get = (tz: string) =>
    world.w.app.request(`/v1/analytics/ask-ai?start_date=2026-11-21&end_date=2026-11-21${tz}`, {
      headers: bearer(world.key),
    });
  const utc = await get("");
  assert.equal(utc.headers.get("x-cache"), "MISS");
  await utc.body?.cancel();
  const kiri = await get("&timezone=Pacific/Kiritimati");
  assert.equal(kiri.headers.get("x-cache"), "MISS");
  assert.equal((await kiri.json()).meta.timezone, "Pacific/Kiritimati");
});
