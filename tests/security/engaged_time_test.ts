/**
 * Engaged time is 5 s per `heartbeat`, and the widget sends one every 5 s of attention. A batch of
 * heartbeats for one session at one instant must not report a reader who stayed for half an hour.
 */
import assert from "node:assert/strict";
import type { TestWorld } from "../_helpers.ts";
import { analyticsWorld } from "../analytics/_fixture.ts";

const ORIGIN = "https://news.example";

function post(w: TestWorld, events: unknown[]) {
  return w.app.request("/v1/events", {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json", "x-forwarded-for": "198.51.100.1" },
    body: JSON.stringify({ widget_id: "wd_main", events }),
  });
}

async function summary(w: TestWorld, key: string) {
  await w.deps.events.flush();
  const res = await w.app.request("/v1/analytics/ask-ai?widget_id=wd_main", {
    headers: { authorization: `Bearer ${key}`, "cache-control": "no-cache" },
  });
  return (await res.json()).summary;
}

const heartbeats = (session: string, n: number) =>
  Array.from({ length: n }, () => ({ event_type: "heartbeat", session_id: session }));

Deno.test("POST /v1/events: 400 heartbeats of one session at one instant are not 2,000 s of engaged time", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  const res = await post(w, [{ event_type: "widget_load", session_id: "s_forged" }, ...heartbeats("s_forged", 400)]);
  assert.equal(res.status, 202);
  // The load and the heartbeats a session that lived 0 s can have (one, plus one of slack).
  assert.deepEqual(await res.json(), { accepted: 3 });
  // Sent again one by one, still at that instant: nothing more.
  for (let i = 0; i < 5; i++) {
    assert.deepEqual(await (await post(w, heartbeats("s_forged", 1))).json(), { accepted: 0 });
  }
  const s = await summary(w, world.key);
  assert.equal(s.sessions, 1);
  assert.equal(s.total_session_time_seconds, 10);
});

Deno.test("POST /v1/events: a reader's heartbeats every 5 s, or queued offline and sent together, all count", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  assert.equal((await post(w, [{ event_type: "widget_load", session_id: "s_reader" }])).status, 202);
  // Ten minutes of attention, one heartbeat per batch every 5 s (a little early or late by the network).
  for (let i = 1; i <= 120; i++) {
    w.clock.advance(i % 2 ? 4_900 : 5_100);
    assert.deepEqual(await (await post(w, heartbeats("s_reader", 1))).json(), { accepted: 1 });
  }
  // Offline for a minute: the twelve heartbeats of that minute arrive in one batch.
  w.clock.advance(60_000);
  assert.deepEqual(await (await post(w, heartbeats("s_reader", 12))).json(), { accepted: 12 });
  const s = await summary(w, world.key);
  assert.equal(s.sessions, 1);
  assert.equal(s.total_session_time_seconds, 132 * 5);
});

Deno.test("POST /v1/events: the public widget path refuses a ts over 10 minutes back; an API key's batch may go back 30 days", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  const at = (msBack: number) => new Date(w.clock.now().getTime() - msBack).toISOString();
  // A forger stretching a visit back an hour to make room for heartbeats, or writing into a closed day.
  for (const back of [11 * 60_000, 3600_000, 3 * 86_400_000]) {
    const res = await post(w, [{ event_type: "widget_load", session_id: "s_back", ts: at(back) }]);
    assert.equal(res.status, 422);
    assert.match((await res.json()).message, /ts: must not be more than 10 minutes in the past here/);
  }
  // The widget's own retries (it sends no ts) and a page's few minutes of queue are within it.
  const recent = await post(w, [{ event_type: "widget_load", session_id: "s_back", ts: at(9 * 60_000) }]);
  assert.deepEqual(await recent.json(), { accepted: 1 });
  // A publisher's server, with its key, may send what happened days ago.
  const server = await w.app.request("/v1/events", {
    method: "POST",
    headers: { authorization: `Bearer ${world.key}`, "content-type": "application/json" },
    body: JSON.stringify({ events: [{ event_type: "widget_load", widget_id: "wd_main", ts: at(3 * 86_400_000) }] }),
  });
  assert.deepEqual(await server.json(), { accepted: 1 });
});

Deno.test("POST /v1/events: a batch sent again (same event ids) uses no heartbeat budget; the reader's later heartbeats all count", async () => {
  await using world = await analyticsWorld();
  const w = world.w;
  const beat = (n: number) => ({
    event_id: `ev_beat_${String(n).padStart(6, "0")}`,
    event_type: "heartbeat",
    session_id: "s_retry",
  });
  assert.equal((await post(w, [{ event_type: "widget_load", session_id: "s_retry" }])).status, 202);
  let n = 0;
  // Five minutes of attention, one heartbeat every 5 s; every batch's answer is lost once, so the
  // widget sends each batch twice (the second try a few seconds later, the same ids).
  for (let i = 0; i < 60; i++) {
    w.clock.advance(4_000);
    const batch = [beat(++n)];
    assert.deepEqual(await (await post(w, batch)).json(), { accepted: 1 });
    w.clock.advance(1_000);
    assert.deepEqual(await (await post(w, batch)).json(), { accepted: 1 }, "the retry is in the log: stored once");
  }
  const s = await summary(w, world.key);
  assert.equal(s.sessions, 1);
  assert.equal(s.total_session_time_seconds, 60 * 5, "every heartbeat counts, once");
});
