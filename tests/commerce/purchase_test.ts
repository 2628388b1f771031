import assert from "node:assert/strict";
import { decideOnPage } from "../storefront/_world.ts";
import { Challenge, Receipt } from "mppx";
import { Mppx } from "mppx/client";
import { FixedClock } from "../../core/clock.ts";
import { loadChallengeKey } from "../../core/commerce/challenges.ts";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { type Entitlement, entKey } from "../../core/commerce/entitlements.ts";
import { createTestWorld } from "../_helpers.ts";
import {
  challengesOf,
  createCommerceWorld,
  paymentAuthorization,
  postJson,
  TestAgents,
  tokenMethod,
} from "./_helpers.ts";

const amount = (usd: string) => ({ amountUsd: usd });

async function kvKeys(kv: Deno.Kv, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix: [prefix] })) n++;
  return n;
}

Deno.test("purchase: a plan bought through the mppx client grants credit and returns a Payment-Receipt", async () => {
  // mppx's client checks a challenge's `expires` against the process clock, so the world's fixed
  // clock starts at the process's "now" (whatever date that is) instead of a calendar date.
  await using w = await createCommerceWorld({ clock: new FixedClock(Date.now()) });
  const { token, agent } = await w.agents.issue();
  // A real client of the Payment scheme. It swaps Authorization for the Payment credential on the
  // retry; the agent token then rides in ZC-Agent-Authorization, as spec 5.3 asks.
  const transport: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    const headers = new Headers(req.headers);
    headers.set("host", w.host);
    if (/^payment\s/i.test(headers.get("authorization") ?? "")) {
      headers.set("zc-agent-authorization", `Bearer ${token}`);
    } else headers.set("authorization", `Bearer ${token}`);
    return Promise.resolve(w.app.request(req.url, { method: req.method, headers, body: init?.body }));
  };
  const client = Mppx.create({
    methods: [tokenMethod("card", SANDBOX_TOKENS.card.success)],
    fetch: transport,
    polyfill: false,
  });
  const res = await client.fetch(`http://store.test/plans/${w.plan.id}/purchase`, postJson(amount("5.000000")));
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.status, "succeeded");
  assert.equal(body.rail, "card");
  assert.equal(body.amountUsd, "5.000000");
  assert.equal(body.entitlement.remainingUsd, "5.000000");
  const receipt = Receipt.fromResponse(res);
  assert.equal(receipt.status, "success");
  assert.equal(receipt.method, "card");
  assert.equal(receipt.reference, body.reference);

  const ents = await (await w.req("/agent/entitlements", { token })).json();
  assert.equal(ents.entitlements.length, 1);
  assert.equal(ents.entitlements[0].planId, w.plan.id);
  assert.equal(ents.entitlements[0].remainingUsd, "5.000000");
  assert.equal((w.deps.commerce.processor as SandboxProcessor).ledger.length, 1);
  // The credit is the buying credential's own: the ledger holds it under that agent, no other.
  const seller = (await w.deps.storefront.sellers.get(w.sellerId))!;
  const mine = await w.deps.commerce.service.entitlementsHere(seller, agent) as { entitlements: unknown[] };
  assert.equal(mine.entitlements.length, 1);
  const other = await w.agents.issue();
  const theirs = await (await w.req("/agent/entitlements", { token: other.token })).json();
  assert.deepEqual(theirs.entitlements, []);
});

Deno.test("purchase: the 402 carries one Payment challenge per rail, a card block with statusUrl, no-store, and no side effect", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const before = await kvKeys(w.deps.kv, "commerce_payment") + await kvKeys(w.deps.kv, "commerce_ent");
  const res = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
  assert.equal(res.status, 402);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const challenges = challengesOf(res);
  assert.deepEqual(challenges.map((c) => c.method).sort(), ["card", "wallet"]);
  for (const c of challenges) {
    assert.equal(c.intent, "charge");
    assert.equal(c.realm, "store.test");
    assert.ok(c.expires);
    assert.equal(c.request.amountUsd, "5.000000");
    assert.equal(c.request.planId, w.plan.id);
  }
  const body = await res.json();
  assert.equal(body.error, "payment_required");
  assert.deepEqual(body.rails.map((r: { method: string }) => r.method), ["card", "wallet"]);
  assert.equal(body.card.statusUrl, `http://store.test/payments/${body.card.challengeId}`);
  assert.equal(body.card.cardMinimumUsd, "0.500000");
  const after = await kvKeys(w.deps.kv, "commerce_payment") + await kvKeys(w.deps.kv, "commerce_ent");
  assert.equal(after, before);
});

