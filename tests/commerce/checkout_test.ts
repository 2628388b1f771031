import {
  CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR,
  CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR,
  MAX_CHECKOUT_DECLINES,
} from "../../core/commerce/service.ts";
import assert from "node:assert/strict";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "./_helpers.ts";
import { kvFaults } from "../_kv_faults.ts";

/** Opens the checkout page and submits its form the way a browser does (CSRF field, cookie, Origin). */
const submitForm = async (
  w: Awaited<ReturnType<typeof createCommerceWorld>>,
  url: string,
  fields: Record<string, string>,
) => (await openTab(w, url))(fields);

/** A checkout page the human opened (its form's CSRF field and cookie), to submit later. */
const openTab = async (w: Awaited<ReturnType<typeof createCommerceWorld>>, url: string) => {
  const page = await w.app.request(url, { headers: { host: w.host } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  const cookie = page.headers.get("set-cookie")?.split(";")[0] ?? "";
  return (fields: Record<string, string>) =>
    w.app.request(url, {
      method: "POST",
      headers: {
        host: w.host,
        cookie,
        origin: `http://${w.host}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
};

/** The value of an element's attribute in server-rendered HTML. */
const attr = (html: string, id: string, name: string) => new RegExp(`id="${id}"[^>]*${name}="([^"]*)"`).exec(html)?.[1];

Deno.test("checkout lane: payment_incomplete until a human pays on the hosted page, then the purchase completes", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const body = { amountUsd: "3.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  assert.equal(first.status, 402);
  const challenges = challengesOf(first);
  assert.deepEqual(challenges.map((c) => c.method), ["card"]);
  assert.equal(challenges[0]!.request.checkout, true);
  const json = await first.json();
  const { url, credentialPayload } = json.card.checkout;
  const statusUrl: string = json.card.statusUrl;
  assert.match(url, /^http:\/\/store\.test\/checkout\//);
  const auth = paymentAuthorization(challenges[0]!, credentialPayload);
  const retry = () =>
    w.req(`/plans/${w.plan.id}/purchase`, {
      ...postJson(body, { authorization: auth, "zc-agent-authorization": `Bearer ${token}` }),
    });

  // Before the human pays: incomplete, and the status URL says open.
  const early = await retry();
  assert.equal(early.status, 402);
  const earlyBody = await early.json();
  assert.equal(earlyBody.error, "payment_incomplete");
  assert.equal(earlyBody.statusUrl, statusUrl);
  const polled = await (await w.app.request(statusUrl, { headers: { host: w.host } })).json();
  assert.equal(polled.status, "open");
  assert.equal(polled.complete, false);

  // The human opens the page and submits its form with a declined card first, then a good one.
  const page = await w.app.request(url, { headers: { host: w.host } });
  assert.equal(page.status, 200);
  assert.equal(page.headers.get("x-frame-options"), "DENY");
  const html = await page.text();
  assert.equal(attr(html, "state", "data-state"), "open");
  assert.match(html, /<form method="post" id="pay">/);
  assert.match(html, /<strong id="amount">\$3\.00<\/strong>/);
  const declined = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.insufficientFunds, action: "pay" }))
    .text();
  // A decline leaves the same checkout open for another card.
  assert.equal(attr(declined, "state", "data-state"), "open");
  assert.match(declined, /Declined: insufficient_funds\. Try another card \(4 tries left\)\./);
  const stillOpen = await (await w.app.request(statusUrl, { headers: { host: w.host } })).json();
  assert.equal(stillOpen.status, "open");
  assert.equal(stillOpen.settlementReason, "insufficient_funds");
  assert.equal((await (await retry()).json()).error, "payment_incomplete");

  // The same checkout, paid with the success token.
  const ch2 = challenges[0]!;
  const paid = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" })).text();
  assert.equal(attr(paid, "state", "data-state"), "paid");
  const done = await (await w.app.request(statusUrl, { headers: { host: w.host } })).json();
  assert.equal(done.status, "paid");
  assert.equal(done.complete, true);
  assert.equal(done.settlementReason, undefined, "an earlier decline is not reported once paid");
  // A second submit does not charge again.
  const twice = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" })).text();
  assert.equal(attr(twice, "state", "data-state"), "paid");

  const ok = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch2, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(ok.status, 200);
  assert.ok(ok.headers.get("payment-receipt"));
  const okBody = await ok.json();
  assert.equal(okBody.entitlement.remainingUsd, "3.000000");
  const again = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch2, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal((await again.json()).error, "payment_consumed");
});

Deno.test("checkout lane: a decline may be retried on the same checkout, but the fifth ends it (no card testing)", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const body = { amountUsd: "2.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const { url } = (await first.json()).card.checkout;
  for (let left = MAX_CHECKOUT_DECLINES - 1; left >= 1; left--) {
    const page = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.insufficientFunds, action: "pay" }))
      .text();
    assert.equal(attr(page, "state", "data-state"), "open");
    assert.match(page, new RegExp(`\\(${left} tr(y|ies) left\\)`));
  }
  const last = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.insufficientFunds, action: "pay" }))
    .text();
  assert.equal(attr(last, "state", "data-state"), "failed");
  assert.match(last, /This checkout has ended/);
  // A good card after that charges nothing: the checkout is over.
  const after = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" })).text();
  assert.equal(attr(after, "state", "data-state"), "failed");
});

