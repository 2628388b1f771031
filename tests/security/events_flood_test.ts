/**
 * Issue 24, finding 2 (first half): `/v1/events` trusted a public widget id plus an `Origin`
 * header and had no limit; four senders put 12,000 events into another tenant's widget in 10 s.
 * Now widget batches count their events per client address and per widget (per minute) and per
 * widget per UTC day; a refused batch is 429 with `Retry-After` and is stored nowhere.
 */
import assert from "node:assert/strict";
import type { TestWorld } from "../_helpers.ts";
import { analyticsWorld } from "../analytics/_fixture.ts";

const ORIGIN = "https://news.example";

/** A forged batch of `n` widget events for wd_main, each with its own session. */
function forged(batch: number, n = 500) {
  return {
    widget_id: "wd_main",
    events: Array.from({ length: n }, (_, i) => ({
      event_type: "query",
      session_id: `forged-${batch}-${i}`,
      interaction_type: "free_form",
      prompt: "buy cheap watches",
    })),
  };
}

function post(w: TestWorld, body: unknown, address?: string) {
  return w.app.request("/v1/events", {
    method: "POST",
    headers: {
      origin: ORIGIN,
      "content-type": "application/json",
      ...(address ? { "x-forwarded-for": address } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** Events waiting in the write-ahead log. */
async function walEvents(w: TestWorld): Promise<number> {
  let n = 0;
  for await (const e of w.deps.kv.list<Uint8Array>({ prefix: ["ev_wal"] })) {
    if (e.value instanceof Uint8Array) n += new TextDecoder().decode(e.value).split("\n").filter(Boolean).length;
  }
  return n;
}

/** Every KV entry (a flood must not add any). */
async function kvEntries(w: TestWorld): Promise<number> {
  let n = 0;
  for await (const _ of w.deps.kv.list({ prefix: [] })) n++;
  return n;
}

Deno.test("POST /v1/events: 12,000 forged events from one address are refused after the per-address limit and add nothing to KV", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  // The default limit is 1,200 events per address per minute: two batches of 500 fit.
  for (let b = 0; b < 2; b++) assert.equal((await post(w, forged(b))).status, 202);
  assert.equal(await walEvents(w), 1000);
  const before = await kvEntries(w);
  for (let b = 2; b < 24; b++) {
    const res = await post(w, forged(b));
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    // The widget (another origin) may read when to retry.
    assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
    assert.equal(res.headers.get("access-control-expose-headers"), "Retry-After");
    assert.deepEqual(await res.json(), { message: "rate limit exceeded: too many requests from this address" });
  }
  assert.equal(await kvEntries(w), before, "refused batches leave no trace in KV");
  assert.equal(await walEvents(w), 1000);
  // A minute later the address may send again.
  w.clock.advance(60_000);
  assert.equal((await post(w, forged(99, 10))).status, 202);
});

Deno.test("POST /v1/events: four senders are bounded by the per-widget limit, and a widget by its daily quota", async () => {
  await using world = await analyticsWorld({
    TRUST_PROXY: "1",
    EVENTS_PER_MIN_PER_WIDGET: "2000",
    EVENTS_PER_DAY_PER_WIDGET: "3000",
  });
  const { w } = world;
  // Start of a UTC day, so the day does not end mid-test.
  w.clock.set(new Date(Math.floor(w.clock.now().getTime() / 86_400_000) * 86_400_000 + 3_600_000));
  const senders = ["203.0.113.1", "203.0.113.2", "198.51.100.7", "192.0.2.40"];
  const statuses: number[] = [];
  for (let round = 0; round < 6; round++) {
    for (const [i, address] of senders.entries()) statuses.push((await post(w, forged(round * 4 + i), address)).status);
  }
  assert.equal(statuses.filter((s) => s === 202).length, 4, "2,000 events per widget per minute");
  assert.equal(statuses.filter((s) => s === 429).length, 20);
  const refused = await post(w, forged(100), "203.0.113.99");
  assert.deepEqual(await refused.json(), { message: "rate limit exceeded: too many requests for this widget" });

  // The next minutes: 1,000 more fit the day's 3,000, then the daily quota refuses.
  w.clock.advance(60_000);
  assert.equal((await post(w, forged(200), "203.0.113.1")).status, 202);
  assert.equal((await post(w, forged(201), "203.0.113.2")).status, 202);
  w.clock.advance(60_000);
  const daily = await post(w, forged(202), "203.0.113.3");
  assert.equal(daily.status, 429);
  assert.deepEqual(await daily.json(), { message: "rate limit exceeded: this widget's daily quota is used up" });
  // Retry-After points at the next UTC midnight.
  const retry = Number(daily.headers.get("retry-after"));
  const untilMidnight = 86_400 - (w.clock.now().getTime() / 1000) % 86_400;
  assert.ok(Math.abs(retry - untilMidnight) <= 1, `${retry} vs ${untilMidnight}`);
  assert.equal(await walEvents(w), 3000);
  // Another widget of the tenant has its own quota; the next day this one has a new one.
  assert.equal((await post(w, { ...forged(203, 5), widget_id: "wd_second" }, "203.0.113.4")).status, 202);
  w.clock.advance(retry * 1000);
  assert.equal((await post(w, forged(204, 5), "203.0.113.5")).status, 202);
});

Deno.test("POST /v1/events: a normal reader session (a few small batches a minute) is never limited", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  for (let minute = 0; minute < 30; minute++) {
    for (let b = 0; b < 6; b++) {
      const res = await post(w, {
        widget_id: "wd_main",
        events: [{ event_type: "heartbeat", session_id: "reader-1" }, {
          event_type: "heartbeat",
          session_id: "reader-1",
        }],
      });
      assert.equal(res.status, 202);
    }
    w.clock.advance(60_000);
  }
});
