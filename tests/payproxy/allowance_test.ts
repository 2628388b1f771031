import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { memoryLogger } from "../../core/log.ts";
import { AllowanceClient, PayproxyMetrics, serviceSlug, slugify } from "../../core/payproxy/allowance.ts";
import { PayproxySecretStore } from "../../core/payproxy/secrets.ts";
import { SignatureVerifier } from "../../core/payproxy/signature.ts";
import { deadAddress, startAllowancePeer } from "./_helpers.ts";
import { startServer } from "../../routes/server.ts";

const REQUEST = { agentId: "agent-1", serviceSlug: "demo-news", usage: [{ meterSlug: "query", quantity: 1 }] };

async function setup(url: string, timeoutMs = 2000, cacheMs = 0) {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock();
  const log = memoryLogger();
  const secrets = new PayproxySecretStore(kv, clock);
  const key = await secrets.create("seller-a");
  const client = new AllowanceClient({
    agentAuthUrl: url,
    fetch,
    clock,
    log,
    timeoutMs,
    cacheMs,
    metrics: new PayproxyMetrics(),
  });
  return { kv, clock, log, secrets, key, client, [Symbol.dispose]: () => kv.close() };
}

Deno.test("AllowanceClient sends a signed {agentId, serviceSlug, usage} and follows an allow", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  assert.deepEqual(await s.client.check(REQUEST, s.key, { requestId: "rq-1" }), { allowed: true, failedOpen: false });
  assert.equal(peer.calls.length, 1);
  const call = peer.calls[0]!;
  assert.equal(new URL(call.url).pathname, "/internal/allowance");
  assert.deepEqual(JSON.parse(new TextDecoder().decode(call.body)), REQUEST);
  assert.equal(call.headers["zc-agent-id"], "agent-1");
  // The storefront side verifies with the same scheme and the same seller key.
  const verifier = new SignatureVerifier({ keys: s.secrets, kv: s.kv, clock: s.clock });
  const verified = await verifier.verify({
    signature: call.headers["zc-signature"],
    method: "POST",
    url: call.url,
    body: call.body,
    requestId: call.headers["zc-request-id"],
    agentId: call.headers["zc-agent-id"],
  });
  assert.equal(verified.sellerId, "seller-a");
  assert.deepEqual(s.client.metrics.snapshot().allowance.allowed, 1);
});

Deno.test("AllowanceClient follows a deny", async () => {
  await using peer = startAllowancePeer("deny");
  using s = await setup(peer.url);
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: false });
  assert.equal(s.client.metrics.allowance.denied, 1);
  assert.equal(s.client.metrics.allowance.unexpected, 0);
});

Deno.test("AllowanceClient fails open when the payment layer answers too slowly", async () => {
  await using peer = startAllowancePeer("slow");
  using s = await setup(peer.url, 150);
  assert.deepEqual(await s.client.check(REQUEST, s.key, { requestId: "rq-slow" }), { allowed: true, failedOpen: true });
  const m = s.client.metrics.allowance;
  assert.equal(m.failOpen, 1);
  assert.equal(m.failOpenByReason.timeout, 1);
  const line = s.log.lines.find((l) => l.msg === "allowance check failed open")!;
  assert.equal(line.level, "warn");
  assert.equal(line.reason, "timeout");
  assert.equal(line.request_id, "rq-slow");
  assert.ok(!JSON.stringify(s.log.lines).includes(s.key.secret), "the secret is never logged");
});

Deno.test("AllowanceClient fails open when the payment layer is down", async () => {
  using s = await setup(await deadAddress());
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: true, failedOpen: true });
  assert.equal(s.client.metrics.allowance.failOpenByReason.unreachable, 1);
  assert.ok(s.log.lines.some((l) => l.level === "warn" && l.reason === "unreachable"));
});

Deno.test("AllowanceClient fails open on a 5xx", async () => {
  await using peer = startAllowancePeer("error500");
  using s = await setup(peer.url);
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: true, failedOpen: true });
  assert.equal(s.client.metrics.allowance.failOpenByReason.server_error, 1);
});

Deno.test("AllowanceClient denies (never fails open) on a 4xx or an answer it does not understand", async () => {
  await using peer = startAllowancePeer("notfound");
  using s = await setup(peer.url);
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: false });
  peer.mode = "garbage";
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: false });
  assert.equal(s.client.metrics.allowance.unexpected, 2);
  assert.equal(s.client.metrics.allowance.failOpen, 0);
});