Deno.test("checkout lane: cancelled or expired checkouts are payment_released", async () => {
  await using w = await createCommerceWorld();
  const { token } = await w.agents.issue();
  const body = { amountUsd: "1.000000", checkout: true };
  const open = async () => {
    const r = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
    return { ch: challengesOf(r)[0]!, json: await r.json() };
  };
  const a = await open();
  const cancelled = await (await submitForm(w, a.json.card.checkout.url, { action: "cancel" })).text();
  assert.equal(attr(cancelled, "state", "data-state"), "released");
  const r1 = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(a.ch, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal((await r1.json()).error, "payment_released");

  const b = await open();
  w.clock.advance(31 * 60_000);
  const status = await (await w.app.request(b.json.card.statusUrl, { headers: { host: w.host } })).json();
  assert.equal(status.status, "released");
  const page = await (await w.app.request(b.json.card.checkout.url, { headers: { host: w.host } })).text();
  assert.equal(attr(page, "state", "data-state"), "released");
});

Deno.test("checkout page: unknown references are 404 and form posts need the form content type", async () => {
  await using w = await createCommerceWorld();
  const res = await w.app.request("http://store.test/checkout/AAAAAAAAAAAAAAAAAAAAAAAA", { headers: { host: w.host } });
  assert.equal(res.status, 404);
  await res.body?.cancel();
  const bad = await w.app.request("http://store.test/checkout/AAAAAAAAAAAAAAAAAAAAAAAA", {
    method: "POST",
    headers: { host: w.host, "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(bad.status, 415);
  await bad.body?.cancel();
});

Deno.test("checkout lane: a checkout the human pays after its challenge's ten minutes still grants the credit", async () => {
  await using w = await createCommerceWorld();
  const { token, renew } = await w.agents.issue();
  const body = { amountUsd: "4.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const ch = challengesOf(first)[0]!;
  const json = await first.json();
  // The page is open for thirty minutes: the human pays at minute 20, the agent polls at minute 29.
  w.clock.advance(20 * 60_000);
  const paid =
    await (await submitForm(w, json.card.checkout.url, { token: SANDBOX_TOKENS.card.success, action: "pay" }))
      .text();
  assert.equal(attr(paid, "state", "data-state"), "paid");
  w.clock.advance(9 * 60_000);
  const ok = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch, { checkout: true }),
      "zc-agent-authorization": `Bearer ${await renew()}`,
    }),
  });
  assert.equal(ok.status, 200, "the card was charged: the paid checkout must be redeemable");
  assert.equal((await ok.json()).entitlement.remainingUsd, "4.000000");

  // One nobody paid is released with its page, and its credential says so.
  const unpaid = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token: await renew() });
  const late = challengesOf(unpaid)[0]!;
  await unpaid.body?.cancel();
  w.clock.advance(31 * 60_000);
  const gone = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(late, { checkout: true }),
      "zc-agent-authorization": `Bearer ${await renew()}`,
    }),
  });
  assert.equal((await gone.json()).error, "payment_released");
});

