import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld } from "./_fixture.ts";

const ENDPOINTS = ["ask-ai", "ask-ai/logs", "sponsored-conversations", "session-intelligence"];

async function expect400(world: Awaited<ReturnType<typeof analyticsWorld>>, path: string, message: string) {
  const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(world.key) });
  assert.equal(res.status, 400, path);
  assert.deepEqual(await res.json(), { message }, path);
}

Deno.test("analytics endpoints: 400 for a malformed or impossible date", async () => {
  await using world = await analyticsWorld();
  for (const e of ENDPOINTS) {
    await expect400(world, `${e}?start_date=2026-1-01`, "start_date must be a valid date in YYYY-MM-DD format");
    await expect400(world, `${e}?start_date=2026-02-30`, "start_date must be a valid date in YYYY-MM-DD format");
    await expect400(world, `${e}?end_date=yesterday`, "end_date must be a valid date in YYYY-MM-DD format");
  }
});

Deno.test("analytics endpoints: 400 `end_date must be on or after start_date`", async () => {
  await using world = await analyticsWorld();
  for (const e of ENDPOINTS) {
    await expect400(world, `${e}?start_date=2026-11-10&end_date=2026-11-09`, "end_date must be on or after start_date");
  }
  const res = await world.w.app.request("/v1/analytics/ask-ai?start_date=2026-11-10&end_date=2026-11-10", {
    headers: bearer(world.key),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).daily_breakdown.length, 1);
});

Deno.test("analytics endpoints: a window of 365 days passes, 366 is a 400", async () => {
  await using world = await analyticsWorld();
  for (const e of ENDPOINTS) {
    await expect400(world, `${e}?start_date=2025-01-01&end_date=2026-01-02`, "date range must not exceed 365 days");
  }
  const res = await world.w.app.request("/v1/analytics/ask-ai?start_date=2025-01-01&end_date=2026-01-01", {
    headers: bearer(world.key),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).daily_breakdown.length, 366);
});

Deno.test("analytics endpoints: dates default to the trailing 7 days ending today (UTC, injected clock)", async () => {
  await using world = await analyticsWorld();
  world.w.clock.set("2026-03-01T23:59:59Z");
  const get = async (
    qs: string,
  ) => (await (await world.w.app.request(`/v1/analytics/ask-ai${qs}`, { headers: bearer(world.key) })).json());
  let body = await get("");
  assert.deepEqual(body.filters, {});
  assert.deepEqual(body.daily_breakdown.map((d: { date: string }) => d.date), [
    "2026-02-23",
    "2026-02-24",
    "2026-02-25",
    "2026-02-26",
    "2026-02-27",
    "2026-02-28",
    "2026-03-01",
  ]);
  body = await get("?start_date=2026-02-27");
  assert.deepEqual(body.filters, { start_date: "2026-02-27" });
  assert.equal(body.daily_breakdown.at(-1).date, "2026-03-01");
  body = await get("?end_date=2026-01-10");
  assert.equal(body.daily_breakdown[0].date, "2026-01-04");
  assert.equal(body.daily_breakdown.length, 7);
});

Deno.test("analytics endpoints: 400 `widget_id not found` for an unknown or other-tenant widget", async () => {
  await using world = await analyticsWorld();
  for (const e of ["ask-ai", "ask-ai/logs", "session-intelligence"]) {
    await expect400(world, `${e}?widget_id=wd_other`, "widget_id not found");
    await expect400(world, `${e}?widget_id=wd_nope`, "widget_id not found");
  }
});

Deno.test("sponsored-conversations: 400 `agent_id not found` for an unknown or other-tenant agent", async () => {
  await using world = await analyticsWorld();
  await expect400(world, "sponsored-conversations?agent_id=am_other", "agent_id not found");
  await expect400(world, "sponsored-conversations?agent_id=am_nope", "agent_id not found");
});

Deno.test("ask-ai/logs: page must be >= 1 and limit a positive integer", async () => {
  await using world = await analyticsWorld();
  await expect400(world, "ask-ai/logs?page=0", "page must be an integer >= 1");
  await expect400(world, "ask-ai/logs?page=-1", "page must be an integer >= 1");
  await expect400(world, "ask-ai/logs?page=1.5", "page must be an integer >= 1");
  await expect400(world, "ask-ai/logs?limit=0", "limit must be an integer >= 1");
  await expect400(world, "ask-ai/logs?limit=abc", "limit must be an integer >= 1");
});

Deno.test("analytics endpoints: 401 without or with a non-ak_ key, 403 for unknown or revoked keys", async () => {
  await using world = await analyticsWorld();
  for (const e of ENDPOINTS) {
    let res = await world.w.app.request(`/v1/analytics/${e}`);
    assert.equal(res.status, 401);
    assert.ok(typeof (await res.json()).message === "string");
    res = await world.w.app.request(`/v1/analytics/${e}`, { headers: bearer("sk_123") });
    assert.equal(res.status, 401);
    await res.body?.cancel();
    res = await world.w.app.request(`/v1/analytics/${e}`, { headers: bearer("ak_" + "x".repeat(43)) });
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), { message: "Invalid API key" });
  }
  await world.w.deps.apiKeys.revoke(world.keyId);
  const res = await world.w.app.request("/v1/analytics/ask-ai", { headers: bearer(world.key) });
  assert.equal(res.status, 403);
  assert.deepEqual(await res.json(), { message: "API key revoked" });
});
