/**
 * `NETWORK_API_URL` is the authorization server's issuer and may be a host of its own (one process
 * serves the three addresses). A strict client (oauth4webapi) follows the MCP endpoint's resource
 * metadata to that issuer and checks that the metadata it finds there names it (RFC 8414 section
 * 3.3); the root document on the network host named the storefront's origin instead, so discovery
 * stopped there.
 */
import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import { startServer } from "../../routes/server.ts";
import { consent } from "./_consent.ts";
import { mcpWorld } from "./_world.ts";

const REDIRECT = "http://127.0.0.1:53682/callback";

Deno.test("oauth4webapi: a pathless NETWORK_API_URL on its own host is discovered from /mcp and grants a token for it", async () => {
  const app: { fetch?: (req: Request) => Response | Promise<Response> } = {};
  // The network host: the same app on a second address.
  const network = startServer((req) => app.fetch!(req));
  try {
    await using w = await mcpWorld({ realBase: true, env: { NETWORK_API_URL: network.url } });
    app.fetch = (req) => w.app.fetch(req);
    const opts = { [oauth.allowInsecureRequests]: true };
    const mcp = new URL(`${w.base}/mcp`);
    const rs = await oauth.processResourceDiscoveryResponse(mcp, await oauth.resourceDiscoveryRequest(mcp, opts));
    assert.deepEqual(rs.authorization_servers, [network.url]);
    const issuer = new URL(network.url);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }),
    );
    assert.equal(new URL(as.issuer).href, issuer.href);

    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, {
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none",
      }, opts),
    );
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint!);
    for (
      const [k, v] of Object.entries({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        resource: mcp.href,
      })
    ) url.searchParams.set(k, v);
    const back = await consent(w, url.href, "anonymous");
    const params = oauth.validateAuthResponse(as, client, back, oauth.expectNoState);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, {
        ...opts,
        additionalParameters: { resource: mcp.href },
      }),
    );
    const mcpClient = await w.connect(`Bearer ${tokens.access_token}`);
    assert.ok((await mcpClient.listTools()).tools.length > 0);
  } finally {
    await network.shutdown();
  }
});
