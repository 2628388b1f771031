/**
 * Stock clients pay the storefront with no client code of ours beyond their configuration:
 * mppx's client with its `evm` method, `@x402/fetch` with a viem account, and mppx's MCP client
 * wrapper; and `mppx validate` runs against the paid purchase route and pays it. The stablecoin is TestUsd (EIP-3009) on a local chain on 127.0.0.1; x402 settles through
 * a facilitator made of the official x402 packages. Each client buys a credit plan, tops it up, pays
 * one pay-as-you-go call and one MCP tool call; the storefront's ledger is checked against the
 * chain's balances (every settlement once, nothing charged when the upstream answers an error).
 * One chain for the whole file.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Mppx } from "mppx/client";
import { evm } from "mppx/evm/client";
import { McpClient } from "mppx/mcp-sdk/client";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { LOCAL_KEYS, type LocalChain, startLocalChain, TOKEN_DOMAIN } from "../../fixtures/chain/local.ts";
import { FixedClock } from "../../core/clock.ts";
import { chainEnv } from "./_chain_world.ts";
import { type CommerceWorld, createCommerceWorld, postJson, serveAsStore } from "./_helpers.ts";

const ONE_USD = 1_000_000n;

/** Payment records the storefront holds for the seller, by method and state. */
async function payments(w: CommerceWorld): Promise<PaymentRecord[]> {
  const out: PaymentRecord[] = [];
  for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) out.push(e.value);
  return out;
}

/** Adds agent-token headers to every request of a fetch. */
function withAgent(token: string): typeof fetch {
  return (input, init) => {
    const req = new Request(input, init);
    req.headers.set("zc-agent-authorization", `Bearer ${token}`);
    return fetch(req);
  };
}