Deno.test("serviceSlug(): tool name, else a slug of the name, else the external id", () => {
  assert.equal(serviceSlug({ id: "dm_1", name: "Demo News", toolName: "demo-news" }), "demo-news");
  assert.equal(serviceSlug({ id: "dm_1", name: "Le Café  Désert — Édition #2" }), "le-cafe-desert-edition-2");
  assert.equal(serviceSlug({ id: "dm_1", name: "東京" }), "dm_1");
  assert.equal(serviceSlug({ id: "am_2" }), "am_2");
  assert.equal(slugify("x".repeat(80)).length, 64);
});

Deno.test("AllowanceClient reuses an allow for cacheMs per agent and service, then asks again", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url, 2000, 1000);
  await s.client.check(REQUEST, s.key);
  await s.client.check(REQUEST, s.key);
  assert.equal(peer.calls.length, 1);
  assert.equal(s.client.metrics.allowance.cached, 1);
  await s.client.check({ ...REQUEST, agentId: "agent-2" }, s.key);
  await s.client.check({ ...REQUEST, serviceSlug: "other" }, s.key);
  assert.equal(peer.calls.length, 3, "another agent or service is asked about");
  s.clock.advance(1000); // the window is cacheMs long, its last millisecond included
  await s.client.check(REQUEST, s.key);
  assert.equal(peer.calls.length, 3);
  s.clock.advance(1);
  await s.client.check(REQUEST, s.key);
  assert.equal(peer.calls.length, 4, "asked again once the window is over");
});

Deno.test("AllowanceClient never reuses a denial or a fail-open", async () => {
  await using peer = startAllowancePeer("deny");
  using s = await setup(peer.url, 2000, 1000);
  assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: false });
  peer.mode = "allow";
  assert.deepEqual(
    await s.client.check(REQUEST, s.key),
    { allowed: true, failedOpen: false },
    "a top-up counts at once",
  );
  assert.equal(peer.calls.length, 2);
  using down = await setup(await deadAddress(), 2000, 1000);
  await down.client.check(REQUEST, down.key);
  await down.client.check(REQUEST, down.key);
  assert.equal(down.client.metrics.allowance.calls, 2);
  assert.equal(down.client.metrics.allowance.failOpen, 2);
});

Deno.test("AllowanceClient: concurrent identical questions share one call", async () => {
  await using peer = startAllowancePeer("deny");
  using s = await setup(peer.url, 2000, 1000);
  const answers = await Promise.all(Array.from({ length: 10 }, () => s.client.check(REQUEST, s.key)));
  assert.equal(peer.calls.length, 1);
  assert.ok(answers.every((a) => !a.allowed));
  assert.equal(s.client.metrics.allowance.denied, 10);
  assert.equal(s.client.metrics.allowance.calls, 1);
});

Deno.test("AllowanceClient: an answer whose status arrived but whose body drips past the timeout is denied, never failed open", async (t) => {
  // The payment layer answered (its status line and headers are in): it is up, so a body that
  // trickles in too slowly is an answer not understood, not an outage.
  const stopping = new AbortController();
  const state = { status: 200 };
  const server = startServer(() => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"allowed":'));
        stopping.signal.addEventListener("abort", () => {
          try {
            controller.close();
          } catch { /* the client went away first */ }
        }, { once: true });
      },
    });
    return new Response(body, { status: state.status, headers: { "content-type": "application/json" } });
  });
  try {
    for (const status of [200, 402, 404]) {
      await t.step(`status ${status}`, async () => {
        state.status = status;
        using s = await setup(server.url, 150);
        assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: false });
        assert.equal(s.client.metrics.allowance.failOpen, 0);
        assert.equal(s.client.metrics.allowance.unexpected, 1);
      });
    }
    await t.step("a 5xx whose body drips is an outage at once (fails open without waiting for the body)", async () => {
      state.status = 503;
      using s = await setup(server.url, 150);
      assert.deepEqual(await s.client.check(REQUEST, s.key), { allowed: true, failedOpen: true });
      assert.equal(s.client.metrics.allowance.failOpenByReason.server_error, 1);
    });
  } finally {
    stopping.abort();
    await server.shutdown(1000);
  }
});
