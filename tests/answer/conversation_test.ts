/**
 * Follow-up turns on POST /app/aimodel/{id}: a `messages` history or a kept conversation
 * (`conversation: true`, then `conversation_id`, 30 minutes by the injected clock) makes a short
 * follow-up standalone before retrieval; `explain` shows the rewritten query.
 */
import assert from "node:assert/strict";
import { CONVERSATION_TTL_MS, ConversationStore } from "../../core/answer/conversation.ts";
import { FixedClock } from "../../core/clock.ts";
import type { AnswerService } from "../../core/answer/types.ts";
import { newId } from "../../core/ids.ts";
import type { AiModel } from "../../core/store/models.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { widgetWorld } from "../widget/_world.ts";

Deno.test("ConversationStore.prepare() rewrites a follow-up from the history and forgets after 30 minutes", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const store = new ConversationStore(kv, clock);
    const first = await store.prepare("tn_a", "am_a", "Storm flooding closes coastal roads?", { conversation: true });
    assert.equal(first.query, "Storm flooding closes coastal roads?");
    assert.match(first.conversationId!, /^cv_[0-9a-z]{26}$/);
    await store.remember("tn_a", "am_a", first, "Storm flooding closes coastal roads?", "Roads closed.");
    const next = await store.prepare("tn_a", "am_a", "and what did the mayor say?", {
      conversation_id: first.conversationId,
    });
    assert.match(next.query, /^and what did the mayor say \(.*storm.*\)\?$/);
    assert.equal(next.history.length, 2);
    // Another tenant or model cannot continue it.
    await assert.rejects(() => store.prepare("tn_b", "am_a", "and?", { conversation_id: first.conversationId }));
    await assert.rejects(() => store.prepare("tn_a", "am_b", "and?", { conversation_id: first.conversationId }));
    clock.advance(CONVERSATION_TTL_MS + 1);
    await assert.rejects(
      () => store.prepare("tn_a", "am_a", "and?", { conversation_id: first.conversationId }),
      /expired/,
    );
  } finally {
    kv.close();
  }
});

Deno.test("POST /app/aimodel/{id}: messages history and kept conversations rewrite the follow-up, shown in explain", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const ask = async (body: unknown) => {
    const res = await w.app.request(`/app/aimodel/${a.model.id}`, {
      method: "POST",
      headers: { ...bearer(a.key), "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  const first = "What did the council decide about the budget?";
  const viaMessages = await ask({
    query: "and what about the parks?",
    messages: [{ role: "user", content: first }, { role: "assistant", content: "It passed." }],
    explain: true,
  });
  assert.equal(viaMessages.status, 200);
  assert.match(viaMessages.json.explain.query, /parks.*\(.*council.*budget.*\)/);
  assert.equal(viaMessages.json.explain.history_turns, 2);

  const started = await ask({ query: first, conversation: true });
  assert.equal(started.status, 200);
  const id = started.json.conversation_id;
  assert.match(id, /^cv_/);
  const followed = await ask({
    query: "and what about the parks?",
    conversation_id: id,
    explain: true,
    related_questions: true,
  });
  assert.equal(followed.status, 200);
  assert.equal(followed.json.conversation_id, id);
  assert.match(followed.json.explain.query, /council/);
  assert.equal(followed.json.related_questions.length, 3);
  assert.ok(followed.json.related_questions.every((q: string) => q.endsWith("?")));

  // Without the options the body is as before; a bad or unknown id is refused without echoing it.
  const plain = await ask({ query: first });
  assert.deepEqual(Object.keys(plain.json).sort(), ["citations", "message"]);
  const unknown = await ask({ query: "and?", conversation_id: "cv_0000000000aaaaaaaaaaaaaaaa" });
  assert.equal(unknown.status, 404);
  assert.ok(!JSON.stringify(unknown.json).includes("aaaaaaaa"));
  const malformed = await ask({ query: "and?", conversation_id: "nope" });
  assert.equal(malformed.status, 422);
  const tooMany = await ask({
    query: "and?",
    messages: Array.from({ length: 21 }, () => ({ role: "user", content: "x" })),
  });
  assert.equal(tooMany.status, 422);
});

Deno.test("ConversationStore.remember() keeps a conversation of 20 full turns in non-Latin script (KV's 64 KiB value bound)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const store = new ConversationStore(kv, clock);
    // 2,000 characters a turn, each two bytes in V8's serialisation: 20 turns are 80,000 bytes.
    const long = "橋の工事について市議会が決定した。".repeat(120).slice(0, 2000);
    const messages = Array.from({ length: 20 }, (_, i) => ({
      role: i % 2 === 0 ? "user" as const : "assistant" as const,
      content: long,
    }));
    const first = await store.prepare("tn_a", "am_a", "橋はいつ開きますか?", { conversation: true, messages });
    await store.remember("tn_a", "am_a", first, "橋はいつ開きますか?", long);
    const next = await store.prepare("tn_a", "am_a", "and then?", { conversation_id: first.conversationId });
    assert.ok(next.history.length >= 2);
    // The newest turns are the ones kept.
    assert.deepEqual(next.history.at(-2), { role: "user", content: "橋はいつ開きますか?" });
  } finally {
    kv.close();
  }
});

Deno.test("POST /app/aimodel/{id}: a streamed turn the caller abandons is not remembered in its conversation", async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let finished = false;
  // An answer that sends its opening, then holds the rest until the test lets it go.
  const answer: AnswerService = {
    answer: () => Promise.resolve({ kind: "text", message: "Whole answer.", citations: [] }),
    async *stream() {
      try {
        yield "Cut ";
        await released;
        yield "answer.";
        return [];
      } finally {
        finished = true;
      }
    },
  };
  await using w = await createTestWorld({ overrides: { answer } });
  const { tenantId, key } = await w.tenantWithKey();
  const model: AiModel = {
    id: newId("am", w.clock),
    tenantId,
    name: "Newsroom",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  };
  await w.deps.repos.aiModels.create(model);
  const ask = (body: unknown, accept = "application/json") =>
    w.app.request(`/app/aimodel/${model.id}`, {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json", accept },
      body: JSON.stringify(body),
    });
  const started = await (await ask({ query: "What did the council decide?", conversation: true })).json();
  const id = started.conversation_id;

  // The follow-up streams; the caller reads the first chunk and goes away.
  const res = await ask({ query: "And the budget for the parks?", conversation_id: id }, "text/event-stream");
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  await reader.read();
  await reader.cancel();
  release();
  for (let i = 0; i < 50 && !finished; i++) await new Promise((r) => setTimeout(r, 0));
  assert.ok(finished);
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 0));

  const kept = (await w.deps.kv.get<{ turns: { content: string }[] }>(["conversation", tenantId, id])).value!;
  assert.deepEqual(kept.turns.map((t) => t.content), ["What did the council decide?", "Whole answer."]);
});

