/**
 * The card lane through mppx's own `stripe` method with shared payment tokens, paid by the stock mppx
 * client. Stripe's API is played by a LOCAL STAND-IN (tests/commerce/_stripe_standin.ts): the
 * storefront's ledger is checked against what the stand-in captured.
 */
import assert from "node:assert/strict";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { type CommerceWorld, postJson } from "./_helpers.ts";
import { cardClient, startStripeStandIn, stripeWorld } from "./_stripe_standin.ts";
import { kvFaults } from "../_kv_faults.ts";

async function stripeRecords(w: CommerceWorld): Promise<PaymentRecord[]> {
  const out: PaymentRecord[] = [];
  for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) {
    if (e.value.rail === "stripe") out.push(e.value);
  }
  return out;
}

Deno.test("mppx's stripe method: the stock client buys and tops up with an SPT; a replay and a decline charge nothing", async (t) => {
  const standIn = startStripeStandIn();
  // mppx reads the process clock for challenge expiry: the world's clock is anchored there.
  await using w = await stripeWorld(standIn);
  try {
    const { token } = await w.agents.issue();
    const card = cardClient(w, standIn, token, "pm_card_visa");

    await t.step("the 402 offers stripe/charge beside the own rails", async () => {
      const res = await card.transport(
        `http://store.test/plans/${w.plan.id}/purchase`,
        postJson({ amountUsd: "5.000000" }),
      );
      assert.equal(res.status, 402);
      assert.match(res.headers.get("www-authenticate")!, /method="stripe"/);
      assert.equal(res.headers.get("payment-required"), null, "x402 is offered only with the evm method");
      await res.body?.cancel();
    });

    await t.step("purchase and extend settle once each through a PaymentIntent", async () => {
      const bought = await card.client.fetch(
        `http://store.test/plans/${w.plan.id}/purchase`,
        postJson({ amountUsd: "5.000000" }),
      );
      assert.equal(bought.status, 200, await bought.clone().text());
      const body = await bought.json();
      assert.equal(body.rail, "stripe");
      assert.equal(body.entitlement.remainingUsd, "5.000000");
      const topped = await card.client.fetch("http://store.test/extend", postJson({ amountUsd: "1.000000" }));
      assert.equal(topped.status, 200, await topped.clone().text());
      assert.equal((await topped.json()).entitlement.remainingUsd, "6.000000");
      assert.deepEqual(standIn.captured.map((c) => c.amount), [500, 100]);
    });

    await t.step("the same credential sent again is payment_consumed and charges nothing", async () => {
      const used = card.sent.at(-1)!;
      const again = await card.transport("http://store.test/extend", {
        ...postJson({ amountUsd: "1.000000" }),
        headers: { "content-type": "application/json", authorization: used },
      });
      assert.equal(again.status, 409);
      assert.equal((await again.json()).error, "payment_consumed");
      assert.equal(standIn.captured.length, 2);
    });

    await t.step("a declined card is settlement_failed and grants nothing", async () => {
      const declined = cardClient(w, standIn, token, "pm_card_chargeDeclined");
      const res = await declined.client.fetch("http://store.test/extend", postJson({ amountUsd: "1.000000" }));
      assert.equal(res.status, 402);
      const body = await res.json();
      assert.equal(body.error, "settlement_failed");
      assert.ok(res.headers.get("www-authenticate"), "fresh challenges to start again");
      const ent = await (await card.transport("http://store.test/agent/entitlements")).json();
      assert.equal(ent.entitlements[0].remainingUsd, "6.000000");
    });

    await t.step("the ledger matches the stand-in's captures", async () => {
      const records = await stripeRecords(w);
      const consumed = records.filter((r) => r.state === "consumed");
      assert.equal(consumed.length, 2);
      assert.deepEqual(consumed.map((r) => r.processorRef).sort(), standIn.captured.map((c) => c.id).sort());
      const credited = consumed.reduce((s, r) => s + r.amountMicros, 0);
      assert.equal(credited, standIn.captured.reduce((s, c) => s + c.amount, 0) * 10_000);
      // Each declined attempt (the client may try its card more than once) is a terminal failed record.
      const failed = records.filter((r) => r.state === "failed");
      assert.ok(failed.length >= 1);
      assert.ok(failed.every((r) => r.settlementReason === "settlement_failed"));
    });
  } finally {
    await standIn.close();
  }
});

