/**
 * Purchase challenges are values: core returns them, REST renders them as the 402, MCP as -32042;
 * asking for one runs no purchase and writes nothing.
 */
import assert from "node:assert/strict";
import { Challenge } from "mppx";
import { loadChallengeKey } from "../../core/commerce/challenges.ts";
import { CallPaymentRequired } from "../../core/commerce/proxy.ts";
import { challengeList, challengeView } from "../../core/commerce/purchase.ts";
import type { Seller } from "../../core/commerce/types.ts";
import { challengesOf, createCommerceWorld, postJson } from "./_helpers.ts";
import { httpStatus } from "../../routes/error_status.ts";

async function count(kv: Deno.Kv, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix: [prefix] })) n++;
  return n;
}

Deno.test("CommerceService.purchaseChallenge(): a value with one storefront-bound challenge per rail, nothing written", async () => {
  await using w = await createCommerceWorld();
  const { agent } = await w.agents.issue();
  const service = w.deps.commerce.service;
  const seller = (await w.deps.commerce.catalog.getSeller(w.sellerId)) as Seller;
  const before = await count(w.deps.kv, "commerce_payment") + await count(w.deps.kv, "commerce_idem");
  const offer = await service.purchaseChallenge(seller, agent, w.plan, 5_000_000);
  assert.equal(offer.kind, "challenge");
  assert.deepEqual(offer.rails.map((r) => r.rail), ["card", "wallet"]);
  assert.equal(offer.terms.amountUsd, "5.000000");
  assert.equal(offer.terms.agent, agent.credentialId);
  const key = await loadChallengeKey(w.deps.kv);
  for (const c of challengeList(offer)) {
    assert.ok(Challenge.verify(c, { secretKey: key }));
    assert.equal(c.realm, "store.test");
    assert.equal(c.request.planId, w.plan.id);
  }
  assert.equal(await count(w.deps.kv, "commerce_payment") + await count(w.deps.kv, "commerce_idem"), before);
});

Deno.test("challengeView() is the body REST sends with the 402, and its rails are the WWW-Authenticate challenges", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const res = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson({ amountUsd: "0.200000" }), token });
  assert.equal(res.status, 402);
  const body = await res.json();
  const sent = challengesOf(res);
  // Below the card minimum: the wallet alone, and the card block says why.
  assert.deepEqual(sent.map((c) => c.method), ["wallet"]);
  assert.deepEqual(body.rails.map((r: { challengeId: string }) => r.challengeId), sent.map((c) => c.id));
  assert.deepEqual(body.card, { available: false, reason: "amount_below_card_minimum", cardMinimumUsd: "0.500000" });
  // The same view of a value built in core, field for field (ids and expiry differ per challenge).
  const { agent } = await w.agents.issue();
  const seller = (await w.deps.commerce.catalog.getSeller(w.sellerId)) as Seller;
  const offer = await w.deps.commerce.service.purchaseChallenge(seller, agent, w.plan, 200_000);
  const view = challengeView(offer, w.deps.commerce.service);
  assert.deepEqual(Object.keys(view), Object.keys(body));
  assert.deepEqual({ ...view, rails: [] }, { ...body, rails: [] });
});

Deno.test("PaidProxy.call(): the pay-per-call 402 carries its challenges as values, the ones WWW-Authenticate lists, in order", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(600_000); // above the card minimum: card and wallet
  const { agent } = await w.agents.issue();
  const seller = (await w.deps.commerce.catalog.getSeller(w.sellerId)) as Seller;
  const path = `/v2/search?data_model_id=${w.dataModelId}`;
  const refusal = await w.deps.commerce.proxy.call({
    seller,
    agent,
    kind: "search",
    modelId: w.dataModelId,
    pathAndQuery: `/payproxy${path}`,
    publicPath: path,
    body: new TextEncoder().encode(JSON.stringify({ query: "rates" })),
    headers: new Headers({ "content-type": "application/json" }),
  }).then(() => null, (err) => err);
  assert.ok(refusal instanceof CallPaymentRequired);
  assert.equal(httpStatus(refusal), 402);
  assert.equal(refusal.code, "payment_required");
  assert.deepEqual(refusal.challenges.map((c) => c.method), ["card", "wallet"]);
  // The header REST sends is these values serialised: same challenges, same order, field for field.
  const listed = Challenge.deserializeList(refusal.headers!["www-authenticate"]!);
  assert.deepEqual(refusal.challenges, listed);
  assert.equal(refusal.headers!["www-authenticate"], refusal.challenges.map((c) => Challenge.serialize(c)).join(", "));
  const key = await loadChallengeKey(w.deps.kv);
  for (const c of refusal.challenges) assert.ok(Challenge.verify(c, { secretKey: key }));
});
