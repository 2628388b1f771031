/**
 * One process does not call itself over HTTP: when the payment layer (AGENT_AUTH_URL) is this
 * process, the payproxy allowance call goes through the same loopback as the paid upstream.
 */
import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";

/** A fetch that records where it was sent and reaches nothing (as an unreachable network would). */
function recordingFetch() {
  const sent: string[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    sent.push(new Request(input, init).url);
    return Promise.reject(new TypeError("no network in this test"));
  };
  return { sent, fetch };
}

const REQUEST = { agentId: "agent-1", serviceSlug: "demo-news", usage: [{ meterSlug: "query", quantity: 1 }] };

Deno.test("allowance check: in-process through the loopback when AGENT_AUTH_URL is this process, no network call", async () => {
  const net = recordingFetch();
  await using w = await createTestWorld({ fetch: net.fetch, env: { AGENT_AUTH_URL: "http://svc.test" } });
  const key = await w.deps.payproxy.secrets.create("sel_loop");
  const decision = await w.deps.payproxy.allowance.check(REQUEST, key, { requestId: "rq-loop" });
  // The storefront's own answer (this seller sells nothing to this agent), not a fail-open.
  assert.deepEqual(decision, { allowed: false });
  assert.deepEqual(net.sent, []);
  assert.equal(w.deps.payproxy.metrics.allowance.calls, 1);
  assert.equal(w.deps.payproxy.metrics.allowance.failOpen, 0);
});

Deno.test("allowance check: over the network with PAID_PROXY_UPSTREAM=http or another payment layer", async (t) => {
  for (
    const [name, env] of [
      ["PAID_PROXY_UPSTREAM=http", { AGENT_AUTH_URL: "http://svc.test", PAID_PROXY_UPSTREAM: "http" }],
      ["AGENT_AUTH_URL elsewhere", { AGENT_AUTH_URL: "http://pay.test" }],
    ] as const
  ) {
    await t.step(name, async () => {
      const net = recordingFetch();
      await using w = await createTestWorld({ fetch: net.fetch, env });
      const key = await w.deps.payproxy.secrets.create("sel_net");
      const decision = await w.deps.payproxy.allowance.check(REQUEST, key);
      assert.deepEqual(decision, { allowed: true, failedOpen: true });
      assert.deepEqual(net.sent, [`${env.AGENT_AUTH_URL}/internal/allowance`]);
    });
  }
});