Deno.test("stock clients (mppx evm, x402 fetch, mppx MCP wrapper, mppx validate) pay on a local chain; the ledger matches the chain", async (t) => {
  const chain: LocalChain = await startLocalChain();
  // mppx reads the process clock for challenge expiry: the world's clock is anchored there.
  const clock = new FixedClock(new Date().toISOString());
  const w = await createCommerceWorld({
    upstream: true,
    clock,
    env: chainEnv(chain, chain.facilitatorUrl, chain.rpcUrl),
  });
  const http = serveAsStore(w);
  const payg = await w.addPayg(20_000);
  const seller0 = await chain.balanceOf(chain.addresses.seller);
  const buyer0 = await chain.balanceOf(chain.addresses.buyer);
  const buyer2_0 = await chain.balanceOf(chain.addresses.buyer2);
  const buyer = privateKeyToAccount(LOCAL_KEYS.buyer);
  const buyer2 = privateKeyToAccount(LOCAL_KEYS.buyer2);
  const searchUrl = `${http.url}/v2/search?data_model_id=${w.dataModelId}`;
  try {
    await t.step("a 402 offers mppx's evm challenge and x402 v2 beside the own rails", async () => {
      const { token } = await w.agents.issue();
      const res = await withAgent(token)(
        `${http.url}/plans/${w.plan.id}/purchase`,
        postJson({ amountUsd: "1.000000" }),
      );
      assert.equal(res.status, 402);
      const www = res.headers.get("www-authenticate") ?? "";
      assert.match(www, /method="evm"/);
      assert.match(www, /method="wallet"/);
      const required = JSON.parse(atob(res.headers.get("payment-required")!));
      assert.equal(required.x402Version, 2);
      assert.equal(required.accepts[0].scheme, "exact");
      assert.equal(required.accepts[0].network, `eip155:${chain.chainId}`);
      assert.equal(required.accepts[0].amount, "1000000");
      assert.equal(required.accepts[0].payTo.toLowerCase(), chain.addresses.seller.toLowerCase());
      await res.body?.cancel();
    });

    await t.step(
      "mppx client with its evm method: purchase, extend, pay-per-call, no charge on an upstream error",
      async () => {
        const { token } = await w.agents.issue();
        const client = Mppx.create({
          methods: [evm({ account: buyer, authorization: TOKEN_DOMAIN })],
          fetch: withAgent(token),
          polyfill: false,
        });
        const bought = await client.fetch(
          `${http.url}/plans/${w.plan.id}/purchase`,
          postJson({ amountUsd: "1.000000" }),
        );
        assert.equal(bought.status, 200, await bought.clone().text());
        const body = await bought.json();
        assert.equal(body.rail, "evm");
        assert.equal(body.entitlement.remainingUsd, "1.000000");
        assert.ok(bought.headers.get("payment-receipt"));

        const topped = await client.fetch(`${http.url}/extend`, postJson({ amountUsd: "0.500000" }));
        assert.equal(topped.status, 200, await topped.clone().text());
        assert.equal((await topped.json()).entitlement.remainingUsd, "1.500000");
        assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 1_500_000n);

        // Pay as you go: another agent with no plan pays the call itself.
        const other = await w.agents.issue();
        const perCall = Mppx.create({
          methods: [evm({ account: buyer, authorization: TOKEN_DOMAIN })],
          fetch: withAgent(other.token),
          polyfill: false,
        });
        const called = await perCall.fetch(searchUrl, postJson({ query: "budget" }));
        assert.equal(called.status, 200, await called.clone().text());
        assert.ok(called.headers.get("payment-receipt"));
        await called.body?.cancel();
        assert.equal(await chain.balanceOf(chain.addresses.buyer), buyer0 - 1_520_000n);

        w.upstream.mode = "error";
        const broken = await perCall.fetch(searchUrl, postJson({ query: "budget" }));
        w.upstream.mode = "ok";
        assert.equal(broken.status, 500);
        await broken.body?.cancel();
        assert.equal(
          await chain.balanceOf(chain.addresses.buyer),
          buyer0 - 1_520_000n,
          "an upstream error is not charged",
        );
      },
    );

    await t.step(
      "@x402/fetch with a viem account: purchase, extend, pay-per-call, no charge on an upstream error",
      async () => {
        const { token } = await w.agents.issue();
        const network = `eip155:${chain.chainId}` as const;
        // TestUsd is no default asset of the x402 client: the wallet allows it by configuration.
        const x402 = x402Client.fromConfig({
          schemes: [{ network, client: new ExactEvmScheme(buyer2) }],
          spendControls: { allowedAssets: [{ network, asset: chain.token }] },
        });
        const pay = wrapFetchWithPayment(withAgent(token), x402);
        const bought = await pay(`${http.url}/plans/${w.plan.id}/purchase`, postJson({ amountUsd: "2.000000" }));
        assert.equal(bought.status, 200, await bought.clone().text());
        assert.ok(bought.headers.get("payment-response"));
        assert.equal((await bought.json()).entitlement.remainingUsd, "2.000000");
        const topped = await pay(`${http.url}/extend`, postJson({ amountUsd: "1.000000" }));
        assert.equal(topped.status, 200, await topped.clone().text());
        assert.equal((await topped.json()).entitlement.remainingUsd, "3.000000");

        const other = await w.agents.issue();
        // x402 leaves Authorization free: the agent token may ride there as a plain Bearer.
        const bearer: typeof fetch = (input, init) => {
          const req = new Request(input, init);
          req.headers.set("authorization", `Bearer ${other.token}`);
          return fetch(req);
        };
        const perCall = wrapFetchWithPayment(bearer, x402);
        const called = await perCall(searchUrl, postJson({ query: "budget" }));
        assert.equal(called.status, 200, await called.clone().text());
        await called.body?.cancel();
        assert.equal(await chain.balanceOf(chain.addresses.buyer2), buyer2_0 - 3_020_000n);

        w.upstream.mode = "error";
        const broken = await perCall(searchUrl, postJson({ query: "budget" }));
        w.upstream.mode = "ok";
        assert.equal(broken.status, 500);
        await broken.body?.cancel();
        assert.equal(
          await chain.balanceOf(chain.addresses.buyer2),
          buyer2_0 - 3_020_000n,
          "an upstream error is not charged",
        );
      },
    );

    await t.step(
      "mppx's MCP client wrapper pays a paid tool call with evm, and nothing when the upstream fails",
      async () => {
        const { token } = await w.agents.issue();
        const transport = new StreamableHTTPClientTransport(new URL(`${http.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        });
        const mcp = new Client({ name: "stock-mcp", version: "1.0.0" });
        await mcp.connect(transport);
        const paying = McpClient.wrap(mcp, { methods: [evm({ account: buyer, authorization: TOKEN_DOMAIN })] });
        const before = await chain.balanceOf(chain.addresses.buyer);
        const result = await paying.callTool({
          name: "ask",
          arguments: { ai_model_id: w.aiModelId, query: "budget" },
        });
        assert.notEqual(result.isError, true, JSON.stringify(result));
        assert.ok(result.receipt, "the paid result carries its receipt");
        // A pay-as-you-go plan covers the model: the wrapper paid this one call (0.02 USD) on chain.
        assert.equal(await chain.balanceOf(chain.addresses.buyer), before - 20_000n);

        w.upstream.mode = "error";
        const failed = await paying.callTool({ name: "ask", arguments: { ai_model_id: w.aiModelId, query: "budget" } });
        w.upstream.mode = "ok";
        assert.equal(failed.isError, true);
        assert.equal(
          await chain.balanceOf(chain.addresses.buyer),
          before - 20_000n,
          "an upstream error is not charged",
        );
        await mcp.close();
      },
    );

    await t.step("`mppx validate` checks the paid purchase route and pays it with its evm method", async () => {
      const { token } = await w.agents.issue();
      const before = await chain.balanceOf(chain.addresses.buyer);
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          new URL("../../node_modules/mppx/dist/bin.js", import.meta.url).pathname,
          "validate",
          http.url,
          "--endpoint",
          `POST:/plans/${w.plan.id}/purchase`,
          "--body",
          JSON.stringify({ amountUsd: "1.000000" }),
          "-H",
          `ZC-Agent-Authorization:Bearer ${token}`,
          "--yes",
          "--output-json",
        ],
        env: {
          MPPX_CONFIG: new URL("./mppx_validate.config.ts", import.meta.url).pathname,
          MPPX_TEST_BUYER_KEY: LOCAL_KEYS.buyer,
          NO_COLOR: "1",
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, text.slice(0, 4000));
      const report = JSON.parse(text);
      assert.equal(report.summary.failed, 0, JSON.stringify(report.endpoints));
      const checks = report.endpoints[0];
      const passed = (list: { label: string; severity: string }[]) =>
        list.filter((c) => c.severity === "pass").map((c) => c.label);
      assert.ok(passed(checks.challenge).includes("x402 payment challenge"));
      assert.ok(passed(checks.payment).includes("Payment: successful"));
      assert.ok(passed(checks.payment).includes('Receipt status is "success"'));
      assert.equal(await chain.balanceOf(chain.addresses.buyer), before - ONE_USD);
    });

    await t.step("the ledger matches the chain: each settlement once, credited exactly", async () => {
      const records = await payments(w);
      const settled = records.filter((p) => p.rail === "evm" && p.state === "consumed");
      const creditedMicros = settled.reduce((s, p) => s + BigInt(p.amountMicros), 0n);
      const sellerGain = (await chain.balanceOf(chain.addresses.seller)) - seller0;
      assert.equal(sellerGain, creditedMicros);
      // mppx client 1.52, x402 3.02, MCP 0.02, mppx validate 1.00.
      assert.equal(sellerGain, 1_520_000n + 3_020_000n + 20_000n + ONE_USD);
      // One on-chain settlement per consumed record, none twice.
      assert.equal(chain.settlements.length, settled.length);
      assert.equal(new Set(chain.settlements).size, chain.settlements.length);
      assert.equal(new Set(settled.map((p) => p.processorRef)).size, settled.length);
      assert.ok(settled.every((p) => chain.settlements.includes(p.processorRef!)));
      // Pay-per-call records are for the PAYG plan; buyer + seller balances add up.
      assert.equal(settled.filter((p) => p.terms.planId === payg.id).length, 3);
      const buyersSpent = buyer0 + buyer2_0 - (await chain.balanceOf(chain.addresses.buyer)) -
        (await chain.balanceOf(chain.addresses.buyer2));
      assert.equal(buyersSpent, sellerGain);
    });
  } finally {
    await http.close();
    await w.close();
    await chain.close();
  }
});
