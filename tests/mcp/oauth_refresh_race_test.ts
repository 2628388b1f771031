/**
 * The MCP SDK's OAuth client refreshes once per request that met a 401: an MCP host that sends
 * calls in parallel when its access token (five minutes) expires refreshes with the same refresh
 * token several times at once. Refresh tokens rotate, and a rotated one presented again revokes its
 * family; without a grace, the host lost its sign-in (and sent the human back to the consent page)
 * every time its parallel calls met an expiry. A rotated token presented again within
 * `REFRESH_REUSE_GRACE_S` gets the same successor; after it, a replay still revokes the family.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REFRESH_REUSE_GRACE_S } from "../../core/identity/oauth.ts";
import { HostProvider, refreshGrant, signInAnonymously } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("MCP SDK OAuth client: parallel calls at token expiry all refresh and the host stays signed in; a replay after the grace still revokes", async (t) => {
  await using w = await mcpWorld({ realBase: true });
  const provider = new HostProvider("http://127.0.0.1:53682/callback");
  const mcpUrl = new URL(`${w.base}/mcp`);
  await signInAnonymously(w, provider);
  const client = new Client({ name: "host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  assert.equal(provider.consentsAsked, 1);
  const ttlMs = w.deps.config.storefront.accessTokenTtlS * 1000;
  const signedIn = provider.saved!.refresh_token!;

  await t.step("three calls sent at once after the access token expired all succeed", async () => {
    w.clock.advance(ttlMs + 1000);
    const results = await Promise.allSettled([client.listTools(), client.listTools(), client.listTools()]);
    assert.deepEqual(results.map((r) => r.status === "fulfilled" ? "ok" : String(r.reason)), ["ok", "ok", "ok"]);
    assert.equal(provider.consentsAsked, 1, "the human was not asked again");
    assert.notEqual(provider.saved?.refresh_token, signedIn, "the refresh token rotated");
  });

  await t.step("at the next expiry the host refreshes again: the family is alive", async () => {
    w.clock.advance(ttlMs + 1000);
    assert.ok((await client.listTools()).tools.length > 0);
    assert.equal(provider.consentsAsked, 1);
  });

  await t.step("the first refresh token presented after the grace is a replay: the family is revoked", async () => {
    w.clock.advance(REFRESH_REUSE_GRACE_S * 1000);
    const refresh = (token: string) => refreshGrant(w, provider, token);
    const replay = await refresh(signedIn);
    assert.equal(replay.status, 400);
    assert.equal(replay.error, "invalid_grant");
    const current = await refresh(provider.saved!.refresh_token!);
    assert.equal(current.error, "invalid_grant", "the newest token of the family is refused too");
  });
  await client.close();
});