Deno.test("mppx's stripe method: a PaymentIntent whose answer is lost is 503 payment_provider_unavailable, stays processing, and is not paid again", async () => {
  const standIn = startStripeStandIn();
  // Stripe charged, its answer never arrived (a 502 from the way back, Stripe's "the request may have run").
  const lossy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const res = await fetch(`${standIn.url}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.method === "POST" ? await req.text() : undefined,
    });
    if (url.pathname === "/v1/payment_intents") {
      await res.body?.cancel();
      return new Response("bad gateway", { status: 502 });
    }
    return res;
  });
  await using w = await stripeWorld(standIn, { apiUrl: `http://127.0.0.1:${lossy.addr.port}` });
  try {
    const { token } = await w.agents.issue();
    const card = cardClient(w, standIn, token, "pm_card_visa");
    const res = await card.client.fetch(
      `http://store.test/plans/${w.plan.id}/purchase`,
      postJson({ amountUsd: "5.000000" }),
    );
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.equal(body.error, "payment_provider_unavailable");
    assert.equal(res.headers.get("www-authenticate"), null, "no fresh challenge to pay again");
    assert.equal(standIn.captured.length, 1, "the card was charged once");
    assert.deepEqual((await stripeRecords(w)).map((r) => r.state), ["processing"]);
    const ent = await (await card.transport("http://store.test/agent/entitlements")).json();
    assert.equal(ent.entitlements.length, 0, "nothing granted on an answer never seen");
  } finally {
    await lossy.shutdown();
    await standIn.close();
  }
});

Deno.test("mppx's stripe method: a settled payment whose credit failed to commit is credited when the credential is sent again", async () => {
  const standIn = startStripeStandIn();
  const faults = kvFaults();
  await using w = await stripeWorld(standIn, { wrapKv: faults.wrap });
  try {
    const { token } = await w.agents.issue();
    const card = cardClient(w, standIn, token, "pm_card_visa");
    // The PaymentIntent succeeds; the commit that consumes the reference and grants the credit fails.
    faults.failNext(1, {
      op: "set",
      entity: "commerce_payment",
      value: (v) => (v as PaymentRecord).state === "consumed",
    });
    const failed = await card.client.fetch(
      `http://store.test/plans/${w.plan.id}/purchase`,
      postJson({ amountUsd: "5.000000" }),
    );
    assert.equal(failed.status, 500, await failed.clone().text());
    await failed.body?.cancel();
    assert.equal(faults.left, 0);
    assert.equal(standIn.captured.length, 1, "the card was charged");

    // The agent sends the same credential again: the payment is credited once, never charged again.
    const again = await card.transport(`http://store.test/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "5.000000" }),
      headers: { "content-type": "application/json", authorization: card.sent.at(-1)! },
    });
    const body = await again.json();
    assert.equal(again.status, 200, JSON.stringify(body));
    assert.equal(body.entitlement.remainingUsd, "5.000000");
    const third = await card.transport(`http://store.test/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "5.000000" }),
      headers: { "content-type": "application/json", authorization: card.sent.at(-1)! },
    });
    assert.equal(third.status, 409);
    assert.equal((await third.json()).error, "payment_consumed");
    assert.equal(standIn.captured.length, 1);
    const [record] = await stripeRecords(w);
    assert.equal(record?.state, "consumed");
    assert.equal(record?.processorRef, standIn.captured[0]!.id);

    // Another agent presenting that credential gets nothing of it.
    const other = await w.agents.issue();
    const stolen = await w.app.fetch(
      new Request(`http://store.test/plans/${w.plan.id}/purchase`, {
        method: "POST",
        headers: {
          host: "store.test",
          "content-type": "application/json",
          authorization: card.sent.at(-1)!,
          "zc-agent-authorization": `Bearer ${other.token}`,
        },
        body: JSON.stringify({ amountUsd: "5.000000" }),
      }),
    );
    assert.notEqual(stolen.status, 200);
    await stolen.body?.cancel();
  } finally {
    await standIn.close();
  }
});
