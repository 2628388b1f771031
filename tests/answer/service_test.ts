import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { ExtractiveProvider } from "../../core/answer/extractive.ts";
import { createAnswerService } from "../../core/answer/service.ts";
import { AppError } from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import { memoryLogger } from "../../core/log.ts";
import type { AiModel } from "../../core/store/models.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { arrayRetriever, fixtureArticles, NOW } from "./_articles.ts";

const model: AiModel = {
  id: "am_svc",
  tenantId: "tn_svc",
  name: "Svc",
  groundingDataModelIds: ["dm_news"],
  provider: { kind: "extractive" },
  output: { kind: "text" },
  private: false,
  marketplace: true,
  createdAt: NOW.toISOString(),
};

function service(events?: () => { record(e: unknown[]): Promise<void> } | undefined) {
  const log = memoryLogger();
  const retrieve = arrayRetriever(fixtureArticles("dm_news", "dm_tech"));
  const svc = createAnswerService({
    retrieve,
    providers: { extractive: new ExtractiveProvider() },
    clock: new FixedClock(NOW),
    log,
    events,
  });
  return { svc, log, retrieve };
}

Deno.test("AnswerService.answer() retrieves from the model's data models with the provider's passage count", async () => {
  const { svc, retrieve } = service();
  const a = await svc.answer(model, "bus fares", {});
  assert.equal(a.kind, "text");
  assert.deepEqual(retrieve.calls, [{ ids: ["dm_news"], k: 8 }]);
});

Deno.test("AnswerService.answer() records payproxy callers with their agent identity", async () => {
  const recorded: unknown[] = [];
  const { svc } = service(() => ({ record: (e) => Promise.resolve(void recorded.push(...e)) }));
  await svc.answer(model, "bus fares", { caller: "payproxy:agent-7", requestId: "r1" });
  const e = recorded[0] as Record<string, unknown>;
  assert.equal(e.agent_identity, "payproxy:agent-7");
  assert.equal(e.tenant_id, "tn_svc");
  assert.equal(e.ai_agent, "am_svc");
  assert.equal(e.interaction_type, "free_form");
});

Deno.test("AnswerService.answer() still answers when recording fails, and logs the failure", async () => {
  const { svc, log } = service(() => ({ record: () => Promise.reject(new Error("wal unavailable")) }));
  const a = await svc.answer(model, "bus fares", { requestId: "r2" });
  assert.match(a.message, /bus fares/);
  const line = log.lines.find((l) => l.msg === "ask ai interaction not recorded")!;
  assert.equal(line.level, "error");
  assert.equal(line.error, "Error: wal unavailable");
});

Deno.test("AnswerService.answer() returns a structured payload that matches the schema", async () => {
  const { svc } = service();
  const schema = { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] };
  const a = await svc.answer({ ...model, output: { kind: "structured", schema } }, "bus fares", {});
  assert.equal(a.kind, "structured");
  if (a.kind !== "structured") return;
  assert.match((a.payload as { summary: string }).summary, /raise bus fares/);
  assert.equal(a.message, JSON.stringify(a.payload));
});

Deno.test("AnswerService.answer() fails with 502 when the model's schema is unusable", async () => {
  const { svc } = service();
  const schema = { type: "object", properties: { a: { $ref: "#/$defs/missing" } } };
  await assert.rejects(svc.answer({ ...model, output: { kind: "structured", schema } }, "bus fares", {}), (err) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 502);
    assert.match(err.message, /^the model's output schema is not usable: /);
    return true;
  });
});

Deno.test("AnswerService.answer() fails with 502 when the model's provider is not available", async () => {
  const { svc } = service();
  const m: AiModel = { ...model, provider: { kind: "openai", model: "x" } };
  await assert.rejects(svc.answer(m, "bus fares", {}), { status: 502, message: "AI provider openai is not available" });
});

Deno.test("assembleDeps() wires an answer engine that needs the search engine for retrieval", async () => {
  await using w = await createTestWorld();
  assert.ok(w.deps.answer, "deps.answer is wired");
  if (w.deps.search) return; // the search room is on main: the end-to-end tests cover it
  const { tenantId, key } = await w.tenantWithKey();
  const id = newId("am", w.clock);
  await w.deps.repos.aiModels.create({ ...model, id, tenantId });
  const res = await w.app.request(`/app/aimodel/${id}`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify({ query: "bus fares" }),
  });
  assert.equal(res.status, 503);
  assert.deepEqual(await res.json(), { message: "Article search is not available" });
});
