/**
 * The MCP SDK's OAuth client refreshes once per request that met a 401: an MCP host that sends
 * calls in parallel when its access token (five minutes) expires refreshes with the same refresh
 * token several times at once. Refresh tokens rotate, and a rotated one presented again revokes its
 * family; without a grace, the host lost its sign-in (and sent the human back to the consent page)
 * every time its parallel calls met an expiry. A rotated token presented again within
 * `REFRESH_REUSE_GRACE_S` gets the same successor; after it, a replay still revokes the family.
 *
 * The host's network here decides the order in which the SDK meets its answers, so each test runs the
 * same on a loaded machine. The SDK's transport keeps one "authenticated, then 401 again" guard for
 * all the calls it has in flight: a call whose 401 comes back after a sibling call's refresh landed
 * (and before any answer of the new token) is failed at once, "Server returned 401 after successful
 * authentication", not retried. The full suite, its files sharing one isolate on two loaded cores,
 * once met that order in the first test; the second test holds it on purpose: the SDK loses that
 * call, the host keeps its sign-in.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REFRESH_REUSE_GRACE_S } from "../../core/identity/oauth.ts";
import { HostProvider, refreshGrant, signInAnonymously } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

type FetchArgs = Parameters<typeof fetch>;

/** The refresh token a request to the token endpoint presents, or undefined for any other request. */
function refreshOf([input, init]: FetchArgs): string | undefined {
  const url = new URL(input instanceof Request ? input.url : input);
  if (url.pathname !== "/oauth2/token") return undefined;
  const grant = new URLSearchParams(String(init?.body ?? ""));
  return grant.get("grant_type") === "refresh_token" ? grant.get("refresh_token") ?? "" : undefined;
}

/**
 * A host network on which the first `count` refresh grants are sent at once but answered only once
 * all of them are under way. The SDK sends a call's refresh after the call met its 401, so every
 * call has met its 401 before any refresh lands. `presented` lists the refresh tokens sent.
 */
function refreshesAnsweredTogether(count: number) {
  const presented: string[] = [];
  const underWay = Promise.withResolvers<void>();
  // A bound, so a host that refreshes fewer times fails the assertions on `presented` instead of hanging.
  const bound = setTimeout(underWay.resolve, 10_000);
  const release = () => {
    clearTimeout(bound);
    underWay.resolve();
  };
  const network: typeof fetch = async (...args: FetchArgs) => {
    const token = refreshOf(args);
    if (token === undefined) return await fetch(...args);
    presented.push(token);
    if (presented.length === count) release();
    const answer = await fetch(...args);
    await underWay.promise;
    return answer;
  };
  return { fetch: network, presented, [Symbol.dispose]: release };
}

Deno.test("MCP SDK OAuth client: parallel calls at token expiry all refresh and the host stays signed in; a replay after the grace still revokes", async (t) => {
  await using w = await mcpWorld({ realBase: true });
  using network = refreshesAnsweredTogether(3);
  const provider = new HostProvider("http://127.0.0.1:53682/callback");
  const mcpUrl = new URL(`${w.base}/mcp`);
  await signInAnonymously(w, provider);
  const client = new Client({ name: "host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: network.fetch }));
  assert.equal(provider.consentsAsked, 1);
  const ttlMs = w.deps.config.storefront.accessTokenTtlS * 1000;
  const signedIn = provider.saved!.refresh_token!;

  await t.step("three calls sent at once after the access token expired all succeed", async () => {
    w.clock.advance(ttlMs + 1000);
    const results = await Promise.allSettled([client.listTools(), client.listTools(), client.listTools()]);
    assert.deepEqual(results.map((r) => r.status === "fulfilled" ? "ok" : String(r.reason)), ["ok", "ok", "ok"]);
    assert.deepEqual(network.presented, [signedIn, signedIn, signedIn], "one refresh token, presented by each call");
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

Deno.test("MCP SDK OAuth client: a parallel call whose 401 comes back after a sibling's refresh landed may be lost, never the host's sign-in", async () => {
  await using w = await mcpWorld({ realBase: true });
  const provider = new HostProvider("http://127.0.0.1:53682/callback");
  await signInAnonymously(w, provider);
  const signedIn = provider.saved!.refresh_token!;
  // The third 401 reaches the SDK only once the first refresh has landed (the host saved its tokens).
  const landed = Promise.withResolvers<void>();
  const save = provider.saveTokens.bind(provider);
  provider.saveTokens = (tokens) => {
    save(tokens);
    landed.resolve();
  };
  let unauthorized = 0;
  const network: typeof fetch = async (...args: FetchArgs) => {
    const answer = await fetch(...args);
    if (answer.status === 401 && ++unauthorized === 3) await landed.promise;
    return answer;
  };
  const client = new Client({ name: "host", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${w.base}/mcp`), { authProvider: provider, fetch: network }),
  );
  const ttlMs = w.deps.config.storefront.accessTokenTtlS * 1000;

  w.clock.advance(ttlMs + 1000);
  const results = await Promise.allSettled([client.listTools(), client.listTools(), client.listTools()]);
  assert.ok(results.filter((r) => r.status === "fulfilled").length >= 2, "the calls whose 401 came first are answered");
  assert.equal(unauthorized, 3, "the three calls met the expiry");
  assert.equal(provider.consentsAsked, 1, "the human was not asked again");
  assert.notEqual(provider.saved?.refresh_token, signedIn, "the refresh token rotated");
  // The host's next call, and its next refresh, need no human.
  assert.ok((await client.listTools()).tools.length > 0);
  w.clock.advance(ttlMs + 1000);
  assert.ok((await client.listTools()).tools.length > 0);
  assert.equal(provider.consentsAsked, 1);
  await client.close();
});
