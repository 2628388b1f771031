/**
 * OAuth 2.1 for MCP clients with a plain oauth4webapi client: discovery from the /mcp 401,
 * dynamic registration, authorization code + PKCE through the consent page (played over HTTP),
 * tokens bound to /mcp, refresh rotation; then tools/list and a paid tools/call with the SDK
 * client. Attack tests: code reuse, wrong verifier, wrong redirect_uri, wrong resource, refresh reuse.
 */
import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import { decodeJwt } from "jose";
import { REFRESH_REUSE_GRACE_S } from "../../core/identity/oauth.ts";
import { consent, openConsent } from "./_consent.ts";
import { mcpWorld } from "./_world.ts";

type World = Awaited<ReturnType<typeof mcpWorld>>;
const SF = "http://svc.test";
const ISSUER = "http://svc.test/network";
const MCP = "http://svc.test/mcp";
const REDIRECT = "http://127.0.0.1:53682/callback";

/** oauth4webapi against the in-process app (the storefront host is svc.test). */
function clientOf(w: World) {
  const opts = {
    [oauth.customFetch]: (url: string, init: RequestInit) => Promise.resolve(w.app.request(url, init)),
    [oauth.allowInsecureRequests]: true,
  };
  return opts;
}

/** Discovery the way an MCP client starts: the /mcp 401 names the resource metadata, which names the AS. */
async function discover(w: World) {
  const opts = clientOf(w);
  const res = await w.app.request(MCP, { method: "POST", headers: { "content-type": "application/json" } });
  assert.equal(res.status, 401);
  const challenge = res.headers.get("www-authenticate")!;
  assert.equal(challenge, `Bearer resource_metadata="${SF}/.well-known/oauth-protected-resource/mcp"`);
  await res.body?.cancel();
  const rs = await oauth.processResourceDiscoveryResponse(
    new URL(MCP),
    await oauth.resourceDiscoveryRequest(new URL(MCP), opts),
  );
  assert.deepEqual(rs.authorization_servers, [ISSUER]);
  const issuer = new URL(rs.authorization_servers![0]!);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }),
  );
  return { as, opts };
}

/** Registers a public client and runs the browser leg; returns what the token request needs. */
async function authorize(
  w: World,
  as: oauth.AuthorizationServer,
  opts: ReturnType<typeof clientOf>,
  choice: Parameters<typeof consent>[2] = "anonymous",
  extra: Record<string, string> = {},
) {
  const reg = await oauth.dynamicClientRegistrationRequest(as, {
    redirect_uris: [REDIRECT],
    client_name: "Test <b>client</b>",
    token_endpoint_auth_method: "none",
  }, opts);
  const client = await oauth.processDynamicClientRegistrationResponse(reg);
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  for (
    const [k, v] of Object.entries({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      resource: MCP,
      ...extra,
    })
  ) url.searchParams.set(k, v);
  const back = await consent(w, url.href, choice);
  const params = oauth.validateAuthResponse(as, client, back, state);
  return { client, verifier, params, back };
}

const codeGrant = (
  as: oauth.AuthorizationServer,
  opts: ReturnType<typeof clientOf>,
  a: Awaited<ReturnType<typeof authorize>>,
  over: { verifier?: string; redirect?: string; resource?: string } = {},
) =>
  oauth.authorizationCodeGrantRequest(
    as,
    a.client,
    oauth.None(),
    a.params,
    over.redirect ?? REDIRECT,
    over.verifier ?? a.verifier,
    { ...opts, additionalParameters: { resource: over.resource ?? MCP } },
  );

/** The RFC 6749 error of a failed token response. */
const oauthError = async (res: Response) => ({ status: res.status, ...(await res.json()) });

