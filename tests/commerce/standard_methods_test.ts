/**
 * Money invariants of mppx's `evm` method at the storefront, attacked directly: a credential spent
 * twice (also concurrently), a credential moved to another agent or amount, and a facilitator that
 * claims a settlement the chain never saw. One local chain for the file.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Mppx } from "mppx/client";
import { evm } from "mppx/evm/client";
import { McpClient } from "mppx/mcp-sdk/client";
import { privateKeyToAccount } from "viem/accounts";
import { FixedClock } from "../../core/clock.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { LOCAL_KEYS, type LocalChain, startLocalChain, TOKEN_DOMAIN } from "../../fixtures/chain/local.ts";
import { chainEnv } from "./_chain_world.ts";
import { type CommerceWorld, createCommerceWorld, postJson } from "./_helpers.ts";
import { kvFaults } from "../_kv_faults.ts";

function envFor(chain: LocalChain, facilitatorUrl = chain.facilitatorUrl): Record<string, string> {
  return {
    ...chainEnv(chain, facilitatorUrl, chain.rpcUrl),
    // A receipt the node never shows (the lying facilitator) is waited for this long, not 10 s.
    PAY_EVM_RECEIPT_WAIT_MS: "500",
  };
}

/** A request to the app as the seller's host, with the agent token beside any Payment credential. */
function send(w: CommerceWorld, token: string, path: string, body: unknown, authorization?: string) {
  const headers: Record<string, string> = {
    host: "store.test",
    "content-type": "application/json",
    "zc-agent-authorization": `Bearer ${token}`,
  };
  if (authorization) headers.authorization = authorization;
  return w.app.fetch(new Request(`http://store.test${path}`, { ...postJson(body), headers }));
}

/** A signed evm credential answering the 402 this agent gets for `body` (mppx's client signs it). */
async function credentialFor(w: CommerceWorld, token: string, path: string, body: unknown): Promise<string> {
  const res = await send(w, token, path, body);
  assert.equal(res.status, 402);
  const client = Mppx.create({
    methods: [evm({ account: privateKeyToAccount(LOCAL_KEYS.buyer), authorization: TOKEN_DOMAIN })],
    polyfill: false,
  });
  return await client.createCredential(res);
}

async function records(w: CommerceWorld): Promise<PaymentRecord[]> {
  const out: PaymentRecord[] = [];
  for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) out.push(e.value);
  return out.filter((r) => r.rail === "evm");
}

