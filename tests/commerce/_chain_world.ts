/**
 * A storefront paid on the local EVM chain (fixtures/chain/local.ts), for the settlement tests:
 * its env, a stock mppx evm client, the chain's JSON-RPC, and a world that closes its peers.
 */
import { Mppx } from "mppx/client";
import { evm } from "mppx/evm/client";
import { privateKeyToAccount } from "viem/accounts";
import { FixedClock } from "../../core/clock.ts";
import { LOCAL_KEYS, type LocalChain, startLocalChain, TOKEN_DOMAIN } from "../../fixtures/chain/local.ts";
import { type CommerceWorld, createCommerceWorld, serveAsStore } from "./_helpers.ts";

/** The env of a storefront paid in the chain's token to its seller, through these facilitator and node. */
export function chainEnv(chain: LocalChain, facilitatorUrl: string, rpcUrl: string): Record<string, string> {
  return {
    PAY_EVM_CHAIN_ID: String(chain.chainId),
    PAY_EVM_TOKEN: chain.token,
    PAY_EVM_TOKEN_NAME: TOKEN_DOMAIN.name,
    PAY_EVM_TOKEN_VERSION: TOKEN_DOMAIN.version,
    PAY_EVM_RECIPIENT: chain.addresses.seller,
    PAY_X402_FACILITATOR_URL: facilitatorUrl,
    PAY_EVM_RPC_URL: rpcUrl,
  };
}

/** A stock mppx evm client paying from the chain's buyer as the agent `token`; `sent` keeps its last `Authorization`. */
export function evmClient(token: string, sent?: { authorization: string | null }) {
  return Mppx.create({
    methods: [evm({ account: privateKeyToAccount(LOCAL_KEYS.buyer), authorization: TOKEN_DOMAIN })],
    fetch: (input, init) => {
      const req = new Request(input, init);
      req.headers.set("zc-agent-authorization", `Bearer ${token}`);
      if (sent) sent.authorization = req.headers.get("authorization");
      return fetch(req);
    },
    polyfill: false,
  });
}

/** One JSON-RPC call to the chain's own node (`evm_mine`, `evm_increaseTime`, ...). */
export const rpcOf = (chain: LocalChain) => (method: string, params: unknown[] = []) =>
  fetch(chain.rpcUrl, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })
    .then((r) => r.json());

/**
 * A facilitator in front of the real one whose `/settle` answer never reaches the storefront (502):
 * `settles` says whether the settlement is made behind it (money moved) or never made.
 */
export function lossyFacilitator(chain: LocalChain, settles: boolean) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/settle" && !settles) {
      await req.body?.cancel();
      return new Response("bad gateway", { status: 502 });
    }
    const res = await fetch(`${chain.facilitatorUrl}${path}`, {
      method: req.method,
      headers: { "content-type": "application/json" },
      body: req.method === "POST" ? await req.text() : undefined,
    });
    if (path !== "/settle") return res;
    await res.body?.cancel();
    return new Response("bad gateway", { status: 502 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/** A local peer in front of the chain (a facilitator or a node): its URL, and how to stop it. */
export type ChainPeer = { url: string; close: () => Promise<void> | void };

export type ChainWorld = { chain: LocalChain; clock: FixedClock; w: CommerceWorld; http: { url: string } };

/** What a chain world's storefront is paid through, besides the chain's own facilitator and node. */
export type ChainWorldSetup = {
  facilitator?: (chain: LocalChain) => string | ChainPeer;
  rpc?: (chain: LocalChain) => string | ChainPeer;
  wrapKv?: (kv: Deno.Kv) => Deno.Kv;
  upstream?: boolean;
  env?: Record<string, string>;
};

/**
 * A test file's `withChainWorld`: call it once at the file's top level. The file's tests share one
 * chain, started before them and stopped after them (Deno.test.beforeAll/afterAll: a chain process
 * started, its token deployed and funded cost about 0.5 s of CPU each time), and each world gets it
 * back as it was started ({@link LocalChain.reset}): no test sees another's blocks, balances,
 * settlements or chain time.
 */
export function chainWorlds(): (setup: ChainWorldSetup, body: (world: ChainWorld) => Promise<void>) => Promise<void> {
  let chain: LocalChain | undefined;
  Deno.test.beforeAll(async () => {
    chain = await startLocalChain();
  });
  Deno.test.afterAll(async () => {
    await chain?.close();
  });
  return async (setup, body) => {
    if (!chain) throw new Error("chainWorlds() is called at a test file's top level, before its tests");
    await chain.reset();
    await worldOn(chain, setup, body);
  };
}

/**
 * Runs `body` against `chain` and a storefront served over HTTP, paid through `facilitator` and
 * `rpc` (the chain's own by default; a peer is closed after the world's server, before the world).
 */
async function worldOn(
  chain: LocalChain,
  setup: ChainWorldSetup,
  body: (world: ChainWorld) => Promise<void>,
): Promise<void> {
  const peers: ChainPeer[] = [];
  const urlOf = (peer: string | ChainPeer) => typeof peer === "string" ? peer : (peers.push(peer), peer.url);
  const clock = new FixedClock(new Date().toISOString());
  const facilitatorUrl = setup.facilitator ? urlOf(setup.facilitator(chain)) : chain.facilitatorUrl;
  const rpcUrl = setup.rpc ? urlOf(setup.rpc(chain)) : chain.rpcUrl;
  const w = await createCommerceWorld({
    clock,
    wrapKv: setup.wrapKv,
    upstream: setup.upstream,
    env: { ...chainEnv(chain, facilitatorUrl, rpcUrl), ...setup.env },
  });
  const http = serveAsStore(w);
  try {
    await body({ chain, clock, w, http });
  } finally {
    await http.close();
    for (const peer of peers) await peer.close();
    await w.close();
  }
}
