/**
 * A pay-as-you-go call's owed answer: its settlement was confirmed after the agent was told 503 (by
 * the sweep, or by the agent's own retry asking the chain), so the same credential sent again is
 * forwarded and served once. Sent as N copies at once, each ran the seller's upstream (each run may
 * cost the seller a model call) for one payment. Real local peers: the EVM chain, the x402
 * facilitator (its settle answer lost), a counting upstream, and a stock mppx client.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Credential } from "mppx";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { STALE_RESERVATION_MS } from "../../core/commerce/entitlements.ts";
import { SETTLE_RECHECK_GRACE_MS } from "../../core/commerce/settlement.ts";
import { type ChainWorld, chainWorlds, evmClient, lossyFacilitator } from "./_chain_world.ts";
import type { LocalChain } from "../../fixtures/chain/local.ts";
import { postJson } from "./_helpers.ts";

/** One chain for this file's tests, put back as it was started before each test's world. */
const withChainWorld = chainWorlds();

const COPIES = 4;

/**
 * A call whose settle answer was lost (503, the money moved on chain), and the same credential sent
 * again unchanged.
 */
async function lostCall({ chain, w, http }: ChainWorld, path = `/v2/search?data_model_id=${w.dataModelId}`) {
  await w.addPayg(20_000);
  const { token, renew } = await w.agents.issue();
  const sent: { authorization: string | null } = { authorization: null };
  const callUrl = `${http.url}${path}`;
  const lost = await evmClient(token, sent).fetch(callUrl, postJson({ query: "budget" }));
  assert.equal(lost.status, 503);
  await lost.body?.cancel();
  assert.equal(chain.settlements.length, 1);
  assert.equal(w.upstream.verified, 1, "the call ran, its answer not delivered");
  const current = { token };
  const retry = () =>
    fetch(callUrl, {
      ...postJson({ query: "budget" }),
      headers: {
        "content-type": "application/json",
        "zc-agent-authorization": `Bearer ${current.token}`,
        authorization: sent.authorization!,
      },
    });
  /** A fresh access token, once the clock moved past the last one's minutes. */
  const renewToken = async () => void (current.token = await renew());
  return { retry, renewToken, credential: () => sent.authorization!, token: () => current.token };
}

async function callRecord(world: ChainWorld): Promise<PaymentRecord> {
  for await (const e of world.w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", world.w.sellerId] })) {
    if (e.value.rail === "evm") return e.value;
  }
  throw new Error("no evm payment record");
}

/**
 * Sends `COPIES` copies at once. The upstream holds the first answer until the other copies are
 * answered (or a second upstream call arrives, the fault), so the copies truly overlap.
 */
