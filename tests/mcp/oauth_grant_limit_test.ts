/**
 * The `/oauth2/token` per-address limit (`STOREFRONT_RATE_LIMIT`, 30 a minute) is there against
 * guessing codes and refresh tokens, but it counted the grants that succeeded: an MCP host serving
 * several users from one address got 429 on a refresh grant, and the MCP SDK then dropped its
 * tokens and sent the human back to the consent page. Only failed code and refresh grants now use
 * up that budget; every grant, failed or not, counts against the address's token budget
 * (`PUBLIC_READS_PER_MIN_PER_ADDRESS`, shared with jwt-bearer exchanges), the ceiling against floods.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HostProvider, signInAnonymously } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

type World = Awaited<ReturnType<typeof mcpWorld>>;
// Low enough to meet in a test, high enough for one sign-in's consent page (open, choose, the anonymous identity).
const LIMIT = 3;

/** One user of an MCP host, signed in through the SDK's OAuth client (a code grant). */
async function signedInUser(w: World, n: number) {
  const provider = new HostProvider(`http://127.0.0.1:5368${n}/callback`, `Host user ${n}`);
  const mcpUrl = new URL(`${w.base}/mcp`);
  await signInAnonymously(w, provider);
  const client = new Client({ name: "host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return { provider, client };
}

/** A refresh grant sent from the test's own address (the same one as the SDK's). */
function refresh(w: World, clientId: string, token: string) {
  return fetch(`${w.base}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token, client_id: clientId }).toString(),
  }).then(async (res) => ({ status: res.status, ...(await res.json()) }));
}

Deno.test("MCP SDK OAuth client: more users of one host address refreshing in one minute than STOREFRONT_RATE_LIMIT all stay signed in", async () => {
  await using w = await mcpWorld({ realBase: true, env: { STOREFRONT_RATE_LIMIT: String(LIMIT) } });
  const users = [];
  for (let n = 0; n < LIMIT + 2; n++) {
    users.push(await signedInUser(w, n));
    w.clock.advance(61_000); // each sign-in in a minute of its own
  }
  // Every user's access token expires; their next calls refresh within the same minute.
  w.clock.advance(w.deps.config.storefront.accessTokenTtlS * 1000 + 1000);
  const answered: string[] = [];
  for (const { client } of users) {
    answered.push(await client.listTools().then(() => "ok", (err: unknown) => String(err)));
  }
  assert.deepEqual(answered, users.map(() => "ok"));
  assert.deepEqual(users.map((u) => u.provider.consentsAsked), users.map(() => 1), "no human sent back to consent");
  for (const { client } of users) await client.close();
});

Deno.test("POST /oauth2/token: failed refresh grants use up STOREFRONT_RATE_LIMIT per address, then even a valid one is 429 until the next minute", async () => {
  await using w = await mcpWorld({ realBase: true, env: { STOREFRONT_RATE_LIMIT: String(LIMIT) } });
  const { provider, client } = await signedInUser(w, 0);
  await client.close();
  w.clock.advance(61_000);
  const clientId = provider.info!.client_id;
  for (let i = 0; i < LIMIT; i++) {
    const guess = await refresh(w, clientId, `rt_guess_${i}`);
    assert.equal(guess.status, 400);
    assert.equal(guess.error, "invalid_grant");
  }
  const limited = await refresh(w, clientId, provider.saved!.refresh_token!);
  assert.equal(limited.status, 429);
  assert.equal(limited.error, "rate_limit_exceeded");
  assert.ok(limited.retry_after >= 1);
  w.clock.advance(60_000);
  const next = await refresh(w, clientId, provider.saved!.refresh_token!);
  assert.equal(next.status, 200, "the refused grant did not consume the refresh token");
});

Deno.test("POST /oauth2/token: successful grants from one address stop at PUBLIC_READS_PER_MIN_PER_ADDRESS a minute", async () => {
  await using w = await mcpWorld({
    realBase: true,
    env: { STOREFRONT_RATE_LIMIT: String(LIMIT), PUBLIC_READS_PER_MIN_PER_ADDRESS: "5" },
  });
  const { provider, client } = await signedInUser(w, 0);
  await client.close();
  w.clock.advance(61_000);
  const clientId = provider.info!.client_id;
  let token = provider.saved!.refresh_token!;
  for (let i = 0; i < 5; i++) {
    const ok = await refresh(w, clientId, token);
    assert.equal(ok.status, 200, `refresh ${i + 1}`);
    token = ok.refresh_token;
  }
  const flood = await refresh(w, clientId, token);
  assert.equal(flood.status, 429);
  assert.equal(flood.error, "rate_limit_exceeded");
});