Deno.test("purchase: challenge ids are HMAC-bound; a tampered request or expiry is payment_unknown", async () => {
  await using w = await createCommerceWorld();
  const { token, renew } = await w.agents.issue();
  const res = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
  const card = challengesOf(res).find((c) => c.method === "card")!;
  await res.body?.cancel();
  // Change the amount inside the challenge but keep its id: the HMAC no longer matches.
  const forged = { ...card, request: { ...card.request, amountUsd: "0.500000", amount: "0.500000" } };
  const r1 = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(amount("0.500000"), {
      authorization: paymentAuthorization(forged, { token: SANDBOX_TOKENS.card.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(r1.status, 404);
  assert.equal((await r1.json()).error, "payment_unknown");
  // An expired challenge (with a fresh access token: they live 5 minutes).
  w.clock.advance(11 * 60_000);
  const r2 = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(amount("5.000000"), {
      authorization: paymentAuthorization(card, { token: SANDBOX_TOKENS.card.success }),
      "zc-agent-authorization": `Bearer ${await renew()}`,
    }),
  });
  assert.equal((await r2.json()).error, "payment_unknown");
  // The id is the mppx HMAC binding of realm, method, intent, request and expiry.
  assert.ok(Challenge.verify(card, { secretKey: await loadChallengeKey(w.deps.kv) }));
});

/** Gets a fresh challenge for `rail` and answers it with `token`. */
async function pay(
  w: Awaited<ReturnType<typeof createCommerceWorld>>,
  agentToken: string,
  payTok: string,
  opts: { rail?: "card" | "wallet"; usd?: string; path?: string; retryUsd?: string; headers?: Record<string, string> } =
    {},
) {
  const path = opts.path ?? `/plans/${w.plan.id}/purchase`;
  const first = await w.req(path, { ...postJson(amount(opts.usd ?? "5.000000")), token: agentToken });
  assert.equal(first.status, 402);
  const ch = challengesOf(first).find((c) => c.method === (opts.rail ?? "card"))!;
  await first.body?.cancel();
  const auth = paymentAuthorization(ch, { token: payTok });
  const send = () =>
    w.req(path, {
      ...postJson(amount(opts.retryUsd ?? opts.usd ?? "5.000000"), {
        authorization: auth,
        "zc-agent-authorization": `Bearer ${agentToken}`,
        ...opts.headers,
      }),
    });
  return { res: await send(), again: send, challenge: ch, auth };
}

Deno.test("purchase: payment reference states and their errors", async (t) => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();

  await t.step("a consumed reference is payment_consumed", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.success);
    assert.equal(p.res.status, 200);
    await p.res.body?.cancel();
    const again = await p.again();
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "payment_consumed");
  });

  await t.step("insufficient funds is settlement_failed with settlementReason, then payment_failed", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.insufficientFunds);
    assert.equal(p.res.status, 402);
    const body = await p.res.json();
    assert.equal(body.error, "settlement_failed");
    assert.equal(body.settlementReason, "insufficient_funds");
    const again = await p.again();
    assert.equal((await again.json()).error, "payment_failed");
  });

  await t.step("a token needing a further step is payment_incomplete with statusUrl", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.incomplete);
    assert.equal(p.res.status, 402);
    const body = await p.res.json();
    assert.equal(body.error, "payment_incomplete");
    assert.match(body.statusUrl, /\/payments\//);
  });

  await t.step("a provider outage is payment_provider_unavailable (503, Retry-After) and retryable", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.unavailable);
    assert.equal(p.res.status, 503);
    assert.ok(p.res.headers.get("retry-after"));
    assert.equal((await p.res.json()).error, "payment_provider_unavailable");
    // Nothing was consumed: the same challenge can still be paid with a working token.
    const ok = await w.req(`/plans/${w.plan.id}/purchase`, {
      ...postJson(amount("5.000000"), {
        authorization: paymentAuthorization(p.challenge, { token: SANDBOX_TOKENS.card.success }),
        "zc-agent-authorization": `Bearer ${token}`,
      }),
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });

  await t.step("a different amount on the retry is payment_amount_mismatch", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.success, { retryUsd: "6.000000" });
    assert.equal(p.res.status, 409);
    assert.equal((await p.res.json()).error, "payment_amount_mismatch");
  });

  await t.step("a payment presented for another plan or another agent is payment_request_mismatch", async () => {
    const other = await w.deps.commerce.catalog.addCreditPlan(w.sellerId, {
      name: "Other",
      minimumMicros: 100_000,
      maximumMicros: 10_000_000,
    });
    const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
    const ch = challengesOf(first).find((c) => c.method === "card")!;
    await first.body?.cancel();
    const res = await w.req(`/plans/${other.id}/purchase`, {
      ...postJson(amount("5.000000"), {
        authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }),
        "zc-agent-authorization": `Bearer ${token}`,
      }),
    });
    assert.equal(res.status, 409);
    assert.equal((await res.json()).error, "payment_request_mismatch");
    const stranger = await w.agents.issue();
    const res2 = await w.req(`/plans/${w.plan.id}/purchase`, {
      ...postJson(amount("5.000000"), {
        authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }),
        "zc-agent-authorization": `Bearer ${stranger.token}`,
      }),
    });
    assert.equal((await res2.json()).error, "payment_request_mismatch");
  });

  await t.step("a refunded reference is payment_refunded", async () => {
    const p = await pay(w, token, SANDBOX_TOKENS.card.success);
    const { reference } = await p.res.json();
    await w.deps.commerce.service.payments.refund(w.sellerId, reference);
    const again = await p.again();
    assert.equal((await again.json()).error, "payment_refunded");
  });

  await t.step("a reference matching no payment at this seller is payment_unknown on the status URL", async () => {
    const res = await w.req("/payments/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error, "payment_unknown");
  });
});

