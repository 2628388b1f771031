/**
 * The whole chain in one process, with every room real: an agent token from the identity room, a
 * plan bought over the Payment scheme, a paid call through the storefront proxy, the payproxy route
 * verifying the storefront's signature and asking `/internal/allowance` (over the injected fetch,
 * which lands back in this app), the search answering, and the reported usage billed.
 */
import assert from "node:assert/strict";
import { unixSeconds } from "../../core/clock.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { signRequest } from "../../core/payproxy/signature.ts";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { createTestWorld } from "../_helpers.ts";
import { challengesOf, paymentAuthorization, postJson, TestAgents } from "./_helpers.ts";

async function world() {
  const self: { fetch?: (req: Request) => Response | Promise<Response> } = {};
  // Outbound calls to this service's own address (the allowance check) are served in-process.
  const fetch: typeof globalThis.fetch = (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin === "http://svc.test") return Promise.resolve(self.fetch!(req));
    return Promise.reject(new Error(`unexpected outbound call to ${req.url}`));
  };
  const w = await createTestWorld({ fetch });
  self.fetch = (req) => w.app.fetch(req);
  const seeded = await seedDemo(w.deps, [seedStorefront, seedPayproxySecret, seedCommerceDemo]);
  return { w, ids: seeded.ids };
}

const on = (init: RequestInit & { token?: string }) => {
  const headers = new Headers(init.headers);
  headers.set("host", "svc.test");
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  return { ...init, headers };
};

Deno.test("end to end: buy credit, call search through the paid proxy, the real payproxy route and allowance, billed once", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const agents = new TestAgents(w.deps, "demo");
  const { token } = await agents.issue();
  const plan = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;

  const first = await w.app.request(
    `http://svc.test/plans/${plan.id}/purchase`,
    on({ ...postJson({ amountUsd: "1.000000" }), token }),
  );
  assert.equal(first.status, 402);
  const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const bought = await w.app.request(
    `http://svc.test/plans/${plan.id}/purchase`,
    on(postJson({ amountUsd: "1.000000" }, {
      authorization: paymentAuthorization(wallet, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    })),
  );
  assert.equal(bought.status, 200);
  await bought.body?.cancel();

  const res = await w.app.request(
    `http://svc.test/v2/search?data_model_id=${ids.dataModelId}`,
    on({ ...postJson({ query: "city council budget" }), token }),
  );
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get("zc-usage-error"), null);
  assert.deepEqual(JSON.parse(res.headers.get("zc-usage")!), [{
    serviceSlug: "demo-news",
    meterSlug: "query",
    quantity: 1,
  }]);
  const body = await res.json();
  assert.ok(Array.isArray(body.response.results));

  // The payproxy route asked the storefront's allowance endpoint, and it answered (no fail-open).
  const m = w.deps.payproxy.metrics.allowance;
  assert.equal(m.allowed, 1);
  assert.equal(m.failOpen, 0);
  const ents = await (await w.app.request("http://svc.test/agent/entitlements", on({ token }))).json();
  assert.equal(ents.entitlements[0].remainingUsd, "0.990000");
});

Deno.test("end to end: the payproxy route's allowance check is denied by the storefront for an agent without credit", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const key = (await w.deps.payproxy.secrets.current("demo"))!;
  const body = JSON.stringify({ query: "budget" });
  const signed = await signRequest({
    ...key,
    t: unixSeconds(w.clock),
    method: "POST",
    url: `http://svc.test/payproxy/v2/search?data_model_id=${ids.dataModelId}`,
    body,
    requestId: crypto.randomUUID(),
    agentId: "ag_without_credit",
  });
  const res = await w.app.request(`http://svc.test/payproxy/v2/search?data_model_id=${ids.dataModelId}`, {
    method: "POST",
    headers: { ...signed.headers, "content-type": "application/json", host: "svc.test" },
    body,
  });
  assert.equal(res.status, 402);
  assert.deepEqual(await res.json(), {
    error: "payment_required",
    serviceSlug: "demo-news",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
  assert.equal(w.deps.payproxy.metrics.allowance.denied, 1);
});

Deno.test("end to end: a pay-as-you-go call is paid per request, then served by the real payproxy route", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const { token } = await new TestAgents(w.deps, "demo").issue();
  const url = `http://svc.test/v2/search?data_model_id=${ids.dataModelId}`;
  const first = await w.app.request(url, on({ ...postJson({ query: "budget" }), token }));
  assert.equal(first.status, 402);
  const challenge = challengesOf(first)[0]!;
  assert.equal((await first.json()).payment.amountUsd, "0.020000");
  const paid = await w.app.request(
    url,
    on(postJson({ query: "budget" }, {
      authorization: paymentAuthorization(challenge, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    })),
  );
  assert.equal(paid.status, 200, await paid.clone().text());
  assert.ok(paid.headers.get("payment-receipt"));
  assert.ok(paid.headers.get("zc-usage"));
  await paid.body?.cancel();
  assert.equal(w.deps.payproxy.metrics.allowance.allowed, 1);
  assert.equal(w.deps.payproxy.metrics.allowance.failOpen, 0);
});
