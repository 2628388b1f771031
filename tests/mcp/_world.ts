/**
 * MCP test world: the whole app behind a real HTTP server on 127.0.0.1 port 0, seeded with the
 * demo tenant (API key), the demo seller (credit plan and pay-as-you-go), its payproxy secret and a
 * few articles; SDK clients connect with an API key or a real storefront agent access token.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";
import type { DepsOverrides } from "../../composition.ts";
import { challengesOf, paymentAuthorization, postJson, TestAgents } from "../commerce/_helpers.ts";

/**
 * Builds the world; `await using` it. `env` adds settings (e.g. MAIL_OUTBOX for claim tests);
 * `realBase` makes the server's own address BASE_URL (for browsers and OAuth clients that must
 * reach the URLs the service names), instead of `http://svc.test`.
 */
export async function mcpWorld(
  { env = {}, realBase = false, overrides = {} }: {
    env?: Record<string, string>;
    realBase?: boolean;
    /** Parts the builder should not make (e.g. a safeFetch that reaches local TLS peers). */
    overrides?: DepsOverrides;
  } = {},
) {
  const self: { fetch?: (req: Request) => Response | Promise<Response> } = {};
  const server = startServer((req) => self.fetch!(req));
  const base = realBase ? server.url : "http://svc.test";
  const host = new URL(base).host;
  // Outbound calls to this service's own address (the payproxy allowance check) land in-process.
  const fetch: typeof globalThis.fetch = (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin === base) return Promise.resolve(self.fetch!(req));
    return Promise.reject(new Error(`unexpected outbound call to ${req.url}`));
  };
  const w = await createTestWorld({ fetch, overrides, env: { ...(realBase ? { BASE_URL: base } : {}), ...env } });
  self.fetch = (req) => w.app.fetch(req);
  const seeded = await seedDemo(w.deps, [seedStorefront, seedPayproxySecret, seedCommerceDemo]);
  const ids = seeded.ids;
  const dm = (await w.deps.repos.dataModels.get(ids.dataModelId))!;
  const ago = (h: number) => new Date(w.clock.now().getTime() - h * 3_600_000).toISOString();
  const report = await w.deps.search.ingest(dm, [
    {
      url: "https://alpha.example/council-budget",
      title: "City council passes the budget after a long debate",
      author: "Ana Reyes",
      body: "The city council passed next year's budget, with more money for buses and parks.",
      pubdate: ago(5),
    },
    {
      url: "https://beta.example/council-housing",
      title: "Council plans new housing near the station",
      body: "The council approved plans for four hundred homes near the railway station.",
      pubdate: ago(30),
    },
    {
      url: "https://gamma.example/storm",
      title: "Storm floods the harbour",
      body: "A storm surge flooded the harbour and the streets beside it overnight.",
      pubdate: ago(2),
    },
  ]);
  assert.equal(report.failed, 0);
  const agents = new TestAgents(w.deps, "demo");
  const clients: Client[] = [];

  /** A connected SDK client sending `authorization` (or none). */
  const connect = async (authorization?: string) => {
    const client = new Client({ name: "mcp-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: authorization ? { headers: { authorization } } : {},
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };

  /** Buys `amountUsd` of the demo credit plan for an agent token over the Payment scheme. */
  const buyCredit = async (token: string, amountUsd: string) => {
    const plan = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
    const on = (init: RequestInit) => ({ ...init, headers: { ...init.headers as object, host } });
    const url = `${base}/plans/${plan.id}/purchase`;
    const first = await w.app.request(
      url,
      on(postJson({ amountUsd }, { authorization: `Bearer ${token}` })),
    );
    assert.equal(first.status, 402);
    const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
    await first.body?.cancel();
    const bought = await w.app.request(
      url,
      on(postJson({ amountUsd }, {
        authorization: paymentAuthorization(wallet, { token: SANDBOX_TOKENS.wallet.success }),
        "zc-agent-authorization": `Bearer ${token}`,
      })),
    );
    assert.equal(bought.status, 200, await bought.clone().text());
    await bought.body?.cancel();
  };

  /** The agent's remaining credit at the demo seller, in USD. */
  const remainingUsd = async (token: string) => {
    const res = await w.app.request(`${base}/agent/entitlements`, {
      headers: { host, authorization: `Bearer ${token}` },
    });
    const body = await res.json();
    return body.entitlements?.[0]?.remainingUsd as string | undefined;
  };

  const closeWorld = w.close;
  const close = async () => {
    for (const c of clients) await c.close().catch(() => {});
    await server.shutdown();
    await closeWorld();
  };
  return Object.assign(w, {
    ids,
    apiKey: seeded.apiKey!,
    url: server.url,
    /** BASE_URL (and AGENT_AUTH_URL) of the world. */
    base,
    agents,
    connect,
    buyCredit,
    remainingUsd,
    close,
    [Symbol.asyncDispose]: close,
  });
}