Deno.test("oauth4webapi: discovery, registration, consent (anonymous), code + PKCE, /mcp tools and a paid call, refresh", async (t) => {
  await using w = await mcpWorld();
  const { as, opts } = await discover(w);
  await t.step("the metadata names the code flow endpoints and S256", () => {
    assert.equal(as.issuer, ISSUER);
    assert.equal(as.authorization_endpoint, `${SF}/oauth2/authorize`);
    assert.equal(as.registration_endpoint, `${SF}/oauth2/register`);
    assert.deepEqual(as.code_challenge_methods_supported, ["S256"]);
    assert.deepEqual(as.token_endpoint_auth_methods_supported, ["none"]);
    assert.ok(as.grant_types_supported?.includes("authorization_code"));
    assert.ok(as.grant_types_supported?.includes("refresh_token"));
    assert.ok(as.grant_types_supported?.includes("urn:ietf:params:oauth:grant-type:jwt-bearer"));
  });

  const a = await authorize(w, as, opts);
  const tokens = await oauth.processAuthorizationCodeResponse(as, a.client, await codeGrant(as, opts, a));
  const claims = decodeJwt(tokens.access_token);
  await t.step("the access token is bound to /mcp and names the client", () => {
    assert.equal(claims.aud, MCP);
    assert.equal(claims.client_id, a.client.client_id);
    assert.equal(claims.iss, ISSUER);
    assert.equal(typeof tokens.refresh_token, "string");
    assert.equal(tokens.expires_in, 300);
  });

  await t.step("the /mcp token lists tools and, with credit bought for that agent, pays a call", async () => {
    const client = await w.connect(`Bearer ${tokens.access_token}`);
    const tools = (await client.listTools()).tools.map((x: { name: string }) => x.name);
    assert.deepEqual(tools, ["search_articles", "ask", "list_data_models", "list_ai_models", "balance"]);
    // The credit is bought for the same agent identity with a storefront token, as the other MCP tests do.
    const cred = (await w.deps.storefront.accounts.credential(String(claims.sub)))!;
    const storefrontToken = (await w.deps.storefront.tokens.mintAccessToken(cred)).accessToken;
    await w.buyCredit(storefrontToken, "0.100000");
    const r = await client.callTool({
      name: "search_articles",
      arguments: { data_model_id: w.ids.dataModelId, query: "council budget" },
    });
    assert.equal(r.isError, undefined, JSON.stringify(r.content));
    assert.equal(await w.remainingUsd(storefrontToken), "0.090000");
  });

  await t.step("a token bound to /mcp is refused by the storefront's own routes (RFC 8707 audience)", async () => {
    const res = await w.app.request(`${SF}/agent/entitlements`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).reason, "unrecognized_agent_credential");
  });

  await t.step("refresh rotates; the old refresh token reused revokes the family", async () => {
    const next = await oauth.processRefreshTokenResponse(
      as,
      a.client,
      await oauth.refreshTokenGrantRequest(as, a.client, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.notEqual(next.refresh_token, tokens.refresh_token);
    assert.equal(decodeJwt(next.access_token).aud, MCP);
    // Within the grace a client's own parallel refresh gets the same successor (oauth_refresh_race_test.ts);
    // after it, the old token is a replay.
    const parallel = await oauth.processRefreshTokenResponse(
      as,
      a.client,
      await oauth.refreshTokenGrantRequest(as, a.client, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.equal(parallel.refresh_token, next.refresh_token);
    w.clock.advance(REFRESH_REUSE_GRACE_S * 1000);
    const reused = await oauthError(
      await oauth.refreshTokenGrantRequest(as, a.client, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.equal(reused.status, 400);
    assert.equal(reused.error, "invalid_grant");
    // The family is gone: the newest token, never reused, is refused too.
    const after = await oauthError(
      await oauth.refreshTokenGrantRequest(as, a.client, oauth.None(), next.refresh_token!, opts),
    );
    assert.equal(after.error, "invalid_grant");
  });
});

Deno.test("oauth4webapi: a claimed identity proven by the e-mailed code; the human's plans carry over", async () => {
  await using w = await mcpWorld({ env: { MAIL_OUTBOX: "true" } });
  const { as, opts } = await discover(w);
  const first = await authorize(w, as, opts, { email: "ada@example.com" });
  const t1 = await oauth.processAuthorizationCodeResponse(as, first.client, await codeGrant(as, opts, first));
  const c1 = (await w.deps.storefront.accounts.credential(String(decodeJwt(t1.access_token).sub)))!;
  assert.equal(c1.state, "claimed");
  const account = (await w.deps.storefront.accounts.account(c1.accountId!))!;
  assert.equal(account.email, "ada@example.com");
  // Credit bought by the first agent of this human...
  const storefrontToken = (await w.deps.storefront.tokens.mintAccessToken(c1)).accessToken;
  await w.buyCredit(storefrontToken, "0.100000");
  // ... pays the calls of a second application the same human connects (a second later: the
  // outbox orders mails by send time).
  w.clock.advance(1000);
  const second = await authorize(w, as, opts, { email: "ada@example.com" });
  const t2 = await oauth.processAuthorizationCodeResponse(as, second.client, await codeGrant(as, opts, second));
  const c2 = (await w.deps.storefront.accounts.credential(String(decodeJwt(t2.access_token).sub)))!;
  assert.notEqual(c2.credentialId, c1.credentialId);
  assert.equal(c2.accountId, c1.accountId);
  const client = await w.connect(`Bearer ${t2.access_token}`);
  const r = await client.callTool({
    name: "search_articles",
    arguments: { data_model_id: w.ids.dataModelId, query: "council budget" },
  });
  assert.equal(r.isError, undefined, JSON.stringify(r.content));
  assert.equal(await w.remainingUsd(storefrontToken), "0.090000");
});

Deno.test("oauth4webapi: a grant for resource=storefront gives a token the purchase and entitlement routes accept", async () => {
  await using w = await mcpWorld();
  const { as, opts } = await discover(w);
  const a = await authorize(w, as, opts, "anonymous", { resource: SF });
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    a.client,
    await codeGrant(as, opts, a, { resource: SF }),
  );
  assert.equal(decodeJwt(tokens.access_token).aud, SF);
  // The same agent identity buys credit with this token ...
  await w.buyCredit(tokens.access_token, "0.100000");
  assert.equal(await w.remainingUsd(tokens.access_token), "0.100000");
  // ... and /mcp accepts it too (storefront tokens always worked there).
  const client = await w.connect(`Bearer ${tokens.access_token}`);
  const r = await client.callTool({
    name: "search_articles",
    arguments: { data_model_id: w.ids.dataModelId, query: "council budget" },
  });
  assert.equal(r.isError, undefined, JSON.stringify(r.content));
  assert.equal(await w.remainingUsd(tokens.access_token), "0.090000");
});

Deno.test("OAuth attacks: code reuse, wrong verifier, wrong redirect_uri, wrong resource, expired code", async (t) => {
  // Many flows from one address: the per-address limit has its own test below.
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  const { as, opts } = await discover(w);

  await t.step("a code used twice fails and revokes the tokens of its first use", async () => {
    const a = await authorize(w, as, opts);
    const tokens = await oauth.processAuthorizationCodeResponse(as, a.client, await codeGrant(as, opts, a));
    const again = await oauthError(await codeGrant(as, opts, a));
    assert.deepEqual([again.status, again.error], [400, "invalid_grant"]);
    const refreshed = await oauthError(
      await oauth.refreshTokenGrantRequest(as, a.client, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.equal(refreshed.error, "invalid_grant");
  });

  await t.step("a wrong code_verifier is invalid_grant", async () => {
    const a = await authorize(w, as, opts);
    const wrong = await oauthError(await codeGrant(as, opts, a, { verifier: oauth.generateRandomCodeVerifier() }));
    assert.deepEqual([wrong.status, wrong.error], [400, "invalid_grant"]);
    assert.equal(wrong.error_description, "The code_verifier does not match");
    // Not consumed by a failed attempt, but the real client still holds it alone: PKCE is the proof.
    const right = await codeGrant(as, opts, a);
    assert.equal(right.status, 200);
    await right.body?.cancel();
  });

  await t.step("a redirect_uri other than the request's is invalid_grant at the token endpoint", async () => {
    const a = await authorize(w, as, opts);
    const wrong = await oauthError(await codeGrant(as, opts, a, { redirect: "http://127.0.0.1:53682/other" }));
    assert.deepEqual([wrong.status, wrong.error], [400, "invalid_grant"]);
  });

  await t.step("an unregistered redirect_uri never leaves our page (no open redirect)", async () => {
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: reg.client_id,
      redirect_uri: "https://evil.example/steal",
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
      state: "s",
    }).toString();
    const res = await w.app.request(url.href, { redirect: "manual" });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(await res.text(), /redirect_uri is not one this application registered/);
  });

  await t.step("a resource other than /mcp or the storefront is invalid_target, sent back with the state", async () => {
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: reg.client_id,
      redirect_uri: REDIRECT,
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
      state: "st-1",
      resource: "https://evil.example/mcp",
    }).toString();
    const res = await w.app.request(url.href, { redirect: "manual" });
    assert.equal(res.status, 303);
    const back = new URL(res.headers.get("location")!);
    assert.equal(back.origin + back.pathname, REDIRECT);
    assert.equal(back.searchParams.get("error"), "invalid_target");
    assert.equal(back.searchParams.get("state"), "st-1");
  });

  await t.step("a token request naming another resource than the code's is invalid_target", async () => {
    const a = await authorize(w, as, opts);
    const wrong = await oauthError(await codeGrant(as, opts, a, { resource: SF }));
    assert.deepEqual([wrong.status, wrong.error], [400, "invalid_target"]);
  });

  await t.step("plain PKCE and a missing challenge are refused", async () => {
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    for (const method of ["plain", ""]) {
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: reg.client_id,
        redirect_uri: REDIRECT,
        code_challenge: "a".repeat(43),
        ...(method ? { code_challenge_method: method } : {}),
        state: "x",
      }).toString();
      const res = await w.app.request(url.href, { redirect: "manual" });
      assert.equal(new URL(res.headers.get("location")!).searchParams.get("error"), "invalid_request");
    }
  });

  await t.step("a code older than 60 s is invalid_grant", async () => {
    const a = await authorize(w, as, opts);
    w.clock.advance(61_000);
    const late = await oauthError(await codeGrant(as, opts, a));
    assert.deepEqual([late.status, late.error], [400, "invalid_grant"]);
  });

  await t.step("another client cannot redeem the code, nor refresh another client's token", async () => {
    const a = await authorize(w, as, opts);
    const other = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    const stolen = await oauthError(
      await oauth.authorizationCodeGrantRequest(as, other, oauth.None(), a.params, REDIRECT, a.verifier, {
        ...opts,
        additionalParameters: { resource: MCP },
      }),
    );
    assert.equal(stolen.error, "invalid_grant");
    const tokens = await oauth.processAuthorizationCodeResponse(as, a.client, await codeGrant(as, opts, a));
    const foreign = await oauthError(
      await oauth.refreshTokenGrantRequest(as, other, oauth.None(), tokens.refresh_token!, opts),
    );
    assert.equal(foreign.error, "invalid_grant");
  });

  await t.step("deny sends access_denied with the state; the form cannot be replayed", async () => {
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: reg.client_id,
      redirect_uri: REDIRECT,
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
      state: "deny-state",
    }).toString();
    const page = await openConsent(w, url.href);
    const denied = await page.post({ action: "deny" });
    assert.equal(denied.status, 303);
    const back = new URL(denied.headers.get("location")!);
    assert.equal(back.searchParams.get("error"), "access_denied");
    assert.equal(back.searchParams.get("state"), "deny-state");
    const replay = await page.post({ action: "anonymous" });
    assert.equal(replay.status, 400);
    await replay.body?.cancel();
  });

  await t.step("the consent form refuses a missing CSRF cookie and a foreign Origin", async () => {
    const a = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, opts),
    );
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: a.client_id,
      redirect_uri: REDIRECT,
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
    }).toString();
    const page = await openConsent(w, url.href);
    assert.equal(page.status, 200);
    // The page refuses framing.
    const headers = (await w.app.request(url.href)).headers;
    assert.equal(headers.get("x-frame-options"), "DENY");
    assert.match(headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    // Its form may lead to the client's redirect URI (Chromium checks the redirect against form-action), nowhere else.
    assert.match(
      headers.get("content-security-policy") ?? "",
      /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; base-uri 'none'; form-action 'self' http:\/\/127\.0\.0\.1:53682; frame-ancestors 'none'$/,
    );
    assert.equal(headers.get("referrer-policy"), "same-origin");
    // A page that cannot go on has no form to send anywhere but here.
    const refused = await w.app.request(`${SF}/oauth2/authorize?response_type=code&client_id=nobody`);
    assert.equal(refused.status, 400);
    assert.match(refused.headers.get("content-security-policy") ?? "", /; form-action 'self'; frame-ancestors 'none'$/);
    assert.equal(refused.headers.get("x-frame-options"), "DENY");
    const post = (h: Record<string, string>) =>
      w.app.request(`${SF}/oauth2/authorize`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...h },
        body: new URLSearchParams({ csrf: page.csrf, request: page.request, action: "anonymous" }).toString(),
      });
    assert.equal((await post({})).status, 403);
    assert.equal((await post({ cookie: page.cookie, origin: "https://evil.example" })).status, 403);
  });

  await t.step("registration refuses non-loopback http, fragments and script URIs", async () => {
    for (const uri of ["http://evil.example/cb", "https://a.example/cb#x", "javascript:alert(1)", "data:text/html,x"]) {
      const res = await w.app.request(`${SF}/oauth2/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: [uri] }),
      });
      const body = await oauthError(res);
      assert.deepEqual([body.status, body.error], [400, "invalid_redirect_uri"], uri);
      assert.ok(!body.error_description.includes(uri), "the URI is not echoed");
    }
  });
});

Deno.test("registration, the consent page and the code grants are rate-limited per client address", async () => {
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "3" } });
  const register = () =>
    w.app.request(`${SF}/oauth2/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT] }),
    });
  for (let i = 0; i < 3; i++) assert.equal((await register()).status, 201);
  const limited = await register();
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get("retry-after")) > 0);
  assert.equal((await limited.json()).error, "rate_limit_exceeded");
  const grant = () =>
    w.app.request(`${SF}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=refresh_token&client_id=x&refresh_token=y",
    });
  for (let i = 0; i < 3; i++) assert.equal((await grant()).status, 401);
  assert.equal((await grant()).status, 429);
});

Deno.test("OAuth attacks: a malformed request of a client registered with an https redirect URI is not redirected unasked (RFC 9700 4.11.2)", async () => {
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  // Registration is open: anyone can register a phishing page as a redirect URI.
  const reg = await w.app.request(`${SF}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: ["https://phish.example/cb"], client_name: "Phish" }),
  });
  assert.equal(reg.status, 201);
  const { client_id } = await reg.json();
  // A link on our origin, malformed on purpose so that no human step comes before the answer.
  const url = `${SF}/oauth2/authorize?${new URLSearchParams({ response_type: "token", client_id, state: "s-1" })}`;
  const res = await w.app.request(url, { redirect: "manual" });
  const html = await res.text();
  assert.equal(res.status, 400);
  assert.equal(res.headers.get("location"), null);
  assert.match(res.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  // The human may still go back, by a link that says where it goes.
  const link = /<a id="return" href="([^"]+)">Return to phish\.example<\/a>/.exec(html);
  assert.ok(link, html);
  const back = new URL(link[1]!.replaceAll("&amp;", "&"));
  assert.equal(back.origin + back.pathname, "https://phish.example/cb");
  assert.equal(back.searchParams.get("error"), "unsupported_response_type");
  assert.equal(back.searchParams.get("state"), "s-1");
});

