/**
 * One process serves many sellers, each on its own hosts: every URL a seller's agent or human is
 * handed (checkout page, payment status, purchase and extend URLs, the discovery documents) is on
 * that seller's host, so following it reaches the same seller; the seller on AGENT_AUTH_URL's host
 * keeps AGENT_AUTH_URL.
 */
import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson, TestAgents } from "./_helpers.ts";

/** The commerce world plus a second seller, `beta`, on its own host with its own plan. */
async function twoSellerWorld() {
  const w = await createCommerceWorld();
  const { deps, clock } = w;
  const { tenantId } = await w.tenantWithKey("Beta Media");
  await deps.repos.dataModels.create({
    id: newId("dm", clock),
    tenantId,
    name: "Beta Wire",
    toolName: "beta-wire",
    sites: [],
    marketplace: true,
    createdAt: clock.now().toISOString(),
  });
  await deps.storefront.sellers.create({ sellerId: "beta", tenantId, name: "Beta Media", hosts: ["beta.test"] });
  await deps.payproxy.secrets.create("beta");
  const plan = await deps.commerce.catalog.addCreditPlan("beta", {
    name: "Beta credit",
    services: ["*"],
    minimumMicros: 100_000,
    maximumMicros: 100_000_000,
  });
  /** A request to whatever host the URL names (the way an agent or a browser follows it). */
  const follow = (url: string, init: RequestInit & { token?: string } = {}) => {
    const { token, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set("host", new URL(url).host);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return Promise.resolve(w.app.request(url, { ...rest, headers }));
  };
  return Object.assign(w, { beta: { plan, agents: new TestAgents(deps, "beta") }, follow });
}

Deno.test("checkout lane on a seller's own host: the 402's checkout and status URLs are on that host, and both answer", async () => {
  await using w = await twoSellerWorld();
  const { token } = await w.beta.agents.issue();
  const res = await w.follow(`http://beta.test/plans/${w.beta.plan.id}/purchase`, {
    ...postJson({ amountUsd: "3.000000", checkout: true }),
    token,
  });
  assert.equal(res.status, 402);
  const body = await res.json();
  const url: string = body.card.checkout.url;
  const statusUrl: string = body.card.statusUrl;
  assert.match(url, /^http:\/\/beta\.test\/checkout\/[A-Za-z0-9_-]+$/);
  assert.match(statusUrl, /^http:\/\/beta\.test\/payments\/[A-Za-z0-9_-]+$/);

  // The human opens the checkout where the URL points: beta's page, not "Unknown checkout".
  const page = await w.follow(url);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Beta Media/);
  // The agent polls where the URL points: the open reference, whose checkoutUrl is the same page.
  const polled = await w.follow(statusUrl);
  assert.equal(polled.status, 200);
  const status = await polled.json();
  assert.equal(status.status, "open");
  assert.equal(status.checkoutUrl, url);
  // Answering the card challenge before the human paid: payment_incomplete names the same status URL.
  const [challenge] = challengesOf(res);
  const early = await w.follow(`http://beta.test/plans/${w.beta.plan.id}/purchase`, {
    ...postJson({ amountUsd: "3.000000", checkout: true }, {
      authorization: paymentAuthorization(challenge!, body.card.checkout.credentialPayload),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  const incomplete = await early.json();
  assert.equal(incomplete.error, "payment_incomplete");
  assert.equal(incomplete.statusUrl, statusUrl);
});

Deno.test("discovery documents name each seller's own host: beta's on beta.test (purchase.url buys from beta), AGENT_AUTH_URL's seller's unchanged", async () => {
  await using w = await twoSellerWorld();
  const services = await (await w.follow("http://beta.test/services")).json();
  assert.equal(services.seller.id, "beta");
  const [plan] = services.plans;
  assert.equal(plan.purchase.url, `http://beta.test/plans/${w.beta.plan.id}/purchase`);
  assert.equal(plan.extend.url, "http://beta.test/extend");
  assert.match(services.services[0].endpoint.url, /^http:\/\/beta\.test\/v2\/search\?data_model_id=dm_/);

  const manifest = await (await w.follow("http://beta.test/manifest.json")).json();
  assert.equal(manifest.endpoints.purchase, "http://beta.test/plans/{planId}/purchase");
  assert.equal(manifest.endpoints.paymentStatus, "http://beta.test/payments/{reference}");
  assert.equal(manifest.plans[0].purchase.url, plan.purchase.url);

  for (const path of ["/llms.txt", "/llms-full.txt"]) {
    const text = await (await w.follow(`http://beta.test${path}`)).text();
    assert.match(text, /\(http:\/\/beta\.test\/services\)/, path);
    // Only the network-wide API stays where it is (NETWORK_API_URL).
    assert.doesNotMatch(text, /store\.test(?!\/network)/, path);
  }

  // An agent that follows the advertised purchase URL is asked to pay beta, for beta's plan.
  const { token } = await w.beta.agents.issue();
  const buy = await w.follow(plan.purchase.url, { ...postJson({ amountUsd: "3.000000" }), token });
  assert.equal(buy.status, 402);
  assert.equal((await buy.json()).planId, w.beta.plan.id);
  // A paid call without a plan points at beta's plans on beta's host too.
  const call = await w.follow(services.services[0].endpoint.url, { ...postJson({ query: "x" }), token });
  const refused = await call.json();
  assert.equal(refused.error, "plan_required");
  assert.equal(refused.plans[0].purchase.url, plan.purchase.url);

  // The seller on AGENT_AUTH_URL's host keeps AGENT_AUTH_URL, and nothing of beta leaks into its documents.
  const own = await (await w.req("/services")).json();
  assert.equal(own.seller.id, w.sellerId);
  assert.equal(own.plans[0].purchase.url, `http://store.test/plans/${w.plan.id}/purchase`);
  assert.equal(own.plans[0].extend.url, "http://store.test/extend");
  assert.equal((await (await w.req("/manifest.json")).json()).endpoints.services, "http://store.test/services");
  for (const path of ["/services", "/manifest.json", "/llms.txt", "/llms-full.txt"]) {
    assert.doesNotMatch(await (await w.req(path)).text(), /beta\.test/, path);
  }
  const { token: acmeToken } = await w.agents.issue();
  const acme = await (await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "3.000000", checkout: true }),
    token: acmeToken,
  })).json();
  assert.match(acme.card.checkout.url, /^http:\/\/store\.test\/checkout\//);
  assert.match(acme.card.statusUrl, /^http:\/\/store\.test\/payments\//);
});
