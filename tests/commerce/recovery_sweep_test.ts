/**
 * The commerce sweep (core/commerce/settle_sweep.ts) on a quiet storefront: money held for a call
 * or a payment nobody comes back for was given back only by a later paid call (stale reservations,
 * abandoned pay-per-call charges), and the sweep ran only with `PAY_EVM_RPC_URL` set (a Stripe
 * purchase `paid` whose credit failed to commit waited for its agent's retry). The sweep now does
 * all three from their indexes, whatever rails are configured, and moves each once when a live call
 * races it. Real local peers: the payproxy upstream, the Stripe stand-in.
 */
import assert from "node:assert/strict";
import { Mppx } from "mppx/client";
import { stripe } from "mppx/stripe/client";
import { FixedClock } from "../../core/clock.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { SETTLE_RECHECK_GRACE_MS } from "../../core/commerce/settlement.ts";
import { kvFaults } from "../_kv_faults.ts";
import { createCommerceWorld, postJson } from "./_helpers.ts";
import { startStripeStandIn } from "./_stripe_standin.ts";

Deno.test("commerce sweep: in a Stripe-only setup, a paid purchase whose credit failed to commit is credited once, its agent never coming back", async () => {
  const standIn = startStripeStandIn();
  const faults = kvFaults();
  await using w = await createCommerceWorld({
    clock: new FixedClock(new Date().toISOString()),
    env: { PAY_STRIPE_SECRET_KEY: standIn.secretKey, PAY_STRIPE_API_URL: standIn.url },
    wrapKv: faults.wrap,
  });
  try {
    const buyer = await w.agents.issue();
    const { agent } = buyer;
    let token = buyer.token;
    const sent: string[] = [];
    const transport: typeof fetch = (input, init) => {
      const req = new Request(input, init);
      req.headers.set("host", "store.test");
      req.headers.set("zc-agent-authorization", `Bearer ${token}`);
      const auth = req.headers.get("authorization");
      if (auth) sent.push(auth);
      return Promise.resolve(w.app.fetch(req));
    };
    const client = Mppx.create({
      methods: [stripe({
        paymentMethod: "pm_card_visa",
        createToken: async ({ amount, currency, expiresAt, paymentMethod }) => {
          const res = await fetch(`${standIn.url}/v1/test_helpers/shared_payment/granted_tokens`, {
            method: "POST",
            body: new URLSearchParams({
              payment_method: paymentMethod!,
              "usage_limits[currency]": currency,
              "usage_limits[max_amount]": amount,
              "usage_limits[expires_at]": String(expiresAt),
            }),
          });
          return (await res.json()).id;
        },
      })],
      fetch: transport,
      polyfill: false,
    });
    // The PaymentIntent succeeds; the commit that consumes the reference and grants the credit fails.
    faults.failNext(1, {
      op: "set",
      entity: "commerce_payment",
      value: (v) => (v as PaymentRecord).state === "consumed",
    });
    const failed = await client.fetch(
      `http://store.test/plans/${w.plan.id}/purchase`,
      postJson({ amountUsd: "5.000000" }),
    );
    assert.equal(failed.status, 500);
    await failed.body?.cancel();
    assert.equal(standIn.captured.length, 1, "the card was charged");
    const credit = async () =>
      (await w.deps.commerce.service.ledger.entries(agent, w.sellerId)).reduce((n, e) => n + e.value.creditMicros, 0);
    assert.equal(await credit(), 0);

    const sweep = w.deps.settleSweep;
    assert.ok(sweep, "the sweep runs without PAY_EVM_RPC_URL");
    w.clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
    assert.deepEqual((await sweep.sweep()).resolved.map((r) => r.state), ["consumed"]);
    assert.equal(await credit(), 5_000_000);
    assert.deepEqual((await sweep.sweep()).resolved, []);
    // The credential sent again now: spent, nothing granted twice, nothing charged twice.
    token = await buyer.renew();
    const late = await transport(`http://store.test/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "5.000000" }),
      headers: { "content-type": "application/json", authorization: sent.at(-1)! },
    });
    assert.equal(late.status, 409);
    assert.equal((await late.json()).error, "payment_consumed");
    assert.equal(await credit(), 5_000_000);
    assert.equal(standIn.captured.length, 1);
  } finally {
    await standIn.close();
  }
});
