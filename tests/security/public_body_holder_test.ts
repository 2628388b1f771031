/**
 * Round 7: the body queue's part per holder (routes/middleware/body_budget.ts) counted only keyless
 * event batches. The storefront's public routes that read bodies above the small size, with no
 * credential or with an agent token anyone mints for free, took their share with no holder: one
 * address sending large bodies there (declared, then sent slowly) could fill the whole queue, and
 * every other sender's large body (a tenant's article ingest, a widget's batch) was refused 503.
 */
import assert from "node:assert/strict";
import { processBodyBudget } from "../../routes/middleware/body_budget.ts";
import { json, SF, storefrontWorld } from "../storefront/_world.ts";

const KiB = 1024;
/** The process budget's default queue (256) and one holder's part of it (an eighth). */
const HOLDER_WAITING = 32;

/** A JSON body of `bytes` that is sent only once the service reads it. */
function largeBody(bytes: number): { body: ReadableStream<Uint8Array>; length: number } {
  const text = new TextEncoder().encode(JSON.stringify({ type: "anonymous", pad: "x".repeat(bytes) }));
  return {
    body: new ReadableStream({
      pull(controller) {
        controller.enqueue(text);
        controller.close();
      },
    }, { highWaterMark: 0 }),
    length: text.length,
  };
}

Deno.test("Public storefront routes: one address's large bodies wait in at most its part of the body queue, past it 503 server_busy at once (POST /agent/identity, /plans/{id}/purchase, /v2/search, /mcp)", async () => {
  await using w = await storefrontWorld();
  const reg = await json(await w.post("/agent/identity", { type: "anonymous" }));
  const assertion = (reg.body.identity as { assertion: string }).assertion;
  const token = (await json(
    await w.form("/oauth2/token", { grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }),
  )).body.access_token as string;
  const auth = { authorization: `Bearer ${token}` };
  const routes: [string, Record<string, string>][] = [
    ["/agent/identity", {}],
    ["/plans/pl_none/purchase", auth],
    ["/v2/search?data_model_id=dm_none", auth],
    ["/mcp", { ...auth, accept: "application/json, text/event-stream" }],
  ];
  for (const [path, headers] of routes) {
    // The budget is all held: every large body waits.
    const giveBack = await processBodyBudget.take(32 * 1024 * KiB);
    let answered = 0;
    const answers = Array.from({ length: HOLDER_WAITING + 8 }, async () => {
      const { body, length } = largeBody(100 * KiB);
      const res = await w.app.request(`${SF}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(length), ...headers },
        body,
      });
      answered++;
      return res;
    });
    // Until every request has either joined the queue or been answered (refused): a loaded machine
    // takes longer than any fixed pause, and one not yet in would find the budget given back.
    for (let polls = 0; processBodyBudget.waiting + answered < answers.length && polls < 1000; polls++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const waiting = processBodyBudget.waiting;
    giveBack();
    const statuses = await Promise.all(answers.map(async (a) => {
      const res = await a;
      await res.body?.cancel();
      return res.status;
    }));
    assert.ok(waiting <= HOLDER_WAITING, `${path}: ${waiting} bodies of one address waiting`);
    assert.equal(statuses.filter((s) => s === 503).length, 8, `${path}: ${statuses.join(",")}`);
    assert.equal(processBodyBudget.held, 0);
  }
});
