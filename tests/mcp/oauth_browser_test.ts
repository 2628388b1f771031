/**
 * The MCP SDK's own OAuth client (`StreamableHTTPClientTransport` with an `authProvider`, which
 * runs `auth()` from `@modelcontextprotocol/sdk/client/auth.js`) against a real server, with
 * headless Chromium playing the human on the consent page: discovery from the 401, dynamic
 * registration, PKCE, the e-mailed code of a claimed identity, the code back to a local redirect
 * URI, then tools/list and a paid tools/call. The page also calls /mcp from another origin, as a
 * browser-hosted client would (CORS).
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { decodeJwt } from "jose";
import { openBrowser, serveLocal } from "../_browser.ts";
import { latestMailCode } from "./_consent.ts";
import { mcpWorld } from "./_world.ts";

/** An in-memory OAuthClientProvider: what an MCP host keeps between runs, and where it sends the human. */
class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      redirect_uris: [this.redirectUrl],
      client_name: "SDK test host",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

Deno.test({
  name: "MCP SDK OAuth provider + Chromium consent: claimed identity by e-mailed code, tools/list and a paid call",
  // puppeteer keeps its own timers and pipes until the browser exits.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using w = await mcpWorld({ env: { MAIL_OUTBOX: "true" }, realBase: true });
    // The MCP host's redirect URI: a local page that receives the code.
    await using callback = serveLocal();
    const codes: string[] = [];
    callback.setHandler((req) => {
      const url = new URL(req.url);
      const code = url.searchParams.get("code");
      if (code) codes.push(code);
      return new Response(`<!doctype html><title>done</title><p id="done">${code ? "connected" : "no code"}</p>`, {
        headers: { "content-type": "text/html" },
      });
    });
    const provider = new MemoryProvider(`${callback.url}/callback`);
    const mcpUrl = new URL(`${w.base}/mcp`);

    await t.step("the first connect discovers, registers and asks for the human", async () => {
      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      const client = new Client({ name: "sdk-oauth-test", version: "1.0.0" });
      const err = await client.connect(transport).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof UnauthorizedError, String(err));
      assert.ok(provider.info?.client_id, "dynamically registered");
      const url = provider.authorizationUrl!;
      assert.equal(url.origin + url.pathname, `${w.base}/oauth2/authorize`);
      assert.equal(url.searchParams.get("code_challenge_method"), "S256");
      assert.equal(url.searchParams.get("resource"), mcpUrl.href);
      await transport.close();
    });

    await using b = await openBrowser("mcp oauth consent");
    await t.step("the human chooses a claimed identity and enters the e-mailed code", async () => {
      const res = await b.page.goto(provider.authorizationUrl!.href);
      assert.equal(res?.status(), 200);
      await b.shot("consent");
      assert.match(await b.page.$eval("h1", (e) => e.textContent ?? ""), /SDK test host wants to act as your agent/);
      await b.page.type("#email", "lin@example.com");
      await Promise.all([b.page.waitForNavigation(), b.page.click("#claim button")]);
      await b.shot("code form");
      await b.page.type("#mail-code", await latestMailCode(w, "lin@example.com"));
      await Promise.all([b.page.waitForNavigation(), b.page.click("#verify button")]);
      await b.shot("back at the host");
      assert.equal(new URL(b.page.url()).origin, callback.url);
      assert.equal(await b.page.$eval("#done", (e) => e.textContent), "connected");
      assert.equal(codes.length, 1);
    });

    let token = "";
    await t.step("finishAuth trades the code; tools/list and a paid tools/call work", async () => {
      const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await first.finishAuth(codes[0]!);
      token = provider.saved!.access_token;
      assert.equal(decodeJwt(token).aud, mcpUrl.href);
      assert.ok(provider.saved!.refresh_token);
      const client = new Client({ name: "sdk-oauth-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
      const tools = (await client.listTools()).tools.map((x: { name: string }) => x.name);
      assert.ok(tools.includes("search_articles") && tools.includes("ask"), tools.join());
      // Credit for this agent identity, bought the way the other MCP tests buy it.
      const cred = (await w.deps.storefront.accounts.credential(String(decodeJwt(token).sub)))!;
      assert.equal(cred.state, "claimed");
      const storefrontToken = (await w.deps.storefront.tokens.mintAccessToken(cred)).accessToken;
      await w.buyCredit(storefrontToken, "0.100000");
      const paid = await client.callTool({
        name: "search_articles",
        arguments: { data_model_id: w.ids.dataModelId, query: "council budget" },
      });
      assert.equal(paid.isError, undefined, JSON.stringify(paid.content));
      assert.equal(await w.remainingUsd(storefrontToken), "0.090000");
      await client.close();
    });

    await t.step("a page on another origin calls /mcp with the token (CORS, no credentials)", async () => {
      const out = await b.page.evaluate(
        async (mcp: string, bearer: string) => {
          const post = (auth?: string) =>
            fetch(mcp, {
              method: "POST",
              headers: {
                "content-type": "application/json",
                accept: "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25",
                ...(auth ? { authorization: auth } : {}),
              },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
            });
          const denied = await post();
          const ok = await post(`Bearer ${bearer}`);
          return {
            deniedStatus: denied.status,
            challenge: denied.headers.get("www-authenticate"),
            okStatus: ok.status,
            tools: ((await ok.json()).result?.tools ?? []).length,
          };
        },
        mcpUrl.href,
        token,
      );
      assert.equal(out.deniedStatus, 401);
      assert.match(out.challenge ?? "", /resource_metadata=".*\/\.well-known\/oauth-protected-resource\/mcp"/);
      assert.equal(out.okStatus, 200);
      assert.ok(out.tools >= 4);
    });
  },
});
