import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { familyApp } from "../../routes/family.ts";
import { byClientAddress, publicRateLimit } from "../../routes/middleware/public_limits.ts";
import { memoryLogger } from "../../core/log.ts";

Deno.test("FixedWindowLimiter.hit(key, cost) grants a cost whole or not at all, and a refusal counts nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:30Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "t", limit: 1000, windowS: 60 });
    assert.deepEqual((await limiter.hit("a", 600)).remaining, 400);
    const refused = await limiter.hit("a", 500);
    assert.equal(refused.allowed, false);
    assert.equal(refused.remaining, 400, "the refused 500 did not use the 400 left");
    assert.equal(refused.retryAfterS, 30);
    assert.equal((await limiter.hit("a", 400)).allowed, true);
    assert.equal((await limiter.hit("a")).allowed, false);
    // Concurrent costs of one key: in arrival order, each whole or refused, never more than the limit.
    const b = await Promise.all([300, 300, 300, 300, 50].map((n) => limiter.hit("b", n)));
    assert.deepEqual(b.map((r) => r.allowed), [true, true, true, false, true]);
    assert.equal((await kv.get<number>(["rate", "t", "b", Date.parse("2026-11-22T12:00:00Z")])).value, 950);
  } finally {
    kv.close();
  }
});

Deno.test("FixedWindowLimiter.refund(key) gives back counted units of the current window, never below zero", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:30Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "t", limit: 2, windowS: 60 });
    // Counted before the outcome is known, given back when it turns out not to count: a limit on failures only.
    const [a, b] = await Promise.all([limiter.hit("k"), limiter.hit("k")]);
    assert.ok(a.allowed && b.allowed);
    assert.equal((await limiter.hit("k")).allowed, false, "parallel hits cannot slip under the limit");
    await Promise.all([limiter.refund("k"), limiter.refund("k"), limiter.refund("k")]);
    assert.equal((await kv.get<number>(["rate", "t", "k", Date.parse("2026-11-22T12:00:00Z")])).value, 0);
    assert.equal((await limiter.hit("k", 2)).remaining, 0);
    clock.advance(60_000);
    await limiter.refund("k");
    assert.equal((await limiter.hit("k", 2)).allowed, true, "a new window starts at zero");
  } finally {
    kv.close();
  }
});

Deno.test("publicRateLimit() answers 429 {message} with Retry-After per key, before the handler runs", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "w", limit: 2, windowS: 60 });
    // A message-family app answers its errors with the root's handler (routes/family.ts): as the root.
    const app = familyApp("message", memoryLogger());
    app.onError(createErrorHandler(memoryLogger(), "message"));
    let ran = 0;
    app.use("*", publicRateLimit({ limiter, scope: "address", key: byClientAddress(1) }));
    app.get("/ask", (c) => {
      ran++;
      return c.text("ok");
    });
    const from = (address: string) => app.request("/ask", { headers: { "x-forwarded-for": address } });
    assert.equal((await from("203.0.113.1")).status, 200);
    assert.equal((await from("203.0.113.1")).status, 200);
    const over = await from("203.0.113.1");
    assert.equal(over.status, 429);
    assert.equal(over.headers.get("retry-after"), "60");
    assert.deepEqual(await over.json(), { message: "rate limit exceeded: too many requests from this address" });
    assert.equal(ran, 2);
    assert.equal((await from("203.0.113.2")).status, 200, "another address has its own bucket");
  } finally {
    kv.close();
  }
});

Deno.test("publicRateLimit() by address counts an IPv6 /64 as one client", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "v6", limit: 3, windowS: 60 });
    // A message-family app answers its errors with the root's handler (routes/family.ts): as the root.
    const app = familyApp("message", memoryLogger());
    app.onError(createErrorHandler(memoryLogger(), "message"));
    app.use("*", publicRateLimit({ limiter, scope: "address", key: byClientAddress(1) }));
    app.get("/", (c) => c.text("ok"));
    const from = (address: string) => app.request("/", { headers: { "x-forwarded-for": address } });
    const statuses = [];
    for (let i = 1; i <= 5; i++) statuses.push((await from(`2001:db8:7:9::${i.toString(16)}`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    assert.equal((await from("2001:db8:7:a::1")).status, 200, "the next /64 is another client");
  } finally {
    kv.close();
  }
});

Deno.test("publicRateLimit() by address: a trusted proxy's hop written with a port is that address, whatever the port", async () => {
  // Some balancers (Azure Application Gateway, for one) write `ip:port` into X-Forwarded-For: the
  // port, new with every connection, made each connection a fresh bucket.
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const limiter = new FixedWindowLimiter(kv, clock, { scope: "port", limit: 2, windowS: 60 });
    const app = familyApp("message", memoryLogger());
    app.onError(createErrorHandler(memoryLogger(), "message"));
    app.use("*", publicRateLimit({ limiter, scope: "address", key: byClientAddress(1) }));
    app.get("/", (c) => c.text("ok"));
    const from = (hop: string) => app.request("/", { headers: { "x-forwarded-for": `10.9.9.9, ${hop}` } });
    const v4 = [];
    for (const port of [50001, 50002, 50003]) v4.push((await from(`198.51.100.7:${port}`)).status);
    assert.deepEqual(v4, [200, 200, 429]);
    assert.equal((await from("198.51.100.7")).status, 429, "the same client without a port");
    const v6 = [];
    for (const hop of ["[2001:db8:5:6::1]:40001", "[2001:db8:5:6::2]:40002", "2001:db8:5:6::3"]) {
      v6.push((await from(hop)).status);
    }
    assert.deepEqual(v6, [200, 200, 429], "bracketed IPv6 with a port is its /64 too");
  } finally {
    kv.close();
  }
});
