/**
 * Round 6 left: `POST /v1/events` read up to 8 MiB before it knew the widget, the origin or any key.
 * A sender the route would refuse is now refused before its body is read: an origin no widget
 * allows, an API key that does not authenticate, an address whose per-minute limit is spent. And a
 * batch of more than 500 events, read and decoded all the same, now counts against its address.
 */
import assert from "node:assert/strict";
import type { TestWorld } from "../_helpers.ts";
import { analyticsWorld } from "../analytics/_fixture.ts";

const ORIGIN = "https://news.example";

/** A batch as a stream that records whether it was read. */
function watched(batch: unknown) {
  const bytes = new TextEncoder().encode(JSON.stringify(batch));
  let pulled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled = true;
      controller.enqueue(bytes);
      controller.close();
    },
  }, { highWaterMark: 0 });
  return { stream, length: bytes.length, pulled: () => pulled };
}

const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ event_type: "query", session_id: `s-${i}`, prompt: "q" }));

async function post(w: TestWorld, body: ReturnType<typeof watched>, headers: Record<string, string>) {
  const res = await w.app.request("/v1/events", {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(body.length), ...headers },
    body: body.stream,
  });
  return { status: res.status, json: await res.json() };
}

Deno.test("POST /v1/events: an origin no widget allows, or none, is refused 403 before the body is read", async () => {
  await using world = await analyticsWorld();
  for (const headers of [{ origin: "https://attacker.example" }, { origin: "null" }, {} as Record<string, string>]) {
    const body = watched({ widget_id: "wd_main", events: events(1) });
    const out = await post(world.w, body, headers);
    assert.equal(out.status, 403);
    assert.deepEqual(out.json, { message: "widget_id not found or origin not allowed" });
    assert.equal(body.pulled(), false, JSON.stringify(headers));
  }
  const allowed = watched({ widget_id: "wd_main", events: events(1) });
  assert.equal((await post(world.w, allowed, { origin: ORIGIN })).status, 202);
  assert.equal(allowed.pulled(), true);
});

Deno.test("POST /v1/events: a malformed or unknown API key is refused before the body is read", async () => {
  await using world = await analyticsWorld();
  for (const [authorization, status] of [["Bearer nope", 401], [`Bearer ak_${"x".repeat(40)}`, 403]] as const) {
    const body = watched({ events: events(1) });
    const out = await post(world.w, body, { authorization });
    assert.equal(out.status, status, JSON.stringify(out.json));
    assert.equal(body.pulled(), false, authorization);
  }
  const body = watched({ events: events(1) });
  assert.equal((await post(world.w, body, { authorization: `Bearer ${world.key}` })).status, 202);
});

Deno.test("POST /v1/events: an address whose per-minute limit is spent is refused 429 before the body is read", async () => {
  await using world = await analyticsWorld();
  // The default limit is 1,200 events per address per minute.
  for (const n of [500, 500, 200]) {
    assert.equal(
      (await post(world.w, watched({ widget_id: "wd_main", events: events(n) }), { origin: ORIGIN })).status,
      202,
    );
  }
  const body = watched({ widget_id: "wd_main", events: events(1) });
  const out = await post(world.w, body, { origin: ORIGIN });
  assert.equal(out.status, 429);
  assert.deepEqual(out.json, { message: "rate limit exceeded: too many requests from this address" });
  assert.equal(body.pulled(), false);
});

Deno.test("POST /v1/events: batches of more than 500 events count against their address, then the next is refused unread", async () => {
  await using world = await analyticsWorld();
  const oversize = () => watched({ widget_id: "wd_main", events: events(501) });
  // 501 each: two fit in 1,200; the third does not (429) and spends what is left.
  assert.equal((await post(world.w, oversize(), { origin: ORIGIN })).status, 422);
  assert.equal((await post(world.w, oversize(), { origin: ORIGIN })).status, 422);
  assert.equal((await post(world.w, oversize(), { origin: ORIGIN })).status, 429);
  const next = oversize();
  assert.equal((await post(world.w, next, { origin: ORIGIN })).status, 429);
  assert.equal(next.pulled(), false);
  // A minute later the address may send again.
  world.w.clock.advance(60_000);
  assert.equal(
    (await post(world.w, watched({ widget_id: "wd_main", events: events(3) }), { origin: ORIGIN })).status,
    202,
  );
});