Deno.test("purchase: wallet rails are exempt from the card floor; card rails are not", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const res = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("0.200000")), token });
  assert.equal(res.status, 402);
  assert.deepEqual(challengesOf(res).map((c) => c.method), ["wallet"]);
  const body = await res.json();
  assert.equal(body.card.available, false);
  assert.equal(body.card.reason, "amount_below_card_minimum");
  const wallet = await pay(w, token, SANDBOX_TOKENS.wallet.success, { rail: "wallet", usd: "0.200000" });
  assert.equal(wallet.res.status, 200);
  assert.equal((await wallet.res.json()).entitlement.remainingUsd, "0.200000");
  // A card credential for the same small amount (challenge taken from a larger request) is refused.
  const checkout = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "0.200000", checkout: true }),
    token,
  });
  assert.equal(checkout.status, 400);
  assert.equal((await checkout.json()).error, "amount_below_card_minimum");
});

Deno.test("purchase: body and plan errors", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const payg = await w.addPayg(20_000);
  const cases: [string, RequestInit, number, string][] = [
    [`/plans/${w.plan.id}/purchase`, postJson({}), 400, "amount_required"],
    [`/plans/${w.plan.id}/purchase`, postJson(amount("5.005000")), 400, "amount_not_cent_increment"],
    [`/plans/${w.plan.id}/purchase`, postJson(amount("0.050000")), 400, "amount_below_minimum"],
    [`/plans/${w.plan.id}/purchase`, postJson(amount("100.010000")), 400, "amount_above_maximum"],
    [`/plans/${w.plan.id}/purchase`, postJson({ amountUsd: 5 }), 400, "invalid_request"],
    [`/plans/${w.plan.id}/purchase`, postJson([1, 2]), 400, "invalid_request"],
    [
      `/plans/${w.plan.id}/purchase`,
      { method: "POST", headers: { "content-type": "application/json" }, body: "{" },
      400,
      "invalid_request",
    ],
    [`/plans/${w.plan.id}/purchase`, postJson({ amountUsd: "5.000000", checkout: "yes" }), 400, "invalid_request"],
    ["/plans/pl_nope/purchase", postJson(amount("5.000000")), 404, "plan_not_found"],
    [`/plans/${payg.id}/purchase`, postJson(amount("5.000000")), 400, "payg_not_purchasable"],
    ["/extend", postJson(amount("5.000000")), 404, "access_not_found"],
  ];
  for (const [path, init, status, code] of cases) {
    const res = await w.req(path, { ...init, token });
    assert.equal(res.status, status, `${path} ${init.body}`);
    assert.equal((await res.json()).error, code, `${path} ${init.body}`);
  }
  const noToken = await w.req(`/plans/${w.plan.id}/purchase`, postJson(amount("5.000000")));
  assert.equal(noToken.status, 401);
  assert.equal((await noToken.json()).error, "bearer_required");
});