Deno.test("evm payments at the storefront: once only, bound to their terms, confirmed on chain", async (t) => {
  const chain = await startLocalChain();
  const clock = new FixedClock(new Date().toISOString());
  try {
    await using w = await createCommerceWorld({ clock, env: envFor(chain) });
    const purchase = `/plans/${w.plan.id}/purchase`;

    await t.step("the same credential sent twice at once settles once and credits once", async () => {
      const { token } = await w.agents.issue();
      const before = await chain.balanceOf(chain.addresses.buyer);
      const cred = await credentialFor(w, token, purchase, { amountUsd: "1.000000" });
      const [a, b] = await Promise.all([
        send(w, token, purchase, { amountUsd: "1.000000" }, cred),
        send(w, token, purchase, { amountUsd: "1.000000" }, cred),
      ]);
      const statuses = [a.status, b.status].sort();
      assert.equal(statuses[0], 200, `${a.status} ${await a.clone().text()} / ${b.status} ${await b.clone().text()}`);
      assert.notEqual(statuses[1], 200);
      await a.body?.cancel();
      await b.body?.cancel();
      const again = await send(w, token, purchase, { amountUsd: "1.000000" }, cred);
      assert.equal(again.status, 409);
      assert.equal((await again.json()).error, "payment_consumed");
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 1_000_000n);
      const ent = await (await w.app.fetch(
        new Request("http://store.test/agent/entitlements", {
          headers: { host: "store.test", authorization: `Bearer ${token}` },
        }),
      )).json();
      assert.equal(ent.entitlements[0].remainingUsd, "1.000000");
    });

    await t.step("a credential signed for one agent does not pay for another, nor for another amount", async () => {
      const alice = await w.agents.issue();
      const mallory = await w.agents.issue();
      const before = await chain.balanceOf(chain.addresses.buyer);
      const cred = await credentialFor(w, alice.token, purchase, { amountUsd: "1.000000" });
      const stolen = await send(w, mallory.token, purchase, { amountUsd: "1.000000" }, cred);
      assert.equal(stolen.status, 402);
      assert.equal((await stolen.json()).error, "settlement_failed");
      const bigger = await send(w, alice.token, purchase, { amountUsd: "2.000000" }, cred);
      assert.equal(bigger.status, 402);
      await bigger.body?.cancel();
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before, "nothing moved");
      // The untouched credential still pays what it was signed for.
      const honest = await send(w, alice.token, purchase, { amountUsd: "1.000000" }, cred);
      assert.equal(honest.status, 200, await honest.clone().text());
      await honest.body?.cancel();
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 1_000_000n);
    });

    await t.step("a hostile credential is refused by a reason code, never with its own text", async () => {
      const { token } = await w.agents.issue();
      const body = { amountUsd: "1.000000" };
      const cred = await credentialFor(w, token, purchase, body);
      const decoded = JSON.parse(atob(cred.replace(/^Payment\s+/, "").replace(/-/g, "+").replace(/_/g, "/")));
      const marker = "LEAK-7f3a<script>";
      const reencode = (c: unknown) =>
        `Payment ${btoa(JSON.stringify(c)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}`;
      const cases: [string, string, string][] = [
        // mppx's own sentence quoted the id: `Challenge "<id>" is invalid`.
        [
          "a challenge id of the caller's",
          reencode({ ...decoded, challenge: { ...decoded.challenge, id: marker } }),
          "invalid_challenge",
        ],
        [
          "a payload field of the wrong kind",
          reencode({ ...decoded, payload: { ...decoded.payload, from: marker } }),
          "invalid_payload",
        ],
      ];
      for (const [label, authorization, reason] of cases) {
        const res = await send(w, token, purchase, body, authorization);
        const text = await res.text();
        assert.equal(res.status, 402, label);
        assert.deepEqual(JSON.parse(text).settlementReason, reason, label);
        assert.ok(!text.includes("LEAK-7f3a"), `${label}: ${text}`);
      }
      // A PAYMENT-SIGNATURE that is no x402 payload is the caller's mistake, not mppx's internal error.
      for (const signature of [marker, btoa("[1,2]"), btoa(JSON.stringify({ x402Version: 2 }))]) {
        const res = await w.app.fetch(
          new Request(`http://store.test${purchase}`, {
            ...postJson(body),
            headers: {
              host: "store.test",
              "content-type": "application/json",
              authorization: `Bearer ${token}`,
              "payment-signature": signature,
            },
          }),
        );
        assert.equal(res.status, 400);
        assert.deepEqual(await res.json(), {
          error: "invalid_request",
          detail: "PAYMENT-SIGNATURE must be the base64 JSON of an x402 payment payload answering our 402",
        });
      }
    });

    await t.step("every consumed record is a distinct on-chain settlement of its amount", async () => {
      const consumed = (await records(w)).filter((r) => r.state === "consumed");
      assert.equal(consumed.length, 2);
      assert.ok(consumed.every((r) => chain.settlements.includes(r.processorRef!)));
      assert.equal(new Set(consumed.map((r) => r.reference)).size, 2);
      // An agent polls a standard payment like any other.
      const polled = await w.app.fetch(
        new Request(`http://store.test/payments/${consumed[0]!.reference}`, { headers: { host: "store.test" } }),
      );
      assert.equal(polled.status, 200, await polled.clone().text());
      const status = await polled.json();
      assert.equal(status.status, "consumed");
      assert.equal(status.rail, "evm");
    });

    await t.step("the same Idempotency-Key and credential sent again replay the first answer", async () => {
      const { token } = await w.agents.issue();
      const before = await chain.balanceOf(chain.addresses.buyer);
      const cred = await credentialFor(w, token, purchase, { amountUsd: "1.000000" });
      const once = async () =>
        await w.app.fetch(
          new Request(`http://store.test${purchase}`, {
            ...postJson({ amountUsd: "1.000000" }),
            headers: {
              host: "store.test",
              "content-type": "application/json",
              "zc-agent-authorization": `Bearer ${token}`,
              authorization: cred,
              "idempotency-key": "buy-once-1",
            },
          }),
        );
      const first = await once();
      assert.equal(first.status, 200, await first.clone().text());
      const second = await once();
      assert.equal(second.status, 200);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal((await second.json()).reference, (await first.json()).reference);
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 1_000_000n);
    });

    await t.step("mppx's MCP wrapper buys credit with evm when no pay-per-call plan covers the tool", async () => {
      await using shop = await createCommerceWorld({ upstream: true, clock, env: envFor(chain) });
      const { token } = await shop.agents.issue();
      const before = await chain.balanceOf(chain.addresses.buyer);
      const mcp = new Client({ name: "stock-mcp", version: "1.0.0" });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL("http://store.test/mcp"), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
          fetch: (input: string | URL, init?: RequestInit) => {
            const req = new Request(input, init);
            req.headers.set("host", "store.test");
            return Promise.resolve(shop.app.fetch(req));
          },
        }),
      );
      const paying = McpClient.wrap(mcp, {
        methods: [evm({ account: privateKeyToAccount(LOCAL_KEYS.buyer), authorization: TOKEN_DOMAIN })],
      });
      const result = await paying.callTool({
        name: "ask",
        arguments: { ai_model_id: shop.aiModelId, query: "budget" },
      });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.ok(result.receipt, "the purchase's receipt");
      // The cheapest covering credit plan at its minimum (0.10 USD), then the call spent 0.02 of it.
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 100_000n);
      const ent = await (await shop.app.fetch(
        new Request("http://store.test/agent/entitlements", {
          headers: { host: "store.test", authorization: `Bearer ${token}` },
        }),
      )).json();
      assert.equal(ent.entitlements[0].remainingUsd, "0.080000");
      await mcp.close();
    });

    await t.step("a facilitator claiming a settlement the chain never saw grants nothing", async () => {
      // A lying facilitator (a test double of a compromised one): verifies everything, settles nothing.
      const liar = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
        const body = await req.json();
        const payer = body.paymentPayload.payload.authorization.from;
        if (new URL(req.url).pathname === "/verify") return Response.json({ isValid: true, payer });
        return Response.json({
          success: true,
          payer,
          network: `eip155:${chain.chainId}`,
          transaction: `0x${"ab".repeat(32)}`,
        });
      });
      try {
        await using fooled = await createCommerceWorld({
          clock,
          env: envFor(chain, `http://127.0.0.1:${liar.addr.port}`),
        });
        const { token } = await fooled.agents.issue();
        const path = `/plans/${fooled.plan.id}/purchase`;
        const cred = await credentialFor(fooled, token, path, { amountUsd: "1.000000" });
        const res = await send(fooled, token, path, { amountUsd: "1.000000" }, cred);
        assert.equal(res.status, 402);
        assert.equal((await res.json()).error, "settlement_failed");
        const left = await records(fooled);
        assert.equal(left.length, 1);
        assert.equal(left[0].state, "failed");
        const ent = await (await fooled.app.fetch(
          new Request("http://store.test/agent/entitlements", {
            headers: { host: "store.test", authorization: `Bearer ${token}` },
          }),
        )).json();
        assert.equal(ent.entitlements.length, 0);
      } finally {
        await liar.shutdown();
      }
    });
  } finally {
    await chain.close();
  }
});

