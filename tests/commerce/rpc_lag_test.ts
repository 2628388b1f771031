/**
 * With `PAY_EVM_RPC_URL` set, a settlement counts once the storefront's own node shows its Transfer.
 * The facilitator answers once its node mined the transaction; the storefront's node (another node
 * of a provider, a block behind) may not know the receipt yet. That was read once and taken for
 * "not on chain": the payment was refused with a 402 carrying fresh challenges, and mppx's stock
 * client (which answers a post-payment 402 with a new credential, up to three times) paid again
 * each time, every payment settled on chain and none credited. The receipt is now awaited.
 */
import assert from "node:assert/strict";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import type { LocalChain } from "../../fixtures/chain/local.ts";
import { chainWorlds, evmClient, lossyFacilitator } from "./_chain_world.ts";
import { postJson } from "./_helpers.ts";

/** One chain for this file's tests, put back as it was started before each test's world. */
const withChainWorld = chainWorlds();

// The receipt wait, shortened from 10 s: long enough for a node two lookups behind.
const RECEIPT_WAIT = { PAY_EVM_RECEIPT_WAIT_MS: "1500" };

/**
 * A JSON-RPC node a little behind the chain: the first `behind` receipt lookups of each transaction
 * answer null (not mined yet, as far as this node knows); everything else is forwarded.
 */
