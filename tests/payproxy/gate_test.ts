/** The payproxy gate without HTTP routes: admit, single use, allowance, usage and their counters. */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { AppError } from "../../core/errors.ts";
import { memoryLogger } from "../../core/log.ts";
import { AllowanceClient, PayproxyMetrics } from "../../core/payproxy/allowance.ts";
import { PayproxyGate } from "../../core/payproxy/gate.ts";
import { PayproxySecretStore } from "../../core/payproxy/secrets.ts";
import { SignatureVerifier, signRequest, type VerifyInput } from "../../core/payproxy/signature.ts";
import { unixSeconds } from "../../core/clock.ts";
import { startAllowancePeer } from "./_helpers.ts";
import { httpStatus } from "../../routes/error_status.ts";

const URL_ = "http://svc.test/payproxy/v2/search?data_model_id=dm_x";

async function setup(peerUrl: string) {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock();
  const log = memoryLogger();
  const secrets = new PayproxySecretStore(kv, clock);
  const key = await secrets.create("seller-a");
  const metrics = new PayproxyMetrics();
  // Key lookups counted: a check that is not made again costs none.
  const lookups = { n: 0 };
  const verifier = new SignatureVerifier({ keys: { get: (kid) => (lookups.n++, secrets.get(kid)) }, kv, clock });
  const allowance = new AllowanceClient({ agentAuthUrl: peerUrl, fetch, clock, log, cacheMs: 0, metrics });
  const gate = new PayproxyGate({ verifier, allowance, metrics, log });
  /** A signed call as a route reads it off the request. */
  const signed = (agentId?: string, body = '{"query":"x"}'): VerifyInput => {
    const requestId = crypto.randomUUID();
    const s = signRequest({ ...key, t: unixSeconds(clock), method: "POST", url: URL_, body, requestId, agentId });
    return {
      signature: s.header,
      method: "POST",
      url: URL_,
      body: new TextEncoder().encode(body),
      requestId,
      agentId: agentId ?? null,
    };
  };
  return { kv, clock, gate, metrics, signed, lookups, secrets, key, [Symbol.dispose]: () => kv.close() };
}

Deno.test("PayproxyGate.admit() names the caller, checks the allowance and settles one query as zc-usage", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  const admission = await s.gate.admit(s.signed("bot-7"), "payproxy", "rq-1");
  assert.equal(admission.caller, "payproxy:bot-7");
  assert.equal(admission.verified.sellerId, "seller-a");
  const out = await admission.whileConsuming(async () => {
    await admission.requireAllowance("demo-news");
    return "searched";
  });
  assert.equal(out, "searched");
  assert.deepEqual(JSON.parse(admission.settle("demo-news", 2)), [
    { serviceSlug: "demo-news", meterSlug: "query", quantity: 1 },
    { serviceSlug: "demo-news", meterSlug: "full_text", quantity: 2 },
  ]);
  assert.deepEqual(JSON.parse(peer.calls[0]!.body.length ? new TextDecoder().decode(peer.calls[0]!.body) : "{}"), {
    agentId: "bot-7",
    serviceSlug: "demo-news",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
  assert.deepEqual(s.metrics.requests, { verified: 1, rejected: 0, paymentRequired: 0, served: 1 });
  // Without an agent the caller is the path family alone.
  assert.equal((await s.gate.admit(s.signed(), "zeroclick")).caller, "zeroclick");
});

Deno.test("PayproxyGate.admit() refuses a bad signature as 401 invalid_payproxy_signature, reason in the cause only", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  const bad = { ...s.signed("bot-7"), body: new TextEncoder().encode('{"query":"tampered"}') };
  const err = await s.gate.admit(bad, "payproxy").then(() => null, (e) => e);
  assert.ok(err instanceof AppError);
  assert.equal(httpStatus(err), 401);
  assert.equal(err.code, "invalid_payproxy_signature");
  assert.equal(err.message, "Invalid payproxy signature");
  assert.match(String((err.cause as Error).message), /does not match/);
  assert.equal(s.metrics.requests.rejected, 1);
  assert.equal(peer.calls.length, 0);
});

