import assert from "node:assert/strict";
import { publicJsonRpcError, publicJsonRpcMessage } from "../../routes/mcp/jsonrpc_errors.ts";
import { createTestWorld } from "../_helpers.ts";
import { mcpWorld } from "./_world.ts";

/** What the MCP SDK sends when its own schema refuses a request's params: zod's issue list as the message. */
const zodMessage = (issues: unknown[]) => JSON.stringify(issues, null, 2);

Deno.test("publicJsonRpcError(): a zod failure of the SDK becomes -32602 naming a known param and type", () => {
  const cases: [unknown[], string][] = [
    [
      [{ expected: "record", code: "invalid_type", path: ["params", "arguments"], message: "Invalid input" }],
      "Invalid params: arguments must be an object",
    ],
    [
      [{ expected: "string", code: "invalid_type", path: ["params", "name"], message: "x" }],
      "Invalid params: name must be a string",
    ],
    [
      [{ code: "too_big", maximum: 3, path: ["params", "cursor"], message: "x" }],
      "Invalid params: cursor is not valid",
    ],
    // A key the caller made up is never named.
    [[{ expected: "string", code: "invalid_type", path: ["params", "LEAK<x>"], message: "x" }], "Invalid params"],
    [
      [{ expected: "string", code: "invalid_type", path: ["params", "_meta", "LEAK<x>"], message: "x" }],
      "Invalid params: _meta must be a string",
    ],
  ];
  for (const [issues, message] of cases) {
    assert.deepEqual(publicJsonRpcError({ code: -32603, message: zodMessage(issues) }), { code: -32602, message });
  }
});

Deno.test("publicJsonRpcError(): another internal error is masked and its text goes to the log only", () => {
  const logged: string[] = [];
  const out = publicJsonRpcError({
    code: -32603,
    message: "Cannot read properties of undefined (reading 'x')",
    data: { stack: "..." },
  }, (d) => logged.push(d));
  assert.deepEqual(out, { code: -32603, message: "Internal error" });
  assert.deepEqual(logged, ["Cannot read properties of undefined (reading 'x')"]);
  // Already ours: nothing to change, nothing to log.
  assert.equal(publicJsonRpcError({ code: -32603, message: "Internal error" }, (d) => logged.push(d)), null);
  assert.equal(logged.length, 1);
});

Deno.test("publicJsonRpcMessage(): results, notifications and other codes pass as they are", () => {
  const result = { jsonrpc: "2.0", id: 1, result: { content: [] } };
  assert.equal(publicJsonRpcMessage(result), result);
  const notFound = { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found" } };
  assert.equal(publicJsonRpcMessage(notFound), notFound);
  const payment = { jsonrpc: "2.0", id: 1, error: { code: -32042, message: "Payment required", data: { x: 1 } } };
  assert.equal(publicJsonRpcMessage(payment), payment);
  // A message that merely looks like JSON but is not zod's issue list is masked, not parsed into words.
  assert.deepEqual(publicJsonRpcMessage({ jsonrpc: "2.0", id: 2, error: { code: -32603, message: "[1,2]" } }).error, {
    code: -32603,
    message: "Internal error",
  });
});

Deno.test("POST /mcp: params the SDK refuses answer -32602 in our words, never zod's issue list", async () => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey();
  const call = async (body: unknown) => {
    const res = await w.app.request("/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return (await res.json()).error;
  };
  const cases: [unknown, string][] = [
    [{ name: "search_articles", arguments: null }, "Invalid params: arguments must be an object"],
    [{ name: "search_articles", arguments: ["x"] }, "Invalid params: arguments must be an object"],
    [{ name: "search_articles", arguments: "LEAK-7f3a<script>" }, "Invalid params: arguments must be an object"],
    [{ name: 5 }, "Invalid params: name must be a string"],
  ];
  for (const [params, message] of cases) {
    assert.deepEqual(await call({ jsonrpc: "2.0", id: 1, method: "tools/call", params }), { code: -32602, message });
  }
  assert.deepEqual(await call({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 5 } }), {
    code: -32602,
    message: "Invalid params: cursor must be a string",
  });
  assert.deepEqual(await call({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 5 } }), {
    code: -32602,
    message: "Invalid params: protocolVersion must be a string",
  });
});

Deno.test("POST /mcp: an unsupported MCP-Protocol-Version header is refused with 400 -32000 naming the supported versions, never echoing the header", async () => {
  await using w = await mcpWorld();
  const post = (version: string, body: unknown) =>
    fetch(`${w.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${w.apiKey}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": version,
      },
      body: JSON.stringify(body),
    });
  const res = await post("LEAK<b>1999-01-01</b>", { jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.equal(res.status, 400);
  const answer = await res.json();
  assert.deepEqual(answer, {
    jsonrpc: "2.0",
    error: {
      code: -32000,
      message: "Bad Request: unsupported MCP-Protocol-Version (supported versions: 2025-11-25, 2025-06-18, " +
        "2025-03-26, 2024-11-05, 2024-10-07)",
    },
    id: null,
  });
  // A supported version still gets its answer.
  const ok = await post("2025-06-18", { jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.equal(ok.status, 200);
  assert.ok((await ok.json()).result.tools.length > 0);
});
