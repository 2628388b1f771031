/**
 * An MCP `ask` answered and recorded is the caller's even when its conversation turn cannot be kept
 * (KV contention): failing the call after the answer was recorded made the agent ask again, answered
 * and counted twice. As on `POST /app/aimodel/{id}`, the turn is let go with a warning.
 */
import assert from "node:assert/strict";
import { ConversationStore } from "../../core/answer/conversation.ts";
import type { EventInput } from "../../core/events.ts";
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
