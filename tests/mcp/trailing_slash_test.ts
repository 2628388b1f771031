/**
 * The MCP endpoint is `/mcp`, and several MCP hosts normalise a configured server URL to a trailing
 * slash: `POST /mcp/` answered 404. The Streamable HTTP transport has one endpoint path, so
 * `/mcp/` is that same endpoint (every method, CORS preflight included); the documented path stays `/mcp`.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { consent } from "./_consent.ts";
import { HostProvider } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("MCP SDK client at `/mcp/` with a tenant API key: lists the tools", async () => {
  await using w = await mcpWorld({ realBase: true });
  const client = new Client({ name: "slash-host", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${w.base}/mcp/`), {
      requestInit: { headers: { authorization: `Bearer ${w.apiKey}` } },
    }),
  );
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t: { name: string }) => t.name === "search_articles"));
  } finally {
    await client.close();
  }
});

Deno.test("MCP SDK OAuth client at `/mcp/`: signs in through the consent page and calls a tool", async () => {
  await using w = await mcpWorld({ realBase: true });
  const provider = new HostProvider("http://127.0.0.1:53690/callback", "Slash host");
  const url = new URL(`${w.base}/mcp/`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await new Client({ name: "slash-host", version: "1" }).connect(first).catch(() => {});
  assert.ok(provider.authorizationUrl, "the 401 led the SDK to the authorization server");
  const back = await consent(w, provider.authorizationUrl.href, "anonymous");
  await first.finishAuth(back.searchParams.get("code")!);
  const client = new Client({ name: "slash-host", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  try {
    assert.ok((await client.listTools()).tools.length > 0);
    assert.equal(provider.consentsAsked, 1);
  } finally {
    await client.close();
  }
});

Deno.test("/mcp/ answers as /mcp: 401 with the Bearer challenge, 405 on GET, CORS preflight; deeper paths stay 404", async () => {
  await using w = await mcpWorld();
  const at = (path: string, init: RequestInit = {}) => w.app.request(`http://svc.test${path}`, init);
  const post = { method: "POST", headers: { "content-type": "application/json" }, body: "{}" };
  for (const path of ["/mcp", "/mcp/"]) {
    const unauthenticated = await at(path, post);
    assert.equal(unauthenticated.status, 401, path);
    assert.match(unauthenticated.headers.get("www-authenticate")!, /resource_metadata=/);
    await unauthenticated.body?.cancel();
    const get = await at(path);
    assert.equal(get.status, 405, path);
    await get.body?.cancel();
    const preflight = await at(path, {
      method: "OPTIONS",
      headers: { origin: "https://host.example", "access-control-request-method": "POST" },
    });
    assert.equal(preflight.status, 204, path);
    assert.ok(preflight.headers.get("access-control-allow-origin"), path);
  }
  const deeper = await at("/mcp/tools", post);
  assert.equal(deeper.status, 404);
  await deeper.body?.cancel();
  // The documented endpoint stays /mcp.
  const doc = await (await at("/openapi.json")).json();
  assert.ok("/mcp" in doc.paths);
  assert.ok(!("/mcp/" in doc.paths));
});