Deno.test("purchase: seller setup errors: entitlements_not_available, signing_secret_required, seller_not_found", async () => {
  {
    await using w = await createCommerceWorld({ withPlan: false });
    const { token } = await w.agents.issue();
    const res = await w.req("/plans/pl_x/purchase", { ...postJson(amount("5.000000")), token });
    assert.equal(res.status, 501);
    assert.equal((await res.json()).error, "entitlements_not_available");
    const ents = await w.req("/agent/entitlements", { token });
    assert.equal(ents.status, 501);
    await ents.body?.cancel();
  }
  {
    await using w = await createCommerceWorld({ withSecret: false });
    const { token } = await w.agents.issue();
    const res = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
    assert.equal(res.status, 409);
    assert.equal((await res.json()).error, "signing_secret_required");
    const res2 = await w.app.request("http://elsewhere.test/services", { headers: { host: "elsewhere.test" } });
    assert.equal(res2.status, 404);
    assert.equal((await res2.json()).error, "seller_not_found");
  }
});

Deno.test("purchase: Idempotency-Key replays the first success and refuses a different request (422)", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const p = await pay(w, token, SANDBOX_TOKENS.card.success, { headers: { "idempotency-key": "buy-1" } });
  assert.equal(p.res.status, 200);
  const first = await p.res.json();
  const replay = await p.again();
  assert.equal(replay.status, 200);
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.ok(replay.headers.get("payment-receipt"));
  assert.deepEqual(await replay.json(), first);
  const ents = await (await w.req("/agent/entitlements", { token })).json();
  assert.equal(ents.entitlements[0].remainingUsd, "5.000000");
  const other = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(amount("7.000000"), { "idempotency-key": "buy-1" }),
    token,
  });
  assert.equal(other.status, 422);
  assert.equal((await other.json()).error, "idempotency_key_reused");
});

Deno.test("extend: tops up the plan held, shared by every credential of the same human, and the network view lists it", async () => {
  await using w = await createCommerceWorld();
  const a = await w.agents.issue({ humanId: "hu_1" });
  const b = await w.agents.issue({ humanId: "hu_1" });
  const stranger = await w.agents.issue();
  assert.equal((await pay(w, a.token, SANDBOX_TOKENS.card.success)).res.status, 200);
  const ext = await pay(w, b.token, SANDBOX_TOKENS.wallet.success, {
    rail: "wallet",
    usd: "2.000000",
    path: "/extend",
  });
  assert.equal(ext.res.status, 200);
  const extBody = await ext.res.json();
  assert.equal(extBody.action, "extend");
  assert.equal(extBody.entitlement.remainingUsd, "7.000000");
  const viaA = await (await w.req("/agent/entitlements", { token: a.token })).json();
  assert.equal(viaA.entitlements[0].remainingUsd, "7.000000");
  assert.equal(viaA.entitlements[0].sharedWithHuman, true);
  const none = await (await w.req("/agent/entitlements", { token: stranger.token })).json();
  assert.deepEqual(none.entitlements, []);
  const net = await w.app.request("http://store.test/network/agent/entitlements", {
    headers: { host: "store.test", authorization: `Bearer ${b.token}` },
  });
  assert.equal(net.status, 200);
  const netBody = await net.json();
  assert.equal(netBody.entitlements.length, 1);
  assert.equal(netBody.entitlements[0].seller.id, w.sellerId);
});

