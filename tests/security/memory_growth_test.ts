/**
 * In-process state an outsider fills: each test floods real routes and checks that what the
 * process holds stays within its bound.
 */
import assert from "node:assert/strict";
import { SANDBOX_TOKENS, SandboxProcessor } from "../../core/commerce/processor.ts";
import { createTestWorld } from "../_helpers.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";

Deno.test("sandbox processor: a flood of purchases with made-up and working tokens keeps at most its bound of charges in memory", async () => {
  const processor = new SandboxProcessor({ remember: 3 });
  await using w = await createCommerceWorld({ overrides: { processor } });
  const { token } = await w.agents.issue();
  const purchase = `/plans/${w.plan.id}/purchase`;
  const body = { amountUsd: "1.000000" };
  const buy = async (payToken: string) => {
    const first = await w.req(purchase, { ...postJson(body), token });
    assert.equal(first.status, 402);
    const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
    await first.body?.cancel();
    const res = await w.req(purchase, {
      ...postJson(body, {
        authorization: paymentAuthorization(wallet, { token: payToken }),
        "zc-agent-authorization": `Bearer ${token}`,
      }),
    });
    await res.body?.cancel();
    return res.status;
  };
  // The production rails run the sandbox: any agent may charge made-up tokens without end.
  for (let i = 0; i < 20; i++) assert.equal(await buy(`wal_test_made_up_${i}`), 402);
  assert.equal(processor.remembered, 0, "declined charges are not remembered");
  for (let i = 0; i < 6; i++) assert.equal(await buy(SANDBOX_TOKENS.wallet.success), 200);
  assert.equal(processor.remembered, 3);
  assert.equal(processor.ledger.length, 3, "the ledger keeps the newest charges");
});

Deno.test("storefront: a Host no seller can have (overlong, or not a host name) is an unknown host, never a KV read or a cache entry of its own", async () => {
  await using w = await createTestWorld({ env: { AGENT_AUTH_URL: "http://store.test" } });
  const identity = (host: string) =>
    w.app.request("http://store.test/agent/identity", {
      method: "POST",
      headers: { host, "content-type": "application/json" },
      body: JSON.stringify({ type: "anonymous" }),
    });
  for (const host of ["a".repeat(3000) + ".test", "a".repeat(300)]) {
    const res = await identity(host);
    assert.equal(res.status, 404, host.slice(0, 40));
    assert.equal((await res.json()).error, "seller_not_found");
  }
  // A Host that is not a host name stops at the request envelope, before any route (http_edges_test.ts).
  const malformed = await identity("shop.test/../x");
  assert.equal(malformed.status, 400);
  await malformed.body?.cancel();
  assert.deepEqual(w.log.lines.filter((l) => l.level === "error"), []);
});
