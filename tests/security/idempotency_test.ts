/**
 * Finding 4: concurrent purchases with one Idempotency-Key and body, each with its own paid
 * Payment credential, were all charged. One key charges at most once: the first runs, the others
 * replay its result once done or get 409 while it runs; a different body under the key is 422.
 */
import assert from "node:assert/strict";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";
import { kvFaults } from "../_kv_faults.ts";

async function concurrentPurchases(n: number) {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const path = `/plans/${w.plan.id}/purchase`;
  const body = { amountUsd: "1.000000" };
  // n distinct Payment credentials, each good for a charge on its own.
  const auths: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await w.req(path, { ...postJson(body), token });
    assert.equal(r.status, 402);
    const ch = challengesOf(r).find((c) => c.method === "card")!;
    await r.body?.cancel();
    auths.push(paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }));
  }
  const send = (auth: string, b: unknown = body) =>
    w.req(path, {
      ...postJson(b, { authorization: auth, "zc-agent-authorization": `Bearer ${token}`, "idempotency-key": "k-1" }),
    });
  const results = await Promise.all(auths.map(async (a) => {
    const r = await send(a);
    return { status: r.status, replayed: r.headers.get("idempotent-replayed"), body: await r.json() };
  }));
  const processor = w.deps.commerce.processor as SandboxProcessor;
  const ents = await (await w.req("/agent/entitlements", { token })).json();
  // After the dust settles, a retry replays the one success.
  const later = await send(auths[0]!);
  const laterBody = await later.json();
  const mismatch = await send(auths[1]!, { amountUsd: "2.000000" });
  return {
    results,
    charges: processor.ledger.length,
    ents,
    later,
    laterBody,
    mismatch,
    mismatchBody: await mismatch.json(),
  };
}

for (const n of [10, 100]) {
  Deno.test(`security: ${n} concurrent purchases with one Idempotency-Key charge exactly once`, async () => {
    const r = await concurrentPurchases(n);
    const fresh = r.results.filter((x) => x.status === 200 && x.replayed === null);
    const replayed = r.results.filter((x) => x.status === 200 && x.replayed === "true");
    const busy = r.results.filter((x) => x.status === 409);
    assert.equal(fresh.length, 1, JSON.stringify(r.results.map((x) => [x.status, x.body.error])));
    assert.equal(fresh.length + replayed.length + busy.length, n, "every answer is the success, its replay, or 409");
    for (const b of busy) assert.equal(b.body.error, "idempotency_key_in_use");
    for (const x of replayed) assert.deepEqual(x.body, fresh[0]!.body);
    assert.equal(r.charges, 1, "one charge");
    assert.equal(r.ents.entitlements[0].remainingUsd, "1.000000", "credited once");
    assert.equal(r.later.status, 200);
    assert.equal(r.later.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(r.laterBody, fresh[0]!.body);
    assert.equal(r.mismatch.status, 422);
    assert.equal(r.mismatchBody.error, "idempotency_key_reused");
  });
}

Deno.test("security: a paid purchase whose kept result failed to commit still answers its success, and a retry with a new credential after a minute charges nothing", async () => {
  const faults = kvFaults();
  await using w = await createCommerceWorld({ wrapKv: faults.wrap });
  const { token } = await w.agents.issue();
  const path = `/plans/${w.plan.id}/purchase`;
  const body = { amountUsd: "1.000000" };
  const credential = async () => {
    const r = await w.req(path, { ...postJson(body), token });
    const ch = challengesOf(r).find((c) => c.method === "card")!;
    await r.body?.cancel();
    return paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success });
  };
  const send = (auth: string) =>
    w.req(path, {
      ...postJson(body, { authorization: auth, "zc-agent-authorization": `Bearer ${token}`, "idempotency-key": "k-2" }),
    });
  // Charged and credited; the write that keeps the result under the key fails once (a KV error).
  faults.failNext(1, { op: "set", entity: "commerce_idem", value: (v) => (v as { state?: string }).state === "done" });
  const first = await send(await credential());
  const firstBody = await first.json();
  assert.equal(faults.left, 0, "the kept result's write failed");
  assert.equal(first.status, 200, JSON.stringify(firstBody));
  // A client that never saw the answer retries later with a fresh credential under the same key.
  w.clock.advance(61_000);
  const retry = await send(await credential());
  const retryBody = await retry.json();
  assert.equal(retry.status, 200, JSON.stringify(retryBody));
  assert.equal(retry.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(retryBody, firstBody);
  const processor = w.deps.commerce.processor as SandboxProcessor;
  assert.equal(processor.ledger.length, 1, "one charge");
  assert.equal((await (await w.req("/agent/entitlements", { token })).json()).entitlements[0].remainingUsd, "1.000000");
});

Deno.test("security: a purchase that died after its credit, before its result was kept, is answered from its payment under the key and charged once", async () => {
  const faults = kvFaults();
  await using w = await createCommerceWorld({ wrapKv: faults.wrap });
  const { token } = await w.agents.issue();
  const path = `/plans/${w.plan.id}/purchase`;
  const body = { amountUsd: "1.000000" };
  const credential = async () => {
    const r = await w.req(path, { ...postJson(body), token });
    const ch = challengesOf(r).find((c) => c.method === "wallet")!;
    await r.body?.cancel();
    return { ch, auth: paymentAuthorization(ch, { token: SANDBOX_TOKENS.wallet.success }) };
  };
  const send = (auth: string) =>
    w.req(path, {
      ...postJson(body, { authorization: auth, "zc-agent-authorization": `Bearer ${token}`, "idempotency-key": "k-3" }),
    });
  // Every write of the kept result fails: the state a process killed right after the credit leaves.
  faults.failNext(3, { op: "set", entity: "commerce_idem", value: (v) => (v as { state?: string }).state === "done" });
  const paid = await credential();
  const first = await send(paid.auth);
  assert.equal(first.status, 200, await first.text());
  assert.equal(faults.left, 0, "the kept result was never written");
  // The client retries with a fresh credential under the same key, at once and after a minute.
  for (const wait of [0, 61_000]) {
    w.clock.advance(wait);
    const retry = await send((await credential()).auth);
    const retryBody = await retry.json();
    assert.equal(retry.status, 200, JSON.stringify(retryBody));
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.equal(retryBody.reference, paid.ch.id, "the payment that was made");
    assert.equal(retryBody.entitlement.remainingUsd, "1.000000");
  }
  const processor = w.deps.commerce.processor as SandboxProcessor;
  assert.equal(processor.ledger.length, 1, "one charge");
});
