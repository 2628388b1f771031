/**
 * `POST /mcp` reads its body ahead of the SDK (routes/mcp/batch.ts) and holds it until the answer:
 * it takes its share of the process's body budget (routes/middleware/body_budget.ts) like every
 * other body reader, so it waits, unread, while the budget is full, and is then answered as sent.
 */
import assert from "node:assert/strict";
import { processBodyBudget } from "../../routes/middleware/body_budget.ts";
import { createTestWorld } from "../_helpers.ts";

Deno.test("POST /mcp with the process's body budget full: a 200 KiB call waits, then is answered as sent", async () => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey();
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/list",
    params: { _meta: { pad: "x".repeat(200 * 1024) } },
  });
  const giveBack = await processBodyBudget.take(Number.MAX_SAFE_INTEGER);
  let answered = false;
  const answer = Promise.resolve(w.app.request("/mcp", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      "content-length": String(body.length),
    },
    body,
  })).then((res) => {
    answered = true;
    return res;
  });
  try {
    for (let i = 0; i < 20 && processBodyBudget.waiting === 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(processBodyBudget.waiting, 1, "the call waits for room");
    assert.equal(answered, false);
  } finally {
    giveBack();
  }
  const res = await answer;
  assert.equal(res.status, 200);
  const out = await res.json() as { id: number; result: { tools: unknown[] } };
  assert.equal(out.id, 7);
  assert.ok(out.result.tools.length > 0);
  assert.equal(processBodyBudget.held, 0, "its share is given back once answered");
});
