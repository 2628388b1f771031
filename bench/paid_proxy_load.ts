/**
 * Load script: what the storefront's paid proxy adds over a direct payproxy call.
 *
 *   deno run -A bench/paid_proxy_load.ts [calls=2000] [mode=inprocess]
 *
 * Both paths run over real HTTP on 127.0.0.1 against the same upstream, alternating in batches so
 * drift hits both alike:
 *   direct:  client -> /payproxy/v2/search (signed by the client, for the same agent)
 *   proxied: client -> storefront /v2/search (agent token) -> coverage + atomic reservation -> signed
 *            forward to /payproxy/v2/search -> usage billed -> response
 * Modes: `inprocess` and `http` run the service's real payproxy route (signature check, marketplace
 * gate, allowance call to the storefront's /internal/allowance, search) with the proxy and the
 * allowance call reaching this process in-process (the loopback) or over HTTP (PAID_PROXY_UPSTREAM);
 * `peer` uses a minimal 127.0.0.1 peer that only verifies the signature and reports `zc-usage`.
 */
import { unixSeconds } from "../core/clock.ts";
import { signRequest } from "../core/payproxy/signature.ts";
import { SANDBOX_TOKENS } from "../core/commerce/processor.ts";
import { startServer } from "../routes/server.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../tests/commerce/_helpers.ts";

const calls = Number(Deno.args[0] ?? 2000);
const mode = Deno.args[1] ?? "inprocess";
if (!["inprocess", "http", "peer"].includes(mode)) throw new Error("mode must be inprocess, http or peer");
// The server starts first so the world can be configured with its address; requests wait for the app.
const late: { app?: { fetch(req: Request): Response | Promise<Response> } } = {};
const server = startServer((req) => late.app!.fetch(req));
// The seller answers any host, so the load client can use the server's 127.0.0.1 address.
// One agent makes every call: its per-agent allowance (SEARCH_RATE_LIMIT_PER_MIN) is raised past the run.
const env: Record<string, string> = { STOREFRONT_DEFAULT_SELLER: "acme", SEARCH_RATE_LIMIT_PER_MIN: "1000000" };
if (mode !== "peer") {
  Object.assign(env, { BASE_URL: server.url, AGENT_AUTH_URL: server.url, PAID_PROXY_UPSTREAM: mode });
}
const w = await createCommerceWorld({ upstream: mode === "peer", env });
late.app = w.app;
const upstreamUrl = mode === "peer" ? w.upstream.url : server.url;
try {
  const { token, agent } = await w.agents.issue();
  // Enough credit for every proxied call (0.01 USD each).
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson({ amountUsd: "100.000000" }), token });
  const ch = challengesOf(first).find((c) => c.method === "card")!;
  await first.body?.cancel();
  const bought = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "100.000000" }, {
      authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.card.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  if (bought.status !== 200) throw new Error(`purchase failed: ${bought.status}`);
  await bought.body?.cancel();

  const key = (await w.secrets.current(w.sellerId))!;
  const body = new TextEncoder().encode(JSON.stringify({ query: "interest rates" }));
  const path = `/payproxy/v2/search?data_model_id=${w.dataModelId}`;
  let n = 0;
  const direct = async () => {
    const requestId = `bench-${++n}-${crypto.randomUUID()}`;
    const sig = (await signRequest({
      ...key,
      t: unixSeconds(w.clock),
      method: "POST",
      url: path,
      body,
      requestId,
      agentId: agent.credentialId,
    })).header;
    const res = await fetch(`${upstreamUrl}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "zc-signature": sig,
        "zc-request-id": requestId,
        "zc-agent-id": agent.credentialId,
      },
      body,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`direct ${res.status}`);
  };
  const proxied = async () => {
    const res = await fetch(`${server.url}/v2/search?data_model_id=${w.dataModelId}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`proxied ${res.status}: ${res.headers.get("zc-usage-error")}`);
  };
  const time = async (fn: () => Promise<void>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  for (let i = 0; i < 200; i++) {
    await direct();
    await proxied();
  }
  const d: number[] = [];
  const p: number[] = [];
  const batch = 50;
  for (let i = 0; i < calls; i += batch) {
    for (let j = 0; j < batch; j++) d.push(await time(direct));
    for (let j = 0; j < batch; j++) p.push(await time(proxied));
  }
  const q = (xs: number[], f: number) => [...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))]!;
  const row = (name: string, xs: number[]) =>
    `${name.padEnd(8)} n=${xs.length} p50=${q(xs, 0.5).toFixed(3)} ms p90=${q(xs, 0.9).toFixed(3)} ms p99=${
      q(xs, 0.99).toFixed(3)
    } ms`;
  console.log(`mode ${mode}`);
  console.log(row("direct", d));
  console.log(row("proxied", p));
  console.log(`added p50=${(q(p, 0.5) - q(d, 0.5)).toFixed(3)} ms`);
} finally {
  await server.shutdown();
  await w.close();
}
