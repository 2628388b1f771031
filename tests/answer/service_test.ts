import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { ExtractiveProvider } from "../../core/answer/extractive.ts";
import { createAnswerService } from "../../core/answer/service.ts";
import { AppError } from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import { memoryLogger } from "../../core/log.ts";
import type { AiModel } from "../../core/store/models.ts";
import type { CitedArticles } from "../../core/answer/types.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { arrayRetriever, fixtureArticles, ingestItem, NOW } from "./_articles.ts";
import { httpStatus } from "../../routes/error_status.ts";

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

function service(
  events?: () => { record(e: unknown[]): Promise<void> } | undefined,
  onCited?: (c: CitedArticles) => void,
) {
  const log = memoryLogger();
  const retrieve = arrayRetriever(fixtureArticles("dm_news", "dm_tech"));
  const svc = createAnswerService({
    retrieve,
    providers: { extractive: new ExtractiveProvider() },
    clock: new FixedClock(NOW),
    log,
    events,
    onCited,
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
    assert.equal(httpStatus(err), 502);
    assert.match(err.message, /^the model's output schema is not usable: /);
    return true;
  });
});

Deno.test("AnswerService.answer() fails with 502 when the model's provider is not available", async () => {
  const { svc } = service();
  const m: AiModel = { ...model, provider: { kind: "openai", model: "x" } };
  await assert.rejects(
    svc.answer(m, "bus fares", {}),
    (err: AppError) => httpStatus(err) === 502 && err.message === "AI provider openai is not available",
  );
});

Deno.test("end to end: articles ingested over HTTP answer a question through the default answer engine", async () => {
  await using w = await createTestWorld();
  const { tenantId, key } = await w.tenantWithKey();
  const now = w.clock.now().toISOString();
  const dm = await w.deps.repos.dataModels.create({
    id: newId("dm", w.clock),
    tenantId,
    name: "News",
    sites: [],
    marketplace: false,
    createdAt: now,
  });
  const id = newId("am", w.clock);
  await w.deps.repos.aiModels.create({ ...model, id, tenantId, groundingDataModelIds: [dm.id] });
  const post = (path: string, body: unknown) =>
    w.app.request(path, {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const articles = fixtureArticles(dm.id, dm.id).map(ingestItem);
  const ingested = await post(`/v1/data-models/${dm.id}/articles`, articles);
  assert.equal(ingested.status, 200);
  assert.equal((await ingested.json()).created, articles.length);

  const res = await post(`/app/aimodel/${id}`, { query: "How much will a bus ride cost?" });
  assert.equal(res.status, 200);
  const { message } = await res.json();
  assert.match(message, /^According to Metro Wire \(19 Nov 2026\), a single ride will cost 2\.75 dollars\./);
  assert.match(
    message,
    /\nSources:\n\[1\] Metro Wire \(19 Nov 2026\): Bus fares to rise in January — https:\/\/metrowire/,
  );

  // The default engine records into the real event pipeline.
  await w.deps.events.flush();
  const logs = await (await w.app.request("/v1/analytics/ask-ai/logs", { headers: bearer(key) })).json();
  assert.equal(logs.data[0].prompt, "How much will a bus ride cost?");
  assert.equal(logs.data[0].response, message);
});

Deno.test("AnswerService tells onCited the articles a text answer cites, in citation order, with the caller", async () => {
  const told: CitedArticles[] = [];
  const { svc } = service(undefined, (c) => told.push(c));
  const a = await svc.answer(model, "bus fares", { caller: "payproxy:agent-7" });
  assert.equal(a.kind, "text");
  const citations = a.kind === "text" ? a.citations : [];
  assert.ok(citations.length >= 1);
  assert.equal(told.length, 1);
  assert.equal(told[0]!.tenantId, "tn_svc");
  assert.equal(told[0]!.aiModelId, "am_svc");
  assert.equal(told[0]!.caller, "payproxy:agent-7");
  assert.deepEqual(told[0]!.articles.map((x) => [x.url, x.position]), citations.map((c, i) => [c.url, i + 1]));
  // Streaming tells it once too, when the answer is complete.
  const chunks: string[] = [];
  const gen = svc.stream!(model, "bus fares", {});
  for (let r = await gen.next(); !r.done; r = await gen.next()) chunks.push(r.value);
  assert.equal(told.length, 2);
  assert.equal(told[1]!.caller, undefined);
});

Deno.test("AnswerService still answers when onCited throws, and logs it", async () => {
  const { svc, log } = service(undefined, () => {
    throw new Error("buffer broken");
  });
  const a = await svc.answer(model, "bus fares", { requestId: "r3" });
  assert.match(a.message, /bus fares/);
  const line = log.lines.find((l) => l.msg === "answer citations not recorded")!;
  assert.equal(line.level, "error");
  assert.equal(line.request_id, "r3");
});