Deno.test("consent page: an app-scheme redirect URI is named by its scheme, not by the host it carries", async () => {
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  const redirectUri = "com.example.app://claude.ai/callback";
  const reg = await w.app.request(`${SF}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: [redirectUri], client_name: "Claude" }),
  });
  assert.equal(reg.status, 201);
  const { client_id } = await reg.json();
  const url = `${SF}/oauth2/authorize?${new URLSearchParams({
    response_type: "code",
    client_id,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: "S256",
    state: "s",
  })}`;
  const page = await openConsent(w, url);
  assert.equal(page.status, 200);
  // The browser hands the code to whichever app owns the scheme; claude.ai is not where it goes.
  assert.match(page.html, /sent back to <b>com\.example\.app:<\/b>/);
  assert.doesNotMatch(page.html, /sent back to <b>claude\.ai<\/b>/);
});

Deno.test("consent page: a client name's bidi overrides and invisible characters are dropped at registration, so the name cannot reorder the page", async () => {
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  // U+202E shows the rest of the heading right to left; U+200B and U+2066 are invisible.
  const reg = await w.app.request(`${SF}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "Cla\u200Bude\n(claude.ai)\u2066\u202E" }),
  });
  assert.equal(reg.status, 201);
  const { client_id, client_name } = await reg.json();
  assert.equal(client_name, "Claude (claude.ai)");
  const url = `${SF}/oauth2/authorize?${new URLSearchParams({
    response_type: "code",
    client_id,
    redirect_uri: REDIRECT,
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: "S256",
    state: "s",
  })}`;
  const page = await openConsent(w, url);
  assert.equal(page.status, 200);
  assert.match(page.html, /<h1>Claude \(claude\.ai\) wants to act as your agent at /);
  assert.doesNotMatch(page.html, /[\u200B\u202A-\u202E\u2066-\u2069]/);
});

Deno.test("dynamic registration: a client name made only of invisible characters is no name", async () => {
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  const reg = await w.app.request(`${SF}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "\u202E\u200B " }),
  });
  assert.equal(reg.status, 201);
  assert.equal((await reg.json()).client_name, undefined);
});
