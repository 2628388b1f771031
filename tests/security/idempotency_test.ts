/**
 * Finding 4: concurrent purchases with one Idempotency-Key and body, each with its own paid
 * Payment credential, were all charged. One key charges at most once: the first runs, the others
 * replay its result once done or get 409 while it runs; a different body under the key is 422.
 */
import assert from "node:assert/strict";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";

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
