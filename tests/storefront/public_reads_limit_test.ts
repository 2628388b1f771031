import assert from "node:assert/strict";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";
import { SF, storefrontWorld } from "./_world.ts";

// Behind one trusted proxy, the client address is the last X-Forwarded-For entry.
const from = (address: string) => ({ "x-forwarded-for": `10.9.9.9, ${address}` });
const ENV = { TRUST_PROXY: "1", PUBLIC_READS_PER_MIN_PER_ADDRESS: "3" };
// Well-formed, matches no payment: the limit answers before the lookup.
const REF = "ref_unknown_0000000000";

Deno.test("GET /payments/{reference} (statusUrl): a flood from one address is 429 rate_limit_exceeded, another address is not held up", async () => {
  await using w = await storefrontWorld({ env: ENV });
  const poll = (address: string) => w.app.request(`${SF}/payments/${REF}`, { headers: from(address) });
  for (let i = 0; i < 3; i++) assert.equal((await poll("203.0.113.5")).status, 404);
  const refused = await poll("203.0.113.5");
  assert.equal(refused.status, 429);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  assert.equal(body.retry_after, Number(refused.headers.get("retry-after")));
  assert.equal((await poll("198.51.100.9")).status, 404);
  // A minute later the same address polls again.
  w.clock.advance(60_000);
  assert.equal((await poll("203.0.113.5")).status, 404);
});

Deno.test("GET /payments/{reference}: the default limit lets an agent poll every second", async () => {
  await using w = await storefrontWorld({ env: { TRUST_PROXY: "1" } });
  // Two agents behind one address, each polling once a second for two minutes.
  for (let s = 0; s < 120; s++) {
    for (let agent = 0; agent < 2; agent++) {
      const res = await w.app.request(`${SF}/payments/${REF}`, { headers: from("203.0.113.5") });
      assert.equal(res.status, 404, `second ${s}`);
    }
    w.clock.advance(1000);
  }
});

Deno.test("GET and POST /checkout/{reference}: page loads and cancels from one address are counted, over the limit a minimal HTML 429", async () => {
  await using w = await storefrontWorld({ env: ENV });
  const page = (address: string) => w.app.request(`${SF}/checkout/${REF}`, { headers: from(address) });
  const cancel = (address: string) =>
    w.app.request(`${SF}/checkout/${REF}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: SF, ...from(address) },
      body: "action=cancel",
    });
  assert.equal((await page("203.0.113.5")).status, 404);
  // Cancels of an unknown checkout: the page's 404, after the limit has counted them.
  assert.equal((await cancel("203.0.113.5")).status, 404);
  assert.equal((await cancel("203.0.113.5")).status, 404);
  for (const refused of [await page("203.0.113.5"), await cancel("203.0.113.5")]) {
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get("content-type") ?? "", /^text\/html/);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.equal(refused.headers.get("cache-control"), "no-store");
    assert.match(await refused.text(), /Too many requests from this address/);
  }
  assert.equal((await page("198.51.100.9")).status, 404);
});

Deno.test("catalog documents: /services, /manifest.json, /llms.txt and /llms-full.txt share one per-address limit", async () => {
  await using w = await createCommerceWorld({ env: ENV });
  const get = (path: string, address: string) =>
    w.app.request(`http://store.test${path}`, { headers: { host: w.host, ...from(address) } });
  for (const path of ["/services", "/manifest.json", "/llms.txt"]) {
    assert.equal((await get(path, "203.0.113.5")).status, 200);
  }
  const refused = await get("/llms-full.txt", "203.0.113.5");
  assert.equal(refused.status, 429);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.equal(body.retry_after, Number(refused.headers.get("retry-after")));
  assert.equal((await get("/services", "198.51.100.9")).status, 200);
});

Deno.test("agent reads: /agent/entitlements, the network view and /agent/balance count per address, whatever token (a free anonymous one) is sent", async () => {
  await using w = await createCommerceWorld({ env: ENV });
  // A fresh anonymous identity per request: rotating tokens does not open a new window.
  const read = async (path: string, address: string) =>
    w.req(path, { token: (await w.agents.issue()).token, headers: from(address) });
  assert.equal((await read("/agent/entitlements", "203.0.113.5")).status, 200);
  assert.equal((await read("/network/agent/entitlements", "203.0.113.5")).status, 200);
  assert.equal((await read("/agent/balance", "203.0.113.5")).status, 200);
  const refused = await read("/agent/entitlements", "203.0.113.5");
  assert.equal(refused.status, 429);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.equal(body.retry_after, Number(refused.headers.get("retry-after")));
  // Without a token too: the limit counts before the token is checked.
  assert.equal((await w.req("/agent/balance", { headers: from("203.0.113.5") })).status, 429);
  assert.equal((await read("/agent/balance", "198.51.100.9")).status, 200);
});

Deno.test("paid proxy: refused calls to POST /v2/search and /aimodel/{id} count per agent credential (SEARCH_RATE_LIMIT_PER_MIN), another agent is not held up", async () => {
  await using w = await createCommerceWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "2" } });
  const { token } = await w.agents.issue();
  const call = (path: string, t: string) =>
    w.req(path, {
      method: "POST",
      token: t,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "ai" }),
    });
  // Calls no plan covers (403 plan_required) cost the plan lookups for nothing: counted per agent.
  assert.equal((await call(`/v2/search?data_model_id=${w.dataModelId}`, token)).status, 403);
  assert.equal((await call(`/aimodel/${w.aiModelId}`, token)).status, 403);
  const refused = await call(`/v2/search?data_model_id=${w.dataModelId}`, token);
  assert.equal(refused.status, 429);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  assert.equal(body.retry_after, Number(refused.headers.get("retry-after")));
  const other = await w.agents.issue();
  assert.equal((await call(`/v2/search?data_model_id=${w.dataModelId}`, other.token)).status, 403);
});

