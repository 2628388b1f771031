/**
 * An MCP `ask` answered and recorded is the caller's even when its conversation turn cannot be kept
 * (KV contention): failing the call after the answer was recorded made the agent ask again, answered
 * and counted twice. As on `POST /app/aimodel/{id}`, the turn is let go with a warning.
 */
import assert from "node:assert/strict";
import { ConversationStore } from "../../core/answer/conversation.ts";
import type { EventInput } from "../../core/events.ts";
import type { AnswerService } from "../../core/answer/types.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("MCP ask (tenant key): a conversation turn not kept does not fail an answered, recorded question", async () => {
  await using w = await mcpWorld();
  const queries: EventInput[] = [];
  const record = w.deps.events.record.bind(w.deps.events);
  w.deps.events.record = async (events) => {
    queries.push(...events.filter((e) => e.event_type === "query"));
    return await record(events);
  };
  const remember = ConversationStore.prototype.remember;
  ConversationStore.prototype.remember = () =>
    Promise.reject(new Error("conversation turn not kept: too many concurrent turns"));
  try {
    const client = await w.connect(`Bearer ${w.apiKey}`);
    const out = await client.callTool({
      name: "ask",
      arguments: { ai_model_id: w.ids.aiModelId, query: "What did the council decide?", conversation: true },
    });
    assert.equal(out.isError, undefined, JSON.stringify(out.content));
    assert.ok((out.structuredContent as { message: string }).message);
    assert.equal(queries.length, 1);
  } finally {
    ConversationStore.prototype.remember = remember;
  }
});

Deno.test("MCP ask (tenant key): a turn its caller left before the answer is not kept in its conversation", async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let asked = 0;
  // The second question is answered only once the test lets it go (after its caller left).
  const answer: AnswerService = {
    async answer() {
      if (++asked === 2) await released;
      return { kind: "text", message: `Answer ${asked}.`, citations: [] };
    },
  };
  await using w = await mcpWorld({ overrides: { answer } });
  const ask = (args: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${w.url}/mcp`, {
      method: "POST",
      signal,
      headers: {
        authorization: `Bearer ${w.apiKey}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-03-26",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "ask", arguments: { ai_model_id: w.ids.aiModelId, ...args } },
      }),
    });
  const content = async (res: Response) => (await res.json()).result.structuredContent;
  const started = await content(await ask({ query: "What did the council decide?", conversation: true }));
  const id = started.conversation_id;
  assert.match(id, /^cv_/);

  const leave = new AbortController();
  const left = ask({ query: "And the parks?", conversation_id: id }, leave.signal).catch((err) => err);
  while (asked < 2) await new Promise((r) => setTimeout(r, 10));
  leave.abort();
  assert.equal((await left as Error).name, "AbortError");
  await new Promise((r) => setTimeout(r, 150));
  release();
  await new Promise((r) => setTimeout(r, 150));

  const next = await content(await ask({ query: "Is that so?", conversation_id: id, explain: true }));
  assert.equal(next.explain.history_turns, 2, "the turn its caller never received is not its history");
});