Deno.test("checkout page: cards tried from one address are capped across checkouts, not only per checkout", async () => {
  await using w = await createCommerceWorld();
  const { renew } = await w.agents.issue();
  const openCheckout = async () => {
    const body = postJson({ amountUsd: "2.000000", checkout: true });
    const r = await w.req(`/plans/${w.plan.id}/purchase`, { ...body, token: await renew() });
    return (await r.json()).card.checkout.url as string;
  };
  // Two checkouts, each declined to its end: the card tester then opens another.
  for (let i = 0; i < 2; i++) {
    const url = await openCheckout();
    for (let d = 0; d < MAX_CHECKOUT_DECLINES; d++) {
      await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.insufficientFunds, action: "pay" })).body?.cancel();
    }
  }
  assert.equal(2 * MAX_CHECKOUT_DECLINES, CHECKOUT_CARDS_PER_ADDRESS_PER_HOUR);
  const third = await openCheckout();
  const refused = await submitForm(w, third, { token: SANDBOX_TOKENS.card.success, action: "pay" });
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get("retry-after")) > 0);
  const html = await refused.text();
  assert.equal(attr(html, "state", "data-state"), "open");
  assert.match(html, /Too many card attempts from this address/);
  assert.equal((w.deps.commerce.processor as SandboxProcessor).ledger.length, 0, "nothing charged");
  // A cancel is no card attempt: it still works.
  const cancelled = await (await submitForm(w, third, { action: "cancel" })).text();
  assert.equal(attr(cancelled, "state", "data-state"), "released");
  // The window passes: the address may pay again.
  w.clock.advance(3600_000);
  const fourth = await openCheckout();
  const paid = await (await submitForm(w, fourth, { token: SANDBOX_TOKENS.card.success, action: "pay" })).text();
  assert.equal(attr(paid, "state", "data-state"), "paid");
});

Deno.test("checkout lane: hosted checkouts opened from one address are bounded (each is a record a 402 writes)", async () => {
  await using w = await createCommerceWorld();
  const { renew } = await w.agents.issue();
  const open = async () =>
    await w.req(`/plans/${w.plan.id}/purchase`, {
      ...postJson({ amountUsd: "1.000000", checkout: true }),
      token: await renew(),
    });
  for (let i = 0; i < CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR; i++) {
    const r = await open();
    assert.equal(r.status, 402);
    await r.body?.cancel();
  }
  const refused = await open();
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get("retry-after")) > 0);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.ok(body.retry_after > 0);
  let records = 0;
  for await (const _ of w.deps.kv.list({ prefix: ["commerce_payment"] })) records++;
  assert.equal(records, CHECKOUT_OPENS_PER_ADDRESS_PER_HOUR, "the refused request wrote nothing");
  // A plain 402 writes nothing and is not counted.
  const plain = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "1.000000" }),
    token: await renew(),
  });
  assert.equal(plain.status, 402);
  await plain.body?.cancel();
  w.clock.advance(3600_000);
  const later = await open();
  assert.equal(later.status, 402);
  await later.body?.cancel();
});

/** Holds the sandbox processor's next card charge until the test lets it go (a processor slow but not dead). */
function gateCharges(processor: SandboxProcessor): { release(): void; started: Promise<void> } {
  const charge = processor.charge.bind(processor);
  let release!: () => void, started!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const began = new Promise<void>((r) => started = r);
  let held = false;
  processor.charge = async (input) => {
    if (!held) {
      held = true;
      started();
      await gate;
    }
    return await charge(input);
  };
  return { release, started: began };
}