Deno.test("paid proxy: paid calls are bounded by the credit they spend, not by the refusal budget; refusals past it are 429 at once", async () => {
  await using w = await createCommerceWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "2" } });
  const { token } = await w.agents.issue();
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson({ amountUsd: "1.00" }), token });
  const ch = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const bought = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "1.00" }, {
      authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(bought.status, 200);
  await bought.body?.cancel();
  const search = (dm: string) => w.req(`/v2/search?data_model_id=${dm}`, { ...postJson({ query: "rates" }), token });
  for (let i = 0; i < 4; i++) {
    const paid = await search(w.dataModelId);
    assert.equal(paid.status, 200, "a paid call spends credit, whatever the refusal budget");
    await paid.body?.cancel();
  }
  // Refusals (a data model this seller does not sell, 404) count: the third is 429, and so is the next paid call.
  const unknown = "dm_00000000000000000000000000";
  assert.equal((await search(unknown)).status, 404);
  assert.equal((await search(unknown)).status, 404);
  assert.equal((await search(unknown)).status, 429);
  const after = await search(w.dataModelId);
  assert.equal(after.status, 429, "past its refusal budget the agent waits for the window");
  assert.equal((await after.json()).error, "rate_limit_exceeded");
});

Deno.test("POST /mcp: an agent's requests (tool call or not) count per credential with its paid calls, 429 over the limit; an API key is not counted here", async () => {
  await using w = await createCommerceWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "2" } });
  const initialize = (authorization: string) =>
    w.req("/mcp", {
      method: "POST",
      headers: { authorization, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
  const { token } = await w.agents.issue();
  for (let i = 0; i < 2; i++) assert.equal((await initialize(`Bearer ${token}`)).status, 200);
  const refused = await initialize(`Bearer ${token}`);
  assert.equal(refused.status, 429);
  assert.equal((await refused.json()).error, "rate_limit_exceeded");
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  assert.equal((await initialize(`Bearer ${(await w.agents.issue()).token}`)).status, 200);
  const { key } = await w.tenantWithKey("Key Holder");
  for (let i = 0; i < 3; i++) assert.equal((await initialize(`Bearer ${key}`)).status, 200);
});

Deno.test("POST /oauth2/token jwt-bearer: exchanges of a free anonymous assertion count per client address, 429 rate_limit_exceeded", async () => {
  await using w = await storefrontWorld({ env: ENV });
  const registered = await (await w.post("/agent/identity", { type: "anonymous" })).json();
  const assertion: string = registered.identity.assertion;
  const exchange = (address: string) =>
    w.form("/oauth2/token", { grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }, from(address));
  for (let i = 0; i < 3; i++) assert.equal((await exchange("203.0.113.5")).status, 200);
  const refused = await exchange("203.0.113.5");
  assert.equal(refused.status, 429);
  const body = await refused.json();
  assert.equal(body.error, "rate_limit_exceeded");
  assert.equal(body.retry_after, Number(refused.headers.get("retry-after")));
  assert.equal((await exchange("198.51.100.9")).status, 200);
});
