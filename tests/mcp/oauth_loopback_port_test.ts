/**
 * RFC 8252 section 7.3: a native client receives the authorization response on a loopback listener
 * whose port the operating system picks when it starts, so the authorization server must accept any
 * port on a registered loopback redirect URI. The MCP SDK keeps its registration between runs and
 * sends the host's redirect URL of the day: a host that listened on another port than the one it
 * registered with was stopped on the consent page ("not one this application registered").
 * Everything else of the URI (scheme, host, path, query) must still match, and the port the request
 * named is the one the code is bound to.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { consent } from "./_consent.ts";
import { HostProvider } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

/** Signs in through the consent page; returns a connected client. */
async function signIn(w: Awaited<ReturnType<typeof mcpWorld>>, provider: HostProvider): Promise<Client> {
  const mcpUrl = new URL(`${w.base}/mcp`);
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  const err = await new Client({ name: "host", version: "1" }).connect(first).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof UnauthorizedError, String(err));
  const back = await consent(w, provider.authorizationUrl!.href, "anonymous");
  assert.equal(back.origin + back.pathname, new URL(provider.redirectUrl).origin + "/callback");
  await first.finishAuth(back.searchParams.get("code")!);
  const client = new Client({ name: "host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return client;
}

Deno.test("MCP SDK OAuth client: a host listening on another loopback port than it registered with signs in (RFC 8252 7.3)", async (t) => {
  await using w = await mcpWorld({ realBase: true });
  const monday = new HostProvider("http://127.0.0.1:53682/callback", "Native host");
  const first = await signIn(w, monday);
  await first.close();

  await t.step("the next run, on port 60111, keeps its registration and signs in", async () => {
    // The same host another day: its registration kept, listening on another loopback port.
    const tuesday = new HostProvider("http://127.0.0.1:60111/callback", "Native host");
    tuesday.info = monday.info;
    const client = await signIn(w, tuesday);
    assert.equal(tuesday.info?.client_id, monday.info?.client_id, "no new registration");
    assert.ok((await client.listTools()).tools.length > 0);
    await client.close();
  });

  await t.step("another path, host or scheme on the loopback is still not the registered URI", async () => {
    for (
      const other of [
        "http://127.0.0.1:60111/other",
        "http://localhost:53682/callback",
        "https://127.0.0.1:53682/callback",
      ]
    ) {
      const url = new URL(`${w.base}/oauth2/authorize`);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: monday.info!.client_id,
        redirect_uri: other,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
      }).toString();
      const res = await w.app.request(url.href, { redirect: "manual" });
      assert.equal(res.status, 400, other);
      assert.equal(res.headers.get("location"), null);
      assert.match(await res.text(), /redirect_uri is not one this application registered/);
    }
  });
});