function laggingNode(rpcUrl: string, behind: number) {
  const seen = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    const call = JSON.parse(body);
    if (!Array.isArray(call) && call.method === "eth_getTransactionReceipt") {
      const hash = String(call.params?.[0]);
      const n = seen.get(hash) ?? 0;
      seen.set(hash, n + 1);
      if (n < behind) return Response.json({ jsonrpc: "2.0", id: call.id, result: null });
    }
    const res = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    return new Response(res.body, { status: res.status, headers: { "content-type": "application/json" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

Deno.test("mppx evm client: a settlement the storefront's node has not seen yet is awaited, paid once and credited once", async () => {
  const rpc = (chain: LocalChain) => laggingNode(chain.rpcUrl, 2);
  await withChainWorld({ rpc, env: RECEIPT_WAIT }, async ({ chain, w, http }) => {
    const { token } = await w.agents.issue();
    const buyer0 = await chain.balanceOf(chain.addresses.buyer);
    const client = evmClient(token);
    const bought = await client.fetch(`${http.url}/plans/${w.plan.id}/purchase`, postJson({ amountUsd: "1.000000" }));
    const text = await bought.text();
    assert.equal(
      await chain.balanceOf(chain.addresses.buyer),
      buyer0 - 1_000_000n,
      "the buyer paid once",
    );
    assert.equal(chain.settlements.length, 1);
    assert.equal(bought.status, 200, text);
    assert.equal(JSON.parse(text).entitlement.remainingUsd, "1.000000");
  });
});

/**
 * A JSON-RPC node that can be taken down (it answers 503 to everything), or left behind (it knows
 * every transaction but no receipt: mined elsewhere, not here yet), and brought back.
 */
function flakyNode(rpcUrl: string) {
  const state = { down: true, behind: false };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    if (state.down) return new Response("node unavailable", { status: 503 });
    const call = JSON.parse(body);
    if (state.behind && !Array.isArray(call) && call.method === "eth_getTransactionReceipt") {
      return Response.json({ jsonrpc: "2.0", id: call.id, result: null });
    }
    const res = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    return new Response(res.body, { status: res.status, headers: { "content-type": "application/json" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, state, close: () => server.shutdown() };
}

Deno.test("mppx evm client: a settlement the storefront's node cannot confirm is 503 payment_provider_unavailable, never paid again, and credited once when the chain confirms it", async () => {
  let node!: ReturnType<typeof flakyNode>;
  const rpc = (chain: LocalChain) => (node = flakyNode(chain.rpcUrl));
  await withChainWorld({ rpc, env: RECEIPT_WAIT }, async ({ chain, w, http }) => {
    const purchase = `${http.url}/plans/${w.plan.id}/purchase`;
    /** A stock mppx client for a new agent, keeping the last `Authorization` it sent (the spec's "retry unchanged"). */
    const agent = async () => {
      const { token } = await w.agents.issue();
      const sent: { authorization: string | null } = { authorization: null };
      const client = evmClient(token, sent);
      const retry = (as = token, amountUsd = "1.000000") =>
        fetch(purchase, {
          ...postJson({ amountUsd }),
          headers: {
            "content-type": "application/json",
            "zc-agent-authorization": `Bearer ${as}`,
            authorization: sent.authorization!,
          },
        });
      const entitlements = async () =>
        await (await fetch(`${http.url}/agent/entitlements`, { headers: { authorization: `Bearer ${token}` } })).json();
      return { client, retry, entitlements };
    };
    const evmRecords = async () => {
      const out: PaymentRecord[] = [];
      for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) {
        out.push(e.value);
      }
      return out.filter((r) => r.rail === "evm");
    };
    const buyer0 = await chain.balanceOf(chain.addresses.buyer);

    // The node is down: the facilitator settles, the storefront cannot confirm it.
    const alice = await agent();
    const first = await alice.client.fetch(purchase, postJson({ amountUsd: "1.000000" }));
    const firstBody = await first.json();
    assert.equal(first.status, 503, JSON.stringify(firstBody));
    assert.equal(firstBody.error, "payment_provider_unavailable");
    assert.equal(first.headers.get("www-authenticate"), null, "no fresh challenge to pay again");
    assert.ok(first.headers.get("retry-after"));
    assert.equal(chain.settlements.length, 1, "mppx's client paid once");
    assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 1_000_000n);
    const [pending] = await evmRecords();
    assert.equal(pending.state, "processing");
    assert.equal(pending.processorRef, chain.settlements[0]);
    // Retried unchanged while the node is still down: the same answer, nothing settles again.
    const stillDown = await alice.retry();
    assert.equal(stillDown.status, 503);
    await stillDown.body?.cancel();
    assert.equal(chain.settlements.length, 1);

    // The node is back. Alice's credential sent by another agent, or for another amount, buys nothing.
    node.state.down = false;
    const mallory = await w.agents.issue();
    for (
      const [who, amountUsd, error] of [
        [mallory.token, "1.000000", "payment_request_mismatch"],
        [null, "2.000000", "payment_amount_mismatch"],
      ] as const
    ) {
      const stolen = await alice.retry(who ?? undefined, amountUsd);
      assert.equal(stolen.status, 409);
      assert.equal((await stolen.json()).error, error);
    }
    assert.equal((await evmRecords())[0].state, "processing");

    // Alice's retry with the same credential is credited, once.
    const credited = await alice.retry();
    const creditedBody = await credited.json();
    assert.equal(credited.status, 200, JSON.stringify(creditedBody));
    assert.equal(creditedBody.entitlement.remainingUsd, "1.000000");
    assert.ok(credited.headers.get("payment-receipt"));
    const again = await alice.retry();
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "payment_consumed");
    assert.equal((await alice.entitlements()).entitlements[0].remainingUsd, "1.000000");

    // An agent that stopped retrying: its credit appears once the node confirms the settlement.
    node.state.down = true;
    const bob = await agent();
    const unconfirmed = await bob.client.fetch(purchase, postJson({ amountUsd: "1.000000" }));
    assert.equal(unconfirmed.status, 503);
    await unconfirmed.body?.cancel();
    assert.equal((await bob.entitlements()).entitlements.length, 0, "nothing granted on the facilitator's word");
    node.state.down = false;
    assert.equal((await bob.entitlements()).entitlements[0].remainingUsd, "1.000000");
    assert.equal((await bob.entitlements()).entitlements[0].remainingUsd, "1.000000", "credited once");
    const late = await bob.retry();
    assert.equal(late.status, 409);
    assert.equal((await late.json()).error, "payment_consumed");

    // A node behind past the 10 s wait (it knows the transaction, not its receipt): the same.
    node.state.behind = true;
    const carol = await agent();
    const lagged = await carol.client.fetch(purchase, postJson({ amountUsd: "1.000000" }));
    assert.equal(lagged.status, 503);
    await lagged.body?.cancel();
    assert.equal(chain.settlements.length, 3, "mppx's client paid once");
    node.state.behind = false;
    const caughtUp = await carol.retry();
    assert.equal(caughtUp.status, 200, await caughtUp.clone().text());
    assert.equal((await caughtUp.json()).entitlement.remainingUsd, "1.000000");

    // One payment, one credit each: three settlements on chain, three consumed records.
    assert.equal(chain.settlements.length, 3);
    assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 3_000_000n);
    const records = await evmRecords();
    assert.deepEqual(records.map((r) => r.state), ["consumed", "consumed", "consumed"]);
    assert.deepEqual(new Set(records.map((r) => r.processorRef)), new Set(chain.settlements));
  });
});

Deno.test("mppx evm client: a facilitator whose settle answer is lost is 503 payment_provider_unavailable, kept processing and never paid again", async () => {
  // The facilitator settled on chain; its answer never reached the storefront.
  await withChainWorld({ facilitator: (c) => lossyFacilitator(c, true) }, async ({ chain, w, http }) => {
    const { token } = await w.agents.issue();
    const buyer0 = await chain.balanceOf(chain.addresses.buyer);
    const client = evmClient(token);
    const purchase = `${http.url}/plans/${w.plan.id}/purchase`;
    const lost = await client.fetch(purchase, postJson({ amountUsd: "1.000000" }));
    const lostBody = await lost.json();
    assert.equal(lost.status, 503, JSON.stringify(lostBody));
    assert.equal(lostBody.error, "payment_provider_unavailable");
    assert.equal(chain.settlements.length, 1, "mppx's client paid once");
    assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 1_000_000n);

    // Where the money went is the settlement sweep's to find (settle_sweep_test.ts): kept `processing`, nothing
    // granted, nothing failed.
    const kept: PaymentRecord[] = [];
    for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) {
      kept.push(e.value);
    }
    assert.deepEqual(kept.map((r) => [r.rail, r.state]), [["evm", "processing"]]);
    const ent = await (await fetch(`${http.url}/agent/entitlements`, { headers: { authorization: `Bearer ${token}` } }))
      .json();
    assert.equal(ent.entitlements.length, 0);
  });
});