Deno.test("PayproxyGate: a replay is refused at once, and a denied allowance is 402 with serviceSlug and usage", async () => {
  await using peer = startAllowancePeer("deny");
  using s = await setup(peer.url);
  const call = s.signed("bot-7");
  const first = await s.gate.admit(call, "payproxy");
  // The replay still names its caller (logs), but no step of it runs.
  const again = await s.gate.admit(call, "payproxy");
  assert.equal(again.caller, "payproxy:bot-7");
  let ran = false;
  const replay = await again.whileConsuming(() => {
    ran = true;
    return Promise.resolve();
  }).then(() => null, (e) => e);
  assert.equal(replay?.code, "invalid_payproxy_signature");
  assert.equal(ran, false);
  const denied = await first.whileConsuming(() => first.requireAllowance("demo-news")).then(() => null, (e) => e);
  assert.ok(denied instanceof AppError);
  assert.equal(httpStatus(denied), 402);
  assert.equal(denied.code, "payment_required");
  assert.deepEqual(denied.extra, { serviceSlug: "demo-news", usage: [{ meterSlug: "query", quantity: 1 }] });
  assert.deepEqual(s.metrics.requests, { verified: 1, rejected: 1, paymentRequired: 1, served: 0 });
});

Deno.test("PayproxyGate.whileConsuming(): a refused mark wins over the steps' own outcome", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  const call = s.signed("bot-7");
  // Another process made the mark first: this process does not remember it, KV refuses it.
  const other = new SignatureVerifier({
    keys: new PayproxySecretStore(s.kv, new FixedClock()),
    kv: s.kv,
    clock: new FixedClock(),
  });
  await other.verify(call);
  const admission = await s.gate.admit(call, "payproxy");
  const failedStep = await admission.whileConsuming(() => Promise.reject(new Error("step broke"))).then(
    () => null,
    (e) => e,
  );
  assert.equal(failedStep?.code, "invalid_payproxy_signature");
  const okStep = await admission.whileConsuming(() => Promise.resolve("result")).then(() => null, (e) => e);
  assert.equal(okStep?.code, "invalid_payproxy_signature");
});

Deno.test("PayproxyGate.admit() of headers checked before the body reuses their parse and checks the key and timestamp again", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  const input = s.signed("bot-7");
  const checked = await s.gate.checkHeaders(input);
  assert.equal(s.lookups.n, 1);
  const admission = await s.gate.admit({ ...input, checked }, "payproxy");
  assert.equal(s.lookups.n, 2, "the key is looked up again once the body is in (its status may have changed)");
  assert.equal(await admission.whileConsuming(() => Promise.resolve("ok")), "ok");
  assert.equal(admission.verified.agentId, "bot-7");
  // A check of other header values is not taken for these: they are checked afresh (and fail here).
  const other = s.signed("bot-8");
  const refused = await s.gate.admit({ ...other, signature: input.signature, checked }, "payproxy").then(
    () => null,
    (e) => e,
  );
  assert.equal(refused?.code, "invalid_payproxy_signature");
  assert.match(String((refused.cause as Error).message), /does not match/);
  // The timestamp is checked again when the MAC is: a body that took past the skew is refused.
  const slow = s.signed("bot-9");
  const early = await s.gate.checkHeaders(slow);
  s.clock.advance(301_000);
  const late = await s.gate.admit({ ...slow, checked: early }, "payproxy").then(() => null, (e) => e);
  assert.equal(late?.code, "invalid_payproxy_signature");
  assert.match(String((late.cause as Error).message), /timestamp/);
  assert.deepEqual(s.metrics.requests, { verified: 1, rejected: 2, paymentRequired: 0, served: 0 });
});

Deno.test("PayproxyGate.admit(): a key retired while the body was read no longer verifies it (checked headers are not a pass)", async () => {
  await using peer = startAllowancePeer("allow");
  using s = await setup(peer.url);
  const input = s.signed("bot-7");
  const checked = await s.gate.checkHeaders(input);
  await s.secrets.retire("seller-a", s.key.kid);
  const refused = await s.gate.admit({ ...input, checked }, "payproxy").then(() => null, (e) => e);
  assert.equal(refused?.code, "invalid_payproxy_signature");
  assert.match(String((refused.cause as Error).message), /retired/);
});
