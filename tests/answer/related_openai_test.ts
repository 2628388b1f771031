/**
 * Related questions with the OpenAI-compatible provider: the model writes them (against a local
 * chat server on 127.0.0.1); a reply without three usable questions, or a failed call, falls back
 * to the extractive questions.
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { OpenAiProvider, parseQuestions } from "../../core/answer/openai.ts";
import { createAnswerService } from "../../core/answer/service.ts";
import { memoryLogger } from "../../core/log.ts";
import type { AiModel } from "../../core/store/models.ts";
import { arrayRetriever, fixtureArticles, NOW } from "./_articles.ts";
import { chatReply, failReply, startChatServer } from "./_chat_server.ts";

const model: AiModel = {
  id: "am_rel",
  tenantId: "tn_rel",
  name: "Rel",
  groundingDataModelIds: ["dm_news"],
  provider: { kind: "openai", model: "gpt-test-mini" },
  output: { kind: "text" },
  private: false,
  marketplace: false,
  createdAt: NOW.toISOString(),
};

function service(baseUrl: string) {
  const log = memoryLogger();
  const openai = new OpenAiProvider({
    config: { apiKey: "sk-test", baseUrl, timeoutMs: 5_000, maxRetries: 0 },
    fetch: globalThis.fetch,
    log,
    clock: new FixedClock(NOW),
    sleep: () => Promise.resolve(),
    random: () => 0.5,
  });
  return createAnswerService({
    retrieve: arrayRetriever(fixtureArticles("dm_news", "dm_tech")),
    providers: { openai },
    clock: new FixedClock(NOW),
    log,
  });
}

const cited = [{ title: "Council approves 2027 city budget after late-night vote" }];

Deno.test("parseQuestions() keeps distinct short questions, markers and quotes stripped", () => {
  assert.deepEqual(
    parseQuestions('1. What did the mayor say?\n- "When is the vote?"\nNot a question\n2) what did the mayor say?'),
    [
      "What did the mayor say?",
      "When is the vote?",
    ],
  );
});

Deno.test("AnswerService.relatedQuestions(): the OpenAI-compatible model writes three questions", async () => {
  await using server = startChatServer([
    chatReply("1. Who voted against the budget?\n2. What will the new bus drivers cost?\n3. When do taxes change?"),
  ]);
  const svc = service(server.baseUrl);
  const got = await svc.relatedQuestions!(model, "What did the council decide?", cited);
  assert.deepEqual(got, [
    "Who voted against the budget?",
    "What will the new bus drivers cost?",
    "When do taxes change?",
  ]);
  const asked = JSON.stringify(server.requests[0]!.body);
  assert.match(asked, /Council approves 2027 city budget/);
});

Deno.test("AnswerService.relatedQuestions(): a short reply or a failed call falls back to extractive questions", async () => {
  await using server = startChatServer([chatReply("Only one question?"), failReply(500)]);
  const svc = service(server.baseUrl);
  for (let i = 0; i < 2; i++) {
    const got = await svc.relatedQuestions!(model, "What did the council decide?", cited);
    assert.equal(got.length, 3);
    assert.match(got[0]!, /Council approves 2027 city budget/);
    assert.ok(got.every((q) => q.endsWith("?")));
  }
});