Deno.test("checkout lane: a charge that succeeds after the human cancelled a stale checkout is refunded, never kept as released", async () => {
  await using w = await createCommerceWorld();
  const processor = w.deps.commerce.processor as SandboxProcessor;
  const { token } = await w.agents.issue();
  const body = { amountUsd: "2.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const { card } = await first.json();
  const url: string = card.checkout.url;
  // The human has the page open in a second tab too.
  const secondTab = await openTab(w, url);
  const gate = gateCharges(processor);
  const paying = submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" });
  await gate.started;
  // The charge hangs past the grace period; the human gives up and cancels in the other tab.
  w.clock.advance(31_000);
  const cancelled = await (await secondTab({ action: "cancel" })).text();
  assert.equal(attr(cancelled, "state", "data-state"), "released");
  gate.release();
  const late = await (await paying).text();

  assert.equal(processor.ledger.length, 1, "the card was charged once");
  assert.deepEqual(processor.refunds.map((r) => [r.amountMicros, r.reason]), [[2_000_000, "checkout_cancelled"]]);
  assert.equal(attr(late, "state", "data-state"), "refunded");
  const status = await (await w.app.request(card.statusUrl, { headers: { host: w.host } })).json();
  assert.equal(status.status, "refunded");
});

Deno.test("checkout lane: a late charge after a cancel stands as paid where the processor cannot refund, so the agent can redeem it", async () => {
  await using w = await createCommerceWorld();
  const processor = w.deps.commerce.processor as SandboxProcessor;
  // A processor without refunds (the interface makes them optional).
  Object.defineProperty(processor, "refund", { value: undefined });
  const { token } = await w.agents.issue();
  const body = { amountUsd: "2.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const ch = challengesOf(first)[0]!;
  const { url } = (await first.json()).card.checkout;
  const secondTab = await openTab(w, url);
  const gate = gateCharges(processor);
  const paying = submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" });
  await gate.started;
  w.clock.advance(31_000);
  await (await secondTab({ action: "cancel" })).body?.cancel();
  gate.release();
  assert.equal(attr(await (await paying).text(), "state", "data-state"), "paid");

  const redeemed = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(redeemed.status, 200, "the card was charged: the credit must be redeemable");
  assert.equal((await redeemed.json()).entitlement.remainingUsd, "2.000000");
});

Deno.test("checkout page: a charge stuck past the grace period offers paying again or cancelling, and the card is charged once", async () => {
  await using w = await createCommerceWorld();
  const processor = w.deps.commerce.processor as SandboxProcessor;
  const { token } = await w.agents.issue();
  const body = { amountUsd: "2.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const ch = challengesOf(first)[0]!;
  const { card } = await first.json();
  const url: string = card.checkout.url;
  const gate = gateCharges(processor);
  const stuck = submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" });
  await gate.started;

  // Within the grace period the page only says the payment is being processed.
  const waiting = await (await w.app.request(url, { headers: { host: w.host } })).text();
  assert.equal(attr(waiting, "state", "data-state"), "processing");
  assert.ok(!waiting.includes('id="pay"'), "no second payment while the first may still finish");

  // Past it (the process charging may have died), the human can pay again or cancel.
  w.clock.advance(31_000);
  const stale = await (await w.app.request(url, { headers: { host: w.host } })).text();
  assert.equal(attr(stale, "state", "data-state"), "processing");
  assert.ok(stale.includes('id="pay"') && stale.includes('id="cancel"'), "both forms are offered again");
  const paid = await (await submitForm(w, url, { token: SANDBOX_TOKENS.card.success, action: "pay" })).text();
  assert.equal(attr(paid, "state", "data-state"), "paid");

  // The first charge finishes late: the checkout stays paid and the card was charged once.
  gate.release();
  assert.equal(attr(await (await stuck).text(), "state", "data-state"), "paid");
  assert.equal(processor.ledger.length, 1);
  const redeemed = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(redeemed.status, 200);
  assert.equal((await redeemed.json()).entitlement.remainingUsd, "2.000000");
});

Deno.test("checkout lane: a card charged whose paid record failed to commit once is recorded paid, never reopened", async () => {
  const faults = kvFaults();
  await using w = await createCommerceWorld({ wrapKv: faults.wrap });
  const processor = w.deps.commerce.processor as SandboxProcessor;
  const { token } = await w.agents.issue();
  const body = { amountUsd: "2.000000", checkout: true };
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson(body), token });
  const ch = challengesOf(first)[0]!;
  const { card } = await first.json();
  // The card is charged; the commit that records the checkout paid fails once (a KV backend error).
  faults.failNext(1, {
    op: "set",
    entity: "commerce_payment",
    value: (v) => (v as { state?: string }).state === "paid",
  });
  const page = await (await submitForm(w, card.checkout.url, { token: SANDBOX_TOKENS.card.success, action: "pay" }))
    .text();
  assert.equal(faults.left, 0, "the paid record's commit failed");
  assert.equal(processor.ledger.length, 1);
  assert.equal(attr(page, "state", "data-state"), "paid");
  const status = await (await w.app.request(card.statusUrl, { headers: { host: w.host } })).json();
  assert.equal(status.status, "paid", "money moved: the checkout is not open to cancel or expire as released");
  const redeemed = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson(body, {
      authorization: paymentAuthorization(ch, { checkout: true }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(redeemed.status, 200);
  assert.equal((await redeemed.json()).entitlement.remainingUsd, "2.000000");
  assert.equal(processor.ledger.length, 1, "charged once");
});