async function copiesAtOnce(world: ChainWorld, retry: () => Promise<Response>) {
  const { w } = world;
  const gate = Promise.withResolvers<void>();
  let held = 0;
  w.upstream.hold = () => (++held > 1 && gate.resolve(), gate.promise);
  let answered = 0;
  const copies = Array.from({ length: COPIES }, () =>
    retry().then(async (res) => {
      const out = { status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") };
      if (++answered === COPIES - 1) gate.resolve();
      return out;
    }));
  const out = await Promise.all(copies);
  w.upstream.hold = undefined;
  return out;
}

/** The copies' answers: exactly one served, every other told to retry unchanged. */
function assertServedOnce(out: Awaited<ReturnType<typeof copiesAtOnce>>) {
  const served = out.filter((o) => o.status === 200);
  const waiting = out.filter((o) => o.status === 503);
  assert.equal(served.length, 1, JSON.stringify(out));
  assert.equal(waiting.length, COPIES - 1, JSON.stringify(out));
  for (const o of waiting) {
    assert.equal(o.body.error, "payment_provider_unavailable");
    assert.equal(o.retryAfter, "5");
  }
}

async function answerClaims(world: ChainWorld): Promise<number> {
  let n = 0;
  for await (const _ of world.w.deps.kv.list({ prefix: ["commerce_call_answering"] })) n++;
  return n;
}

Deno.test("owed answer: a call paid by the sweep, its credential sent as concurrent copies, runs the upstream once (one 200, the others 503 payment_provider_unavailable with Retry-After); an upstream that fails keeps it owed", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async (world) => {
      const { chain, clock, w } = world;
      const buyer0 = await chain.balanceOf(chain.addresses.buyer);
      const { retry, renewToken } = await lostCall(world);
      clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
      await w.deps.commerce.settleSweep.sweep();
      await renewToken();
      assert.deepEqual([(await callRecord(world)).state, (await callRecord(world)).answerOwed], ["paid", true]);

      // The seller's upstream fails: its error goes back, the answer is still owed, nothing held.
      w.upstream.mode = "error";
      const failed = await retry();
      assert.equal(failed.status, 500);
      await failed.body?.cancel();
      assert.equal(w.upstream.verified, 2);
      assert.deepEqual([(await callRecord(world)).state, (await callRecord(world)).answerOwed], ["paid", true]);
      assert.equal(await answerClaims(world), 0);

      w.upstream.mode = "ok";
      assertServedOnce(await copiesAtOnce(world, retry));
      assert.equal(w.upstream.verified, 3, "the owed answer ran the upstream once");
      assert.equal((await callRecord(world)).state, "consumed");
      assert.equal(await answerClaims(world), 0, "the claim ends with the consume");

      const again = await retry();
      assert.equal(again.status, 409);
      assert.equal((await again.json()).error, "payment_consumed");
      assert.equal(w.upstream.verified, 3);
      assert.equal(chain.settlements.length, 1);
      assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 20_000n, "paid once");
    },
  );
});

Deno.test("owed answer: a call whose settle answer was lost, its credential sent as concurrent copies before any sweep (each would ask the chain), runs the upstream once", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async (world) => {
      const { chain, w } = world;
      const { retry } = await lostCall(world);
      assert.equal((await callRecord(world)).state, "processing");

      assertServedOnce(await copiesAtOnce(world, retry));
      assert.equal(w.upstream.verified, 2, "the owed answer ran the upstream once");
      assert.equal((await callRecord(world)).state, "consumed");
      assert.equal(await answerClaims(world), 0);
      const again = await retry();
      assert.equal(again.status, 409);
      assert.equal((await again.json()).error, "payment_consumed");
      assert.equal(chain.settlements.length, 1);
    },
  );
});

