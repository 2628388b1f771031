/**
 * Client ID metadata documents (the MCP authorization spec's preferred way in): the client_id is an
 * https URL serving the client's metadata, here over TLS on 127.0.0.1 (reached through the SSRF
 * guard with the test allowance). The MCP SDK's provider with `clientMetadataUrl` uses it instead
 * of registering; oauth4webapi runs the grant with it; a document that does not name itself, or
 * names other redirect URIs, gets nowhere.
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
import * as oauth from "oauth4webapi";
import { loopbackFetcher, serveTls } from "../_tls.ts";
import { consent, openConsent } from "./_consent.ts";
import { mcpWorld } from "./_world.ts";

const APP_HOST = "app.example.test";
const REDIRECT = "http://127.0.0.1:53682/callback";

/** The client's metadata documents: a good one, one that names another client_id, one with other redirect URIs. */
async function documents() {
  const fetched: string[] = [];
  const server = await serveTls(APP_HOST, (req) => {
    const path = new URL(req.url).pathname;
    fetched.push(path);
    const self = `${origin}${path}`;
    const docs: Record<string, unknown> = {
      "/client.json": { client_id: self, client_name: "Doc client", redirect_uris: [REDIRECT] },
      "/copied.json": { client_id: `${origin}/client.json`, redirect_uris: [REDIRECT] },
      "/elsewhere.json": { client_id: self, redirect_uris: ["https://evil.example/cb"] },
    };
    return docs[path]
      ? Response.json(docs[path])
      : new Response("not found", { status: 404, headers: { "content-type": "text/plain" } });
  });
  const origin = server.origin;
  return { ...server, fetched };
}

class DocumentProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  constructor(readonly clientMetadataUrl: string, readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return { redirect_uris: [this.redirectUrl], client_name: "Doc client", token_endpoint_auth_method: "none" };
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

Deno.test("client ID metadata documents: the MCP SDK signs in without registering; oauth4webapi too; bad documents get nowhere", async (t) => {
  await using docs = await documents();
  await using w = await mcpWorld({ realBase: true, overrides: { safeFetch: loopbackFetcher(docs.cert) } });
  const clientId = `${docs.origin}/client.json`;
  const mcpUrl = new URL(`${w.base}/mcp`);

  await t.step("the MCP SDK uses the document as its client_id and reaches tools/list", async () => {
    const provider = new DocumentProvider(clientId, REDIRECT);
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    const err = await new Client({ name: "cimd", version: "1" }).connect(transport).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof UnauthorizedError, String(err));
    assert.equal(provider.info?.client_id, clientId, "no registration: the URL is the client_id");
    const page = await openConsent(w, provider.authorizationUrl!.href);
    assert.match(page.html, new RegExp(`Doc client \\(${APP_HOST}:\\d+\\) wants to act as your agent`));
    const back = await consent(w, provider.authorizationUrl!.href, "anonymous");
    await transport.finishAuth(back.searchParams.get("code")!);
    assert.equal(decodeJwt(provider.saved!.access_token).client_id, clientId);
    const client = new Client({ name: "cimd", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const tools = (await client.listTools()).tools.map((x: { name: string }) => x.name);
    assert.ok(tools.includes("search_articles"));
    await client.close();
  });

  await t.step("oauth4webapi: code grant and refresh with the document's client_id", async () => {
    const opts = {
      [oauth.customFetch]: (url: string, init: RequestInit) => Promise.resolve(w.app.request(url, init)),
      [oauth.allowInsecureRequests]: true,
    };
    const issuer = new URL(w.deps.config.networkApiUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }),
    );
    assert.equal(as.client_id_metadata_document_supported, true);
    const client = { client_id: clientId, token_endpoint_auth_method: "none" };
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: "s1",
    }).toString();
    const params = oauth.validateAuthResponse(as, client, await consent(w, url.href, "anonymous"), "s1");
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, opts),
    );
    assert.equal(decodeJwt(tokens.access_token).aud, mcpUrl.href);
    const next = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.ok(next.access_token);
  });

  await t.step("a document naming another client_id, or other redirect URIs, is not a client", async () => {
    for (const path of ["/copied.json", "/elsewhere.json", "/missing.json"]) {
      const url = new URL(`${w.base}/oauth2/authorize`);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: `${docs.origin}${path}`,
        redirect_uri: REDIRECT,
        code_challenge: "a".repeat(43),
        code_challenge_method: "S256",
      }).toString();
      const res = await w.app.request(url.href, { redirect: "manual" });
      assert.equal(res.status, 400, path);
      assert.equal(res.headers.get("location"), null);
      await res.body?.cancel();
    }
    // Documents are cached: the good one was read once for the whole flow of each client.
    assert.equal(docs.fetched.filter((p) => p === "/client.json").length, 1);
  });
});

Deno.test("client ID metadata documents on a private address are not fetched without the test allowance", async () => {
  await using docs = await documents();
  await using w = await mcpWorld({ overrides: { safeFetch: loopbackFetcher(docs.cert, false) } });
  const url = new URL(`${w.base}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: `${docs.origin}/client.json`,
    redirect_uri: REDIRECT,
    code_challenge: "a".repeat(43),
    code_challenge_method: "S256",
  }).toString();
  const res = await w.app.request(url.href);
  assert.equal(res.status, 400);
  await res.body?.cancel();
  assert.deepEqual(docs.fetched, []);
});
