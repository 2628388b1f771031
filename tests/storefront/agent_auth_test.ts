import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AppEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";
import { agentAuth } from "../../routes/storefront/agent_auth.ts";
import { json, SF, storefrontWorld } from "./_world.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CHALLENGE = `Bearer resource_metadata="${SF}/.well-known/oauth-protected-resource"`;

/** A small protected route (the real ones are purchase, extend and entitlements). */
async function protectedWorld(env: Record<string, string> = {}) {
  const w = await storefrontWorld({ env });
  const app = new Hono<AppEnv>();
  app.onError(createErrorHandler(w.log, "storefront"));
  app.use("/protected", agentAuth(w.deps));
  app.get("/protected", (c) => {
    const a = c.get("agent")!;
    return c.json({
      credentialId: a.credentialId,
      claimed: a.claimed,
      accountId: a.accountId,
      seller: a.seller.sellerId,
    });
  });
  app.fetch = withRequestEnvelope(app.fetch, w.log);
  const reg = await json(await w.post("/agent/identity", { type: "anonymous" }));
  const exchange = async (assertion: string) =>
    (await json(await w.form("/oauth2/token", { grant_type: JWT_BEARER, assertion }))).body.access_token as string;
  const assertion = (reg.body.identity as { assertion: string }).assertion;
  const call = (headers: Record<string, string>, host = SF) => app.request(`${host}/protected`, { headers });
  return {
    w,
    call,
    assertion,
    exchange,
    token: await exchange(assertion),
    credentialId: (reg.body.identity as { credential_id: string }).credential_id,
  };
}

async function expect401(res: Response, code: string, reason?: string) {
  assert.equal(res.status, 401);
  const body = await res.json();
  assert.equal(body.error, code);
  assert.equal(body.reason, reason);
  const www = res.headers.get("www-authenticate") ?? "";
  assert.ok(www.startsWith(CHALLENGE), www);
}

Deno.test("agentAuth(): a valid Bearer token sets the agent, its claim state and the seller", async (t) => {
  const { w, call, token, credentialId } = await protectedWorld();
  try {
    const res = await call({ authorization: `Bearer ${token}` });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { credentialId, claimed: false, accountId: null, seller: "demo" });
    await t.step("ZC-Agent-Authorization carries the token when Authorization carries Payment", async () => {
      const r = await call({
        authorization: "Payment eyJjaGFsbGVuZ2UiOnt9fQ",
        "zc-agent-authorization": `Bearer ${token}`,
      });
      assert.equal(r.status, 200);
    });
    await t.step("the same token in both headers is accepted", async () => {
      const r = await call({ authorization: `Bearer ${token}`, "zc-agent-authorization": `Bearer ${token}` });
      assert.equal(r.status, 200);
    });
    await t.step("the scheme name is case-insensitive", async () => {
      assert.equal((await call({ authorization: `bearer ${token}` })).status, 200);
    });
  } finally {
    await w.close();
  }
});

Deno.test("agentAuth(): bearer_required and every invalid_token reason, each with WWW-Authenticate", async (t) => {
  const { w, call, token, assertion, exchange } = await protectedWorld();
  try {
    await t.step("no credential -> bearer_required", async () => {
      const res = await call({});
      await expect401(res, "bearer_required");
      assert.equal(res.headers.get("www-authenticate"), CHALLENGE);
    });
    await t.step("only an MPP Payment credential -> bearer_required", async () => {
      await expect401(await call({ authorization: "Payment abc" }), "bearer_required");
    });
    await t.step("token_expired after 5 minutes", async () => {
      w.clock.advance(300_000);
      await expect401(await call({ authorization: `Bearer ${token}` }), "invalid_token", "token_expired");
      w.clock.advance(-300_000);
    });
    await t.step("token_invalid: a bad signature or not a JWT", async () => {
      const [h, p, s] = token.split(".");
      const flipped = `${h}.${p}.${s!.startsWith("A") ? "B" : "A"}${s!.slice(1)}`;
      await expect401(await call({ authorization: `Bearer ${flipped}` }), "invalid_token", "token_invalid");
      await expect401(await call({ authorization: "Bearer abc.def" }), "invalid_token", "token_invalid");
      await expect401(await call({ authorization: "Bearer ak_notatoken" }), "invalid_token", "token_invalid");
    });
    await t.step("unrecognized_agent_credential: our assertion is not an access token", async () => {
      await expect401(
        await call({ authorization: `Bearer ${assertion}` }),
        "invalid_token",
        "unrecognized_agent_credential",
      );
    });
    await t.step("malformed_agent_authorization", async () => {
      for (const h of ["Bearer", "Bearer a b", "Basic dXNlcjpwYXNz", "Bearer a,b", "Token abc"]) {
        await expect401(await call({ authorization: h }), "invalid_token", "malformed_agent_authorization");
      }
      await expect401(
        await call({ authorization: "Payment abc", "zc-agent-authorization": "Token abc" }),
        "invalid_token",
        "malformed_agent_authorization",
      );
    });
    await t.step("conflicting_agent_credentials: two different tokens", async () => {
      const other = await exchange(assertion);
      assert.notEqual(other, token);
      await expect401(
        await call({ authorization: `Bearer ${token}`, "zc-agent-authorization": `Bearer ${other}` }),
        "invalid_token",
        "conflicting_agent_credentials",
      );
    });
    await t.step("combined_authorization_unsupported: Payment and Bearer comma-combined", async () => {
      for (const h of [`Payment abc, Bearer ${token}`, `Bearer ${token}, Payment abc`]) {
        await expect401(await call({ authorization: h }), "invalid_token", "combined_authorization_unsupported");
      }
    });
  } finally {
    await w.close();
  }
});

Deno.test("agentAuth(): an unknown host is 404 seller_not_found without a default seller", async () => {
  const { w, call, token } = await protectedWorld({ STOREFRONT_DEFAULT_SELLER: "none" });
  try {
    const res = await call({ authorization: `Bearer ${token}` }, "http://elsewhere.test");
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error, "seller_not_found");
  } finally {
    await w.close();
  }
});