Deno.test("ConversationStore.remember(): two follow-ups of one conversation answered at once are both kept", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const store = new ConversationStore(kv, clock);
    const first = await store.prepare("tn_a", "am_a", "Storm flooding closes coastal roads?", { conversation: true });
    await store.remember("tn_a", "am_a", first, "Storm flooding closes coastal roads?", "Roads closed.");
    const id = first.conversationId!;
    // Both read the same history; each is answered, then kept.
    const [a, b] = await Promise.all([
      store.prepare("tn_a", "am_a", "and the trains?", { conversation_id: id }),
      store.prepare("tn_a", "am_a", "and the ferries?", { conversation_id: id }),
    ]);
    await Promise.all([
      store.remember("tn_a", "am_a", a, "and the trains?", "Trains stopped."),
      store.remember("tn_a", "am_a", b, "and the ferries?", "Ferries sail."),
    ]);
    const next = await store.prepare("tn_a", "am_a", "and then?", { conversation_id: id });
    assert.deepEqual(next.history.map((t) => t.content).sort(), [
      "Ferries sail.",
      "Roads closed.",
      "Storm flooding closes coastal roads?",
      "Trains stopped.",
      "and the ferries?",
      "and the trains?",
    ]);
  } finally {
    kv.close();
  }
});

/** A KV that counts the reads (`get`, `getMany`) of keys under `prefix`. */
function countingReads(prefix: string) {
  let reads = 0;
  const under = (key: Deno.KvKey) => key[0] === prefix;
  const wrap = (kv: Deno.Kv): Deno.Kv =>
    new Proxy(kv, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (prop === "get") {
          return (key: Deno.KvKey, o?: { consistency?: Deno.KvConsistencyLevel }) => {
            if (under(key)) reads++;
            return target.get(key, o);
          };
        }
        if (prop === "getMany") {
          return (keys: Deno.KvKey[], o?: { consistency?: Deno.KvConsistencyLevel }) => {
            reads += keys.filter(under).length;
            return target.getMany(keys, o);
          };
        }
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  return { wrap, reads: () => reads, reset: () => void (reads = 0) };
}

Deno.test("POST /app/aimodel/{id}: a conversation turn reads its KV key once, and is kept 30 minutes from its answer", async () => {
  const counter = countingReads("conversation");
  await using w = await widgetWorld({ wrapKv: counter.wrap });
  const a = await w.tenant("Acme");
  const ask = async (body: unknown) => {
    const res = await w.app.request(`/app/aimodel/${a.model.id}`, {
      method: "POST",
      headers: { ...bearer(a.key), "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return await res.json();
  };
  const started = await ask({ query: "What did the council decide about the budget?", conversation: true });
  assert.equal(counter.reads(), 0, "a new conversation has nothing to read");
  for (const query of ["and what about the parks?", "and the schools?"]) {
    counter.reset();
    w.clock.advance(CONVERSATION_TTL_MS - 60_000);
    const next = await ask({ query, conversation_id: started.conversation_id, explain: true });
    assert.equal(next.conversation_id, started.conversation_id);
    assert.match(next.explain.query, /council|parks/);
    assert.equal(counter.reads(), 1, "one read per turn: its history, and the check its write is made against");
  }
  // Each turn renewed the 30 minutes: 58 minutes after the start it is still there, then it is gone.
  w.clock.advance(CONVERSATION_TTL_MS - 60_000);
  const last = await ask({ query: "and then?", conversation_id: started.conversation_id, explain: true });
  assert.equal(last.explain.history_turns, 6);
  w.clock.advance(CONVERSATION_TTL_MS + 1);
  const gone = await w.app.request(`/app/aimodel/${a.model.id}`, {
    method: "POST",
    headers: { ...bearer(a.key), "content-type": "application/json" },
    body: JSON.stringify({ query: "and?", conversation_id: started.conversation_id }),
  });
  assert.equal(gone.status, 404);
});
