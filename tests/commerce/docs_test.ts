import assert from "node:assert/strict";
import { createCommerceWorld } from "./_helpers.ts";

Deno.test("catalog documents: /services, /manifest.json, /llms.txt and /llms-full.txt come from the catalog", async () => {
  await using w = await createCommerceWorld();
  const payg = await w.addPayg(20_000, ["demo-answers"]);
  const get = (path: string) => w.app.request(`http://store.test${path}`, { headers: { host: w.host } });

  const services = await (await get("/services")).json();
  const slugs = services.services.map((s: { slug: string }) => s.slug).sort();
  // Marketplace-enabled models only; the private-drafts model is not a service.
  assert.deepEqual(slugs, ["archive-vault", "demo-answers", "demo-news"]);
  const news = services.services.find((s: { slug: string }) => s.slug === "demo-news");
  assert.deepEqual(news.meters, [{ meterSlug: "query", priceUsd: "0.010000", unit: "request" }]);
  assert.equal(news.endpoint.url, `http://store.test/v2/search?data_model_id=${w.dataModelId}`);
  const credit = services.plans.find((p: { id: string }) => p.id === w.plan.id);
  assert.deepEqual(credit.purchase, {
    url: `http://store.test/plans/${w.plan.id}/purchase`,
    method: "POST",
    minimumUsd: "0.100000",
    maximumUsd: "100.000000",
    cardMinimumUsd: "0.500000",
    currency: "usd",
  });
  assert.equal(services.plans.find((p: { id: string }) => p.id === payg.id).purchasable, false);

  const manifest = await (await get("/manifest.json")).json();
  assert.equal(manifest.endpoints.networkEntitlements, "http://store.test/network/agent/entitlements");
  assert.equal(manifest.payment.cardMinimumUsd, "0.500000");

  const llms = await get("/llms.txt");
  assert.match(llms.headers.get("content-type")!, /^text\/plain/);
  const text = await llms.text();
  assert.match(text, /demo-answers \(aimodel\): 0\.020000 USD per query/);
  assert.ok(text.includes(w.plan.id));
  const full = await (await get("/llms-full.txt")).text();
  for (
    const needle of [
      "WWW-Authenticate: Payment",
      "ZC-Agent-Authorization",
      "statusUrl",
      "spt_test_success",
      "usage_exhausted",
      payg.id,
    ]
  ) {
    assert.ok(full.includes(needle), needle);
  }
});