Deno.test("purchase: the receipt shows the entitlement the credit landed on, not an older one of the same plan", async () => {
  await using w = await createCommerceWorld();
  const b = await w.agents.issue({ humanId: "hu_1" });
  // The human's credential A bought the plan before it was claimed (its own entitlement, older),
  // and the human's shared entitlement of the plan was opened after.
  const a = await w.agents.issue({ humanId: "hu_1" });
  for (const id of [a.agent.credentialId, b.agent.credentialId]) {
    await w.deps.kv.set(["account_credential", "hu_1", id], id);
  }
  const ent = (holder: string, micros: number, createdAt: string): Entitlement => ({
    holder,
    sellerId: w.sellerId,
    planId: w.plan.id,
    creditMicros: micros,
    purchasedMicros: micros,
    createdAt,
    updatedAt: createdAt,
  });
  const before = (days: number) => new Date(w.clock.now().getTime() - days * 86400_000).toISOString();
  await w.deps.kv.set(
    entKey(`c:${a.agent.credentialId}`, w.sellerId, w.plan.id),
    ent(`c:${a.agent.credentialId}`, 9_000_000, before(2)),
  );
  await w.deps.kv.set(entKey("h:hu_1", w.sellerId, w.plan.id), ent("h:hu_1", 1_000_000, before(1)));

  const { res } = await pay(w, b.token, SANDBOX_TOKENS.wallet.success, { rail: "wallet", usd: "2.000000" });
  assert.equal(res.status, 200);
  const body = await res.json();
  // The top-up went to the human's entitlement (1.00 + 2.00), and the receipt says so.
  const shared = (await w.deps.kv.get<Entitlement>(entKey("h:hu_1", w.sellerId, w.plan.id))).value!;
  assert.equal(shared.creditMicros, 3_000_000);
  assert.equal(body.entitlement.remainingUsd, "3.000000");
  assert.equal(body.entitlement.sharedWithHuman, true);
});

Deno.test("entitlements: plans of an unclaimed anonymous credential die with it", async () => {
  await using w = await createCommerceWorld();
  const { token, agent, renew } = await w.agents.issue();
  assert.equal((await pay(w, token, SANDBOX_TOKENS.card.success)).res.status, 200);
  const listed = (await (await w.req("/agent/entitlements", { token })).json()).entitlements;
  assert.equal(listed.length, 1);
  // The plan carries the credential's own expiry (from the identity room's record: 3 days).
  assert.equal(listed[0].expiresAt, agent.expiresAt);
  w.clock.advance(3 * 86400_000 - 60_000);
  assert.equal((await (await w.req("/agent/entitlements", { token: await renew() })).json()).entitlements.length, 1);
  w.clock.advance(61_000);
  // The credential is gone: no new token, and the ledger no longer counts its plan.
  await assert.rejects(renew);
  assert.deepEqual(await w.deps.commerce.service.ledger.entries(agent, w.sellerId), []);
});

