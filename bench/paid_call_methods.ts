/**
 * Bench: one pay-as-you-go call paid through mppx's own methods against the storefront's own rail.
 *
 *   deno run -A bench/paid_call_methods.ts [calls=100]
 *
 * Every path is a whole paid call as a stock client makes it, over real HTTP on 127.0.0.1: the 402,
 * the credential, the paid retry, the upstream answer (a minimal 127.0.0.1 peer that verifies the
 * payproxy signature and reports usage), alternating in batches of 10 so drift hits all alike.
 *   wallet:   today's own `wallet` rail, sandbox token (mppx client with a token method)
 *   evm:      mppx client with its `evm` method: EIP-3009 signature; the server verifies it, asks the
 *             x402 facilitator to verify and settle it on the local chain (ganache, instant mining) and
 *             confirms the Transfer on chain before answering
 *   x402:     @x402/fetch with a viem account, same settlement
 */
import { Mppx } from "mppx/client";
import { evm } from "mppx/evm/client";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { FixedClock } from "../core/clock.ts";
import { SANDBOX_TOKENS } from "../core/commerce/processor.ts";
import { LOCAL_KEYS, startLocalChain, TOKEN_DOMAIN } from "../fixtures/chain/local.ts";
import { createCommerceWorld, postJson, tokenMethod } from "../tests/commerce/_helpers.ts";

const calls = Number(Deno.args[0] ?? 100);
const chain = await startLocalChain({ mintPerBuyer: 1_000_000_000n });
const w = await createCommerceWorld({
  upstream: true,
  clock: new FixedClock(new Date().toISOString()),
  env: {
    PAY_EVM_CHAIN_ID: String(chain.chainId),
    PAY_EVM_TOKEN: chain.token,
    PAY_EVM_TOKEN_NAME: TOKEN_DOMAIN.name,
    PAY_EVM_TOKEN_VERSION: TOKEN_DOMAIN.version,
    PAY_EVM_RECIPIENT: chain.addresses.seller,
    PAY_X402_FACILITATOR_URL: chain.facilitatorUrl,
    PAY_EVM_RPC_URL: chain.rpcUrl,
  },
});
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
  const url = new URL(req.url);
  const headers = new Headers(req.headers);
  headers.set("host", "store.test");
  return w.app.fetch(
    new Request(`http://store.test${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      body: req.body,
      // deno-lint-ignore no-explicit-any
      duplex: "half" as any,
    } as RequestInit),
  );
});
try {
  await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const agentFetch: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    req.headers.set("zc-agent-authorization", `Bearer ${token}`);
    return fetch(req);
  };
  const url = `http://127.0.0.1:${server.addr.port}/v2/search?data_model_id=${w.dataModelId}`;
  const network = `eip155:${chain.chainId}` as const;
  const clients = {
    wallet: Mppx.create({
      methods: [tokenMethod("wallet", SANDBOX_TOKENS.wallet.success)],
      fetch: agentFetch,
      polyfill: false,
    }).fetch,
    evm: Mppx.create({
      methods: [evm({ account: privateKeyToAccount(LOCAL_KEYS.buyer), authorization: TOKEN_DOMAIN })],
      fetch: agentFetch,
      polyfill: false,
    }).fetch,
    x402: wrapFetchWithPayment(
      agentFetch,
      x402Client.fromConfig({
        schemes: [{ network, client: new ExactEvmScheme(privateKeyToAccount(LOCAL_KEYS.buyer2)) }],
        spendControls: { allowedAssets: [{ network, asset: chain.token }] },
      }),
    ),
  };
  const call = async (f: typeof fetch) => {
    const t0 = performance.now();
    const res = await f(url, postJson({ query: "interest rates" }));
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`paid call answered ${res.status}`);
    return performance.now() - t0;
  };
  for (const f of Object.values(clients)) for (let i = 0; i < 5; i++) await call(f);
  const times: Record<string, number[]> = { wallet: [], evm: [], x402: [] };
  for (let i = 0; i < calls; i += 10) {
    for (const [name, f] of Object.entries(clients)) for (let j = 0; j < 10; j++) times[name]!.push(await call(f));
  }
  const q = (xs: number[], f: number) => [...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))]!;
  for (const [name, xs] of Object.entries(times)) {
    console.log(
      `${name.padEnd(7)} n=${xs.length} p50=${q(xs, 0.5).toFixed(1)} ms p90=${q(xs, 0.9).toFixed(1)} ms p99=${
        q(xs, 0.99).toFixed(1)
      } ms`,
    );
  }
  console.log(`settlements on chain: ${chain.settlements.length}`);
} finally {
  await server.shutdown();
  await w.close();
  await chain.close();
}
