/**
 * CORS for browser-hosted MCP clients (MCP spec, authorization and Streamable HTTP): preflights of
 * /mcp, /oauth2/token, /oauth2/register, the consent page and the well-known documents are answered for any origin,
 * the headers the client sends are allowed, Mcp-Session-Id and WWW-Authenticate are exposed, and
 * no credentials mode is offered. Errors carry the headers too (a 401 must be readable).
 */
import assert from "node:assert/strict";
import { mcpWorld } from "./_world.ts";

const SF = "http://svc.test";
const ORIGIN = "https://inspector.example";

Deno.test("CORS preflights of /mcp, /oauth2/* and the well-known documents", async (t) => {
  await using w = await mcpWorld();
  const paths = [
    "/mcp",
    "/oauth2/token",
    "/oauth2/register",
    // The consent page reads its CSRF cookie: never credentials mode here either (routes/middleware/cors.ts).
    "/oauth2/authorize",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/network",
    "/.well-known/mcp.json",
  ];
  for (const path of paths) {
    await t.step(`OPTIONS ${path}`, async () => {
      const res = await w.app.request(`${SF}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: ORIGIN,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type, mcp-protocol-version",
        },
      });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("access-control-allow-origin"), "*");
      assert.equal(res.headers.get("access-control-allow-credentials"), null);
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(",");
      for (const h of ["authorization", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"]) {
        assert.ok(allowed.includes(h), `${path} allows ${h}`);
      }
      assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
    });
  }
  await t.step("a 401 from /mcp is readable cross-origin: WWW-Authenticate is exposed", async () => {
    const res = await w.app.request(`${SF}/mcp`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",");
    assert.ok(exposed.includes("www-authenticate") && exposed.includes("mcp-session-id"));
    await res.body?.cancel();
  });
  await t.step("the token endpoint's errors and the metadata carry Allow-Origin", async () => {
    const token = await w.app.request(`${SF}/oauth2/token`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=authorization_code",
    });
    assert.equal(token.status, 401);
    assert.equal(token.headers.get("access-control-allow-origin"), "*");
    await token.body?.cancel();
    const meta = await w.app.request(`${SF}/.well-known/oauth-authorization-server`, { headers: { origin: ORIGIN } });
    assert.equal(meta.headers.get("access-control-allow-origin"), "*");
    await meta.body?.cancel();
  });
  await t.step("the storefront's purchase routes stay without CORS", async () => {
    const res = await w.app.request(`${SF}/agent/entitlements`, { headers: { origin: ORIGIN } });
    assert.equal(res.headers.get("access-control-allow-origin"), null);
    await res.body?.cancel();
  });
});
