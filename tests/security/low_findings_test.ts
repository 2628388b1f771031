/**
 * Finding 5, the low ones: slow bodies, client disconnects, the rate limiter under concurrency,
 * cross-origin checkout posts, the payproxy counters, the events CORS preflight, error bodies
 * that echoed input or library text, and shutdown under running handlers.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { memoryLogger } from "../../core/log.ts";
import { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";
import { analyticsWorld } from "../analytics/_fixture.ts";
import { challengesOf, createCommerceWorld, postJson } from "../commerce/_helpers.ts";
import { json, storefrontWorld } from "../storefront/_world.ts";

const enc = new TextEncoder();

/**
 * Sends raw bytes on a new connection; `answer` collects what comes back until the connection
 * closes or `until` matches it.
 */
async function rawRequest(port: number, head: string, until = /^$/) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(enc.encode(head));
  const answer = (async () => {
    let text = "";
    const buf = new Uint8Array(4096);
    while (!until.test(text)) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return text;
  })();
  return { conn, answer };
}

Deno.test("security: a request body that stalls is answered 408 with Connection: close", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, { bodyIdleTimeoutMs: 300 });
  // A sender the route reads a body for (a tenant's key): one it would refuse is refused unread.
  const { key } = await w.tenantWithKey();
  try {
    const started = performance.now();
    const { conn, answer } = await rawRequest(
      server.port,
      `POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100\r\n\r\n{"widget',
      /stalled[^}]*\}/,
    );
    const text = await answer;
    conn.close();
    assert.match(text, /^HTTP\/1\.1 408/);
    assert.match(text, /connection: close/i);
    assert.match(text, /Request body stalled: nothing arrived for 0.3 s/);
    // Deno.serve keeps the socket until the client goes (docs/security.md: the proxy's client_body_timeout).
    assert.ok(performance.now() - started < 5000);
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("security: a client that disconnects mid-body is logged as 499, never 500", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch);
  const { key } = await w.tenantWithKey();
  try {
    const { conn } = await rawRequest(
      server.port,
      `POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 1000\r\n\r\n{"a":',
    );
    await new Promise((r) => setTimeout(r, 50));
    conn.close();
    const deadline = Date.now() + 5000;
    let line: Record<string, unknown> | undefined;
    while (!line && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      line = w.log.lines.find((l) => l.msg === "request" && l.path === "/v1/events");
    }
    assert.ok(line, "the request was logged");
    assert.equal(line.status, 499);
    assert.ok(!w.log.lines.some((l) => l.level === "error"), "no error logged");
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("security: the rate limiter under concurrency: no 429 with quota left, never more than the limit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    const roomy = new FixedWindowLimiter(kv, clock, { scope: "t1", limit: 1000, windowS: 60 });
    const a = await Promise.all(Array.from({ length: 100 }, () => roomy.hit("client")));
    assert.equal(a.filter((r) => !r.allowed).length, 0, "100 concurrent under a limit of 1000: none refused");
    const tight = new FixedWindowLimiter(kv, clock, { scope: "t2", limit: 50, windowS: 60 });
    const b = await Promise.all(Array.from({ length: 100 }, () => tight.hit("client")));
    assert.equal(b.filter((r) => r.allowed).length, 50, "exactly the limit through");
    const remaining = b.filter((r) => r.allowed).map((r) => r.remaining).sort((x, y) => x - y);
    assert.deepEqual(remaining, Array.from({ length: 50 }, (_, i) => i), "each allowed hit has its own place");
  } finally {
    kv.close();
  }
});

