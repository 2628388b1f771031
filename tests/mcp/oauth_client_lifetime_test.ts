/**
 * A dynamically registered MCP client keeps its `client_id` for as long as it signs in: the MCP SDK
 * stores it with its tokens and refreshes whenever a call meets a 401. Registrations lived 30 days
 * from registration while a refresh token lives 90, so a host in daily use, with a claimed identity
 * and a live refresh family, was refused at day 30 (`invalid_client`) and sent its human back to the
 * consent page. A registration now lives 30 days from its last grant; an unused one still expires.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { OAuthClients } from "../../core/identity/oauth_clients.ts";
import { consent } from "./_consent.ts";
import { HostProvider } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

const DAY_MS = 86_400_000;

Deno.test("MCP SDK OAuth client: a host signing in daily keeps its registration past 30 days; an idle registration still expires", async (t) => {
  await using w = await mcpWorld({ realBase: true, env: { MAIL_OUTBOX: "true" } });
  const provider = new HostProvider("http://127.0.0.1:53682/callback", "Daily host");
  const mcpUrl = new URL(`${w.base}/mcp`);
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await new Client({ name: "host", version: "1" }).connect(first).catch(() => {});
  const back = await consent(w, provider.authorizationUrl!.href, { email: "daily@example.com" });
  await first.finishAuth(back.searchParams.get("code")!);
  const client = new Client({ name: "host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  const clientId = provider.info!.client_id;

  await t.step("60 days of daily calls (each after a refresh) never ask the human again", async () => {
    for (let day = 1; day <= 60; day++) {
      w.clock.advance(DAY_MS);
      const outcome = await client.listTools().then(() => "ok", (e: unknown) => String(e));
      assert.equal(outcome, "ok", `day ${day}`);
    }
    assert.equal(provider.consentsAsked, 1);
    assert.equal(provider.info?.client_id, clientId, "the same registration");
  });

  await t.step("a registration with no grant for 30 days is gone", async () => {
    w.clock.advance(OAuthClients.CLIENT_TTL_S * 1000);
    assert.equal(await w.deps.storefront.oauth.clients.get(clientId), null);
  });
  await client.close();
});