Deno.test("evm pay-per-call: a call settled on chain whose consume failed to commit keeps its answer and is spent", async () => {
  const chain = await startLocalChain();
  const clock = new FixedClock(new Date().toISOString());
  const faults = kvFaults();
  try {
    await using w = await createCommerceWorld({
      upstream: true,
      withPlan: false,
      clock,
      env: envFor(chain),
      wrapKv: faults.wrap,
    });
    await w.addPayg(20_000);
    const { token } = await w.agents.issue();
    const path = `/v2/search?data_model_id=${w.dataModelId}`;
    const before = await chain.balanceOf(chain.addresses.buyer);
    const cred = await credentialFor(w, token, path, { query: "rates" });
    // Settled on chain after the upstream answered; the commit that consumes the reference fails.
    faults.failNext(1, {
      op: "set",
      entity: "commerce_payment",
      value: (v) => (v as PaymentRecord).state === "consumed",
    });
    const res = await send(w, token, path, { query: "rates" }, cred);
    const text = await res.text();
    assert.equal(faults.left, 0, "the consume's commit failed");
    assert.equal(res.status, 200, text);
    assert.ok(res.headers.get("payment-receipt"), "the receipt of the settlement");
    assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 20_000n);
    assert.equal(w.upstream.calls, 1);

    // The credential bought that one call: sent again it is spent, served and charged nothing more.
    const again = await send(w, token, path, { query: "rates" }, cred);
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error, "payment_consumed");
    assert.equal(w.upstream.calls, 1);
    assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 20_000n);
  } finally {
    await chain.close();
  }
});