Deno.test("entitlements: an unclaimed credential's access token ends with it, so nothing is charged for a plan born dead", async () => {
  await using w = await createCommerceWorld();
  const { agent, renew } = await w.agents.issue();
  // A token exchanged a minute before the credential expires (tokens otherwise live five minutes).
  w.clock.advance(Date.parse(agent.expiresAt!) - w.clock.now().getTime() - 60_000);
  const token = await renew();
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
  const ch = challengesOf(first).find((c) => c.method === "card")!;
  await first.body?.cancel();
  w.clock.advance(61_000);
  const late = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(amount("5.000000"), {
      authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(late.status, 401);
  const body = await late.json();
  assert.equal(body.error, "invalid_token");
  assert.equal(body.reason, "token_expired");
  assert.equal((w.deps.commerce.processor as SandboxProcessor).ledger.length, 0, "no card charged");
});

Deno.test("network view: on a network host of its own, GET /agent/entitlements there lists every seller", async () => {
  await using w = await createTestWorld({
    env: { AGENT_AUTH_URL: "http://store.test", NETWORK_API_URL: "http://network.test" },
  });
  const { tenantId } = await w.tenantWithKey();
  const sellers = w.deps.storefront.sellers;
  await sellers.create({ sellerId: "s1", tenantId, name: "S1", hosts: ["store.test"] });
  await sellers.create({ sellerId: "s2", tenantId, name: "S2", hosts: ["other.test"] });
  const { token, agent } = await new TestAgents(w.deps, "s1").issue();
  const p1 = await w.deps.commerce.catalog.addCreditPlan("s1", {
    name: "a",
    minimumMicros: 100_000,
    maximumMicros: 1e8,
  });
  const p2 = await w.deps.commerce.catalog.addCreditPlan("s2", {
    name: "b",
    minimumMicros: 100_000,
    maximumMicros: 1e8,
  });
  for (const [sellerId, planId] of [["s1", p1.id], ["s2", p2.id]]) {
    const g = await w.deps.commerce.service.ledger.prepareGrant(agent, sellerId, planId, 1_000_000);
    await w.deps.kv.set(g.key, g.next);
  }
  const net = await w.app.request("http://network.test/agent/entitlements", {
    headers: { host: "network.test", authorization: `Bearer ${token}` },
  });
  const body = await net.json();
  assert.deepEqual(body.entitlements.map((e: { sellerId: string }) => e.sellerId).sort(), ["s1", "s2"]);
  await w.deps.payproxy.secrets.create("s1");
  const here = await w.app.request("http://store.test/agent/entitlements", {
    headers: { host: "store.test", authorization: `Bearer ${token}` },
  });
  assert.deepEqual((await here.json()).entitlements.map((e: { sellerId: string }) => e.sellerId), ["s1"]);
});

Deno.test("purchase: a charge abandoned mid-way (process died) is taken over after 30 s, charged once", async () => {
  await using w = await createCommerceWorld();
  const { token, renew } = await w.agents.issue();
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(amount("5.000000")), token });
  const ch = challengesOf(first).find((c) => c.method === "card")!;
  await first.body?.cancel();
  const processor = w.deps.commerce.processor as SandboxProcessor;
  // Simulate the dead process: it charged, but never recorded the outcome.
  await processor.charge({
    rail: "card",
    token: SANDBOX_TOKENS.card.success,
    amountMicros: 5_000_000,
    reference: ch.id,
    description: "x",
  });
  const now = w.clock.now().toISOString();
  await w.deps.kv.set(["commerce_payment", w.sellerId, ch.id], {
    reference: ch.id,
    sellerId: w.sellerId,
    rail: "card",
    state: "processing",
    terms: ch.request,
    amountMicros: 5_000_000,
    createdAt: now,
    updatedAt: now,
  });
  const retry = async () =>
    await w.req(`/plans/${w.plan.id}/purchase`, {
      ...postJson(amount("5.000000"), {
        authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }),
        "zc-agent-authorization": `Bearer ${await renew()}`,
      }),
    });
  const early = await retry();
  assert.equal((await early.json()).error, "payment_incomplete");
  w.clock.advance(31_000);
  const late = await retry();
  assert.equal(late.status, 200);
  assert.equal((await late.json()).entitlement.remainingUsd, "5.000000");
  assert.equal(processor.ledger.length, 1);
});

Deno.test("entitlements: a plan bought before the claim is shared with every other credential the same human claims", async () => {
  await using w = await createCommerceWorld();
  const post = (path: string, body: unknown) => w.req(path, postJson(body));
  const exchange = async (assertion: string) => {
    const res = await w.req("/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
    });
    assert.equal(res.status, 200);
    return (await res.json()).access_token as string;
  };
  const claim = async (claimToken: string, email: string) => {
    const started = await post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: claimToken,
      login_hint: email,
    });
    assert.equal(started.status, 200);
    const uri = (await started.json()).claim.attempt.verification_uri as string;
    const done = await post("/agent/identity/claim/complete", {
      claim_token: claimToken,
      // The human's side: the code from the e-mail (outbox), confirm on the page, read the user code.
      user_code: (await decideOnPage(w, uri, "confirm")).userCode,
    });
    assert.equal(done.status, 200);
    return (await done.json()).identity;
  };

  // Credential A: anonymous, buys 5 USD of credit while unclaimed, then its human claims it.
  const a = await (await post("/agent/identity", { type: "anonymous" })).json();
  assert.equal((await pay(w, await exchange(a.identity.assertion), SANDBOX_TOKENS.card.success)).res.status, 200);
  await claim(a.claim.token, "ada@example.com");

  // Credential B: a second registration of the same human, claimed afterwards.
  const b = await (await post("/agent/identity", { type: "service_auth", login_hint: "ada@example.com" })).json();
  const bIdentity = await claim(b.claim.token, "ada@example.com");
  assert.notEqual(bIdentity.credential_id, a.identity.credential_id);

  const viaB = await (await w.req("/agent/entitlements", { token: await exchange(bIdentity.assertion) })).json();
  assert.equal(viaB.entitlements.length, 1, "B sees the plan A bought before its claim");
  assert.equal(viaB.entitlements[0].remainingUsd, "5.000000");
  const stranger = await (await post("/agent/identity", { type: "anonymous" })).json();
  const none = await (await w.req("/agent/entitlements", { token: await exchange(stranger.identity.assertion) }))
    .json();
  assert.deepEqual(none.entitlements, []);
});