Deno.test("security: a cross-origin or tokenless checkout post changes nothing", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const r = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "3.000000", checkout: true }),
    token,
  });
  assert.ok(challengesOf(r).length > 0);
  const url = (await r.json()).card.checkout.url as string;
  const page = await w.app.request(url, { headers: { host: w.host } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const post = (headers: Record<string, string>, fields: Record<string, string>) =>
    w.app.request(url, {
      method: "POST",
      headers: { host: w.host, "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  const attempts = [
    post({ origin: "https://evil.example", cookie }, { csrf, action: "cancel" }),
    post({ origin: "https://evil.example" }, { action: "cancel" }),
    post({}, { action: "cancel" }),
    post({ cookie }, { csrf: "A".repeat(43), action: "cancel" }),
    post({ origin: "https://evil.example", cookie }, { csrf, action: "pay", token: SANDBOX_TOKENS.card.success }),
  ];
  let accepted = 0;
  for (const res of await Promise.all(attempts)) {
    if (res.status !== 403) accepted++;
    await res.body?.cancel();
  }
  assert.equal(accepted, 0);
  const status = await (await w.app.request(url.replace("/checkout/", "/payments/"), { headers: { host: w.host } }))
    .json();
  assert.equal(status.status, "open", "still open: not cancelled, not paid");
});

Deno.test("security: /payproxy/metrics needs an operator key", async () => {
  await using w = await createTestWorld();
  let accepted = 0;
  for (const authorization of [undefined, "Bearer op_" + "A".repeat(43), "Bearer ak_" + "A".repeat(43), "Basic x"]) {
    const res = await w.app.request("/payproxy/metrics", { headers: authorization ? { authorization } : {} });
    if (res.status !== 401) accepted++;
    await res.body?.cancel();
  }
  assert.equal(accepted, 0);
  const { key } = await w.deps.operatorKeys.create();
  const ok = await w.app.request("/payproxy/metrics", { headers: { authorization: `Bearer ${key}` } });
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
});

Deno.test("security: the /v1/events preflight answers only origins a widget allows", async () => {
  await using world = await analyticsWorld();
  const preflight = (origin: string) =>
    world.w.app.request("/v1/events", {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
  for (const evil of ["https://evil.example", "null", "https://news.example.evil.example"]) {
    const res = await preflight(evil);
    assert.equal(res.headers.get("access-control-allow-origin"), null, evil);
    await res.body?.cancel();
  }
  const ok = await preflight("https://news.example");
  assert.equal(ok.headers.get("access-control-allow-origin"), "https://news.example");
  assert.match(ok.headers.get("vary") ?? "", /Origin/i);
  await ok.body?.cancel();
});

Deno.test("security: error bodies never echo the input or a library's message (our stable strings)", async (t) => {
  const secretish = '{"prompt": "SECRET-INPUT-123", oops';
  await t.step("malformed JSON, bearer family", async () => {
    await using w = await createTestWorld();
    const { key } = await w.tenantWithKey();
    const res = await w.app.request("/v1/events", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: secretish,
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { message: "Malformed JSON body: not valid JSON" });
  });
  await t.step("malformed JSON, storefront family", async () => {
    await using w = await storefrontWorld();
    const res = await w.app.request("http://svc.test/agent/identity", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: secretish,
    });
    const text = await res.text();
    assert.equal(res.status, 400);
    assert.deepEqual(JSON.parse(text), { error: "invalid_request", detail: "The body is not valid JSON" });
  });
  await t.step("jose's words stay out of ID-JAG errors", async () => {
    await using w = await storefrontWorld();
    const cases: [string, string][] = [
      [await w.idp.mint({ jti: undefined }), "The assertion is invalid: the jti claim is missing"],
      [
        await w.idp.mint({ nbf: Math.floor(w.clock.now().getTime() / 1000) + 3600 }),
        "The assertion is invalid: the nbf claim failed its check",
      ],
      ["not-a-jwt", "The assertion is not a JWT"],
    ];
    for (const [assertion, detail] of cases) {
      const r = await json(
        await w.post("/agent/identity", {
          type: "identity_assertion",
          assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
          assertion,
        }),
      );
      assert.equal(r.body.detail, detail);
      assert.doesNotMatch(String(r.body.detail), /unexpected|JWS|JWT Claims|"jti"/);
    }
  });
});

Deno.test("security: shutdown waits for handlers, and says whether any still run", async (t) => {
  await t.step("a handler that finishes within the grace after the timeout: stores may close", async () => {
    const log = memoryLogger();
    let started!: () => void;
    const inFlight = new Promise<void>((r) => (started = r));
    const server = startServer(async () => {
      started();
      await new Promise((r) => setTimeout(r, 150));
      return new Response("late");
    }, { log });
    const pending = fetch(server.url).then((r) => r.text()).catch(() => "");
    await inFlight;
    const ended = await server.shutdown(50, 2000);
    assert.deepEqual(ended, { outcome: "timed_out", late: 1, running: 0 });
    assert.ok(log.lines.some((l) => /every handler had finished/.test(String(l.msg))));
    await pending;
  });
  await t.step("a handler still running after the grace: the outcome says so (stores stay open)", async () => {
    const log = memoryLogger();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const inFlight = new Promise<void>((r) => (started = r));
    const server = startServer(async () => {
      started();
      await gate;
      return new Response("very late");
    }, { log });
    const pending = fetch(server.url).then((r) => r.text()).catch(() => "");
    await inFlight;
    const ended = await server.shutdown(50, 50);
    assert.deepEqual(ended, { outcome: "timed_out", late: 0, running: 1 });
    assert.ok(log.lines.some((l) => l.level === "error" && /stores stay open/.test(String(l.msg))));
    release();
    await pending;
    await server.finished;
  });
});