Deno.test("owed answer: the MCP ask tool sent the owed credential as concurrent copies runs the upstream once; the others are told to retry unchanged", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async (world) => {
      const { chain, clock, http, w } = world;
      const lost = await lostCall(world, `/aimodel/${w.aiModelId}`);
      clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
      await w.deps.commerce.settleSweep.sweep();
      await lost.renewToken();
      assert.equal((await callRecord(world)).answerOwed, true);

      const client = new Client({ name: "owed-answer-test", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${http.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${lost.token()}` } },
        }),
      );
      try {
        const credential = Credential.deserialize(lost.credential());
        const call = () =>
          client.callTool({
            name: "ask",
            arguments: { ai_model_id: w.aiModelId, query: "budget" },
            _meta: { "org.paymentauth/credential": credential },
          });
        const out = await copiesAtOnce(world, async () => {
          // One MCP answer as the copies' shape: served, or the tool error naming the payment error.
          const result = await call() as { isError?: boolean; content: { text: string }[] };
          if (!result.isError) return Response.json(result);
          const [, code] = /^(payment_[a-z_]+)/.exec(result.content[0]!.text) ?? [];
          return Response.json({ error: code }, { status: code === "payment_provider_unavailable" ? 503 : 500 });
        });
        assert.equal(out.filter((o) => o.status === 200).length, 1, JSON.stringify(out));
        assert.equal(out.filter((o) => o.body.error === "payment_provider_unavailable").length, COPIES - 1);
        assert.equal(w.upstream.verified, 2, "the owed answer ran the upstream once");
        assert.equal((await callRecord(world)).state, "consumed");
        assert.equal(chain.settlements.length, 1);
      } finally {
        await client.close();
      }
    },
  );
});

Deno.test("owed answer: a retry forwarding a call whose transfer it just confirmed, while the sweep records the same settlement paid and owed, is served and consumes it", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async (world) => {
      const { clock, w } = world;
      const { retry } = await lostCall(world);
      // The sweep runs while the retry's upstream call is in flight.
      w.upstream.hold = async () => {
        w.upstream.hold = undefined;
        clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
        const swept = await w.deps.commerce.settleSweep.sweep();
        assert.equal(swept.resolved[0]?.state, "paid");
      };
      const served = await retry();
      assert.equal(served.status, 200, await served.clone().text());
      assert.ok(served.headers.get("payment-receipt"));
      await served.body?.cancel();
      assert.equal(w.upstream.verified, 2);
      assert.equal((await callRecord(world)).state, "consumed", "the answer given is the one owed");
      assert.equal(await answerClaims(world), 0);
    },
  );
});

Deno.test("owed answer: a request whose claim lapsed mid-call (its upstream stalled) and was taken over does not end the other's claim: the one that took it over is served and consumes it", async () => {
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), upstream: true },
    async (world) => {
      const { clock, w } = world;
      const { retry, renewToken } = await lostCall(world);
      clock.advance(SETTLE_RECHECK_GRACE_MS + 1);
      await w.deps.commerce.settleSweep.sweep();
      await renewToken();
      assert.equal((await callRecord(world)).answerOwed, true);

      // A's upstream stalls past its claim; B takes the claim over and is in its upstream call when
      // A's answer comes back and A consumes.
      const bInUpstream = Promise.withResolvers<void>();
      const bGo = Promise.withResolvers<void>();
      let b: Promise<Response> | undefined;
      w.upstream.hold = async () => {
        w.upstream.hold = () => (bInUpstream.resolve(), bGo.promise);
        clock.advance(STALE_RESERVATION_MS + 1);
        await renewToken();
        b = retry();
        await bInUpstream.promise;
      };
      const a = await retry();
      const aBody = await a.json();
      bGo.resolve();
      const bRes = await b!;
      assert.equal(bRes.status, 200, await bRes.clone().text());
      await bRes.body?.cancel();
      assert.equal(a.status, 402, JSON.stringify(aBody));
      assert.equal(aBody.error, "payment_incomplete", "the claim was taken over: the reference is the other's");
      assert.equal(w.upstream.verified, 3);
      assert.equal((await callRecord(world)).state, "consumed");
      assert.equal(await answerClaims(world), 0);
    },
  );
});

/** A JSON-RPC node in front of the chain that can be taken down (503 to everything) and brought back. */
function switchableNode(chain: LocalChain) {
  const state = { down: false };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    if (state.down) return new Response("node unavailable", { status: 503 });
    const res = await fetch(chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    return new Response(res.body, { status: res.status, headers: { "content-type": "application/json" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, state, close: () => server.shutdown() };
}

Deno.test("owed answer: a retry whose recheck of the chain comes back unconfirmed gives its claim back (503, nothing held, the upstream not run), so the next retry is served", async () => {
  let node!: ReturnType<typeof switchableNode>;
  await withChainWorld(
    { facilitator: (c) => lossyFacilitator(c, true), rpc: (c) => (node = switchableNode(c)), upstream: true },
    async (world) => {
      const { w } = world;
      const { retry } = await lostCall(world);
      assert.equal((await callRecord(world)).state, "processing");

      node.state.down = true;
      const unconfirmed = await retry();
      assert.equal(unconfirmed.status, 503);
      assert.equal((await unconfirmed.json()).error, "payment_provider_unavailable");
      assert.equal(w.upstream.verified, 1, "nothing forwarded while the chain cannot tell");
      assert.equal(await answerClaims(world), 0, "the claim is given back");

      node.state.down = false;
      const served = await retry();
      assert.equal(served.status, 200, await served.clone().text());
      await served.body?.cancel();
      assert.equal(w.upstream.verified, 2);
      assert.equal((await callRecord(world)).state, "consumed");
      assert.equal(await answerClaims(world), 0);
    },
  );
});
