import assert from "node:assert/strict";
import { standaloneQuery } from "../../core/answer/followup.ts";
import { relatedQuestions } from "../../core/answer/related.ts";

Deno.test("relatedQuestions() gives three distinct questions from the cited titles, each ending with ?", () => {
  const qs = relatedQuestions("What did the council decide?", [
    { title: "Council approves 2027 city budget after late-night vote." },
    { title: "Bus fares to rise in January" },
  ], [{ title: "Bus fares to rise in January" }, { title: "Snow expected this weekend" }]);
  assert.deepEqual(qs, [
    'What else is known about "Council approves 2027 city budget after late-night vote"?',
    'What is the background to "Bus fares to rise in January"?',
    'What happened next after "Snow expected this weekend"?',
  ]);
});

Deno.test("relatedQuestions() skips titles the question already covers and tops up from its words", () => {
  const qs = relatedQuestions("snow expected this weekend", [{ title: "Snow: expected this weekend!" }]);
  assert.equal(qs.length, 3);
  assert.equal(new Set(qs).size, 3);
  for (const q of qs) assert.ok(q.endsWith("?"), q);
  assert.ok(!qs.some((q) => q.includes('"Snow')), "nothing new in that title");
  assert.equal(qs[0], "What is the latest on snow expected weekend?");
});

Deno.test("relatedQuestions() without articles or content words still gives three questions", () => {
  const qs = relatedQuestions("what is it?", []);
  assert.deepEqual(qs, ["What are today's top stories?", "What is trending right now?", "What happened this week?"]);
});

Deno.test("relatedQuestions() keeps a long title to one line and strips quotes", () => {
  const title = `"${"Very long headline about the regional transport plan ".repeat(4)}"`;
  const [q] = relatedQuestions("trains", [{ title }]);
  assert.ok(q!.length < 140, q);
  assert.equal((q!.match(/"/g) ?? []).length, 2, q);
});

Deno.test("standaloneQuery() carries the previous question's words into a short or pointing-back follow-up", () => {
  const history = [
    { role: "user" as const, content: "Why are bus fares going up?" },
    { role: "assistant" as const, content: "Fuel and wage costs." },
  ];
  assert.equal(standaloneQuery("What will it cost?", history), "What will it cost (bus fares)?");
  assert.equal(standaloneQuery("And in Berlin", history), "And in Berlin (bus fares)");
  // A full question stands alone; no history, nothing to carry.
  const full = "How many centimetres of snow are forecast for Saturday in the city?";
  assert.equal(standaloneQuery(full, history), full);
  assert.equal(standaloneQuery("What will it cost?", []), "What will it cost?");
  assert.equal(standaloneQuery("What will it cost?", [{ role: "assistant", content: "Hello" }]), "What will it cost?");
  // Never longer than the limit.
  assert.equal(standaloneQuery("Why?", [{ role: "user", content: "x ".repeat(10) + "budget" }], 8), "Why?");
});
