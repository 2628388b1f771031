import assert from "node:assert/strict";
import {
  buildPayload,
  composeSegments,
  composeText,
  extract,
  ExtractiveProvider,
  NOTHING_FOUND,
} from "../../core/answer/extractive.ts";
import { compileSchema } from "../../core/answer/schema.ts";
import { splitSentences, stem } from "../../core/answer/text.ts";
import type { AiModel } from "../../core/store/models.ts";
import type { RetrievedArticle } from "../../core/search/types.ts";
import { arrayRetriever, fixtureArticles, NOW } from "./_articles.ts";
import type { AppError } from "../../core/errors.ts";
import { httpStatus } from "../../routes/error_status.ts";

const DM_NEWS = "dm_news";
const DM_TECH = "dm_tech";
const articles = fixtureArticles(DM_NEWS, DM_TECH);
const retrieve = arrayRetriever(articles);
const passagesFor = (q: string) => retrieve([DM_NEWS, DM_TECH], q, { k: 8 });
const model: AiModel = {
  id: "am_test",
  tenantId: "tn_test",
  name: "Newsroom",
  groundingDataModelIds: [DM_NEWS, DM_TECH],
  provider: { kind: "extractive" },
  output: { kind: "text" },
  private: false,
  marketplace: false,
  createdAt: NOW.toISOString(),
};
/** Every sentence of every fixture article, to check answers add no claims of their own. */
const allSentences = new Set(articles.flatMap((a) => splitSentences(`${a.summary}\n\n${a.body}`)));

Deno.test("splitSentences() keeps abbreviations, initials and decimals inside sentences", () => {
  assert.deepEqual(
    splitSentences("Dr. Smith met J. Doe at 9 a.m. on Friday. Fares rise to 2.75 dollars! Is that fair? Yes."),
    ["Dr. Smith met J. Doe at 9 a.m. on Friday.", "Fares rise to 2.75 dollars!", "Is that fair?", "Yes."],
  );
  assert.deepEqual(splitSentences("First paragraph without stop\n\nSecond one."), [
    "First paragraph without stop",
    "Second one.",
  ]);
});

Deno.test("stem() lets inflections of a word meet", () => {
  assert.equal(stem("elections"), stem("election"));
  assert.equal(stem("rising"), stem("rise"));
  assert.equal(stem("planned"), stem("plan"));
  assert.equal(stem("cities"), stem("city"));
  assert.equal(stem("status"), "status");
});

Deno.test("extract() answers from the sentences that match the question and names site and date", async () => {
  const q = "How much will a bus ride cost?";
  const text = composeText(extract(q, await passagesFor(q), NOW));
  assert.match(text, /^According to Metro Wire \(19 Nov 2026\), a single ride will cost 2\.75 dollars\. \[1\]/);
  assert.match(
    text,
    /\n\nSources:\n\[1\] Metro Wire \(19 Nov 2026\): Bus fares to rise in January — https:\/\/metrowire\.example\/news\/ar_transit$/,
  );
});

Deno.test("extract() only quotes sentences found in the passages (no unsupported statements)", async () => {
  for (const q of ["What did the council decide about the budget?", "bus fares", "Tell me about the new AI chip"]) {
    const e = extract(q, await passagesFor(q), NOW);
    assert.ok(e.found, q);
    for (const src of e.sources) for (const s of src.sentences) assert.ok(allSentences.has(s.text), s.text);
  }
});

Deno.test("extract() says plainly when nothing relevant was found", async () => {
  for (const q of ["Who won the football match?", "what is it", "   "]) {
    const e = extract(q, await passagesFor(q), NOW);
    assert.equal(e.found, false, q);
    assert.equal(composeText(e), NOTHING_FOUND);
  }
  assert.equal(composeText(extract("budget", [], NOW)), NOTHING_FOUND);
});

Deno.test("extract() applies the minimum relevance: a passage sharing one minor word is not an answer", () => {
  const weak: RetrievedArticle[] = [{
    ...articles[3]!,
    summary: "",
    body: "The company said phone makers liked the design. Shipping starts in the spring for everyone.",
  }];
  const e = extract("When does the football season start in the spring league final?", weak, NOW);
  assert.equal(e.found, false);
});

Deno.test("extract() prefers the recent article when two say the same", () => {
  const base = articles[0]!;
  const same = "The city council approved the budget for next year after a long debate.";
  const older: RetrievedArticle = {
    ...base,
    id: "ar_old",
    site: "Old Times",
    pubdateUnix: base.pubdateUnix - 90 * 86_400,
    summary: "",
    body: same,
  };
  const newer: RetrievedArticle = { ...base, id: "ar_new", site: "New Times", summary: "", body: same };
  for (const order of [[older, newer], [newer, older]]) {
    const e = extract("council budget", order, NOW);
    assert.equal(e.sources.length, 1, "the duplicate is left out");
    assert.equal(e.sources[0]!.article.site, "New Times");
  }
});

Deno.test("extract() is deterministic", async () => {
  const q = "city budget vote";
  const p = await passagesFor(q);
  const first = composeText(extract(q, p, NOW));
  for (let i = 0; i < 5; i++) assert.equal(composeText(extract(q, structuredClone(p), NOW)), first);
});

Deno.test("composeSegments() joins to the whole answer and cites several sources in turn", () => {
  const e = extract("budget talks and the council budget vote", articles.slice(0, 2), NOW);
  const segments = composeSegments(e);
  assert.equal(segments.join(""), composeText(e));
  assert.ok(e.sources.length >= 2, "two sources");
  const text = composeText(e);
  assert.match(text, /also reports: /);
  assert.match(text, /\[1\] The Daily Ledger .*\n\[2\] Greenfield Gazette .*greenfieldgazette\.example/);
});

Deno.test("buildPayload() fills answer, sources and found from the extraction and validates", async () => {
  const schema = {
    type: "object",
    properties: {
      answer: { type: "string", minLength: 1 },
      found: { type: "boolean" },
      confidence: { type: "number", minimum: 0, maximum: 1 },
      sources: {
        type: "array",
        items: {
          type: "object",
          properties: { title: { type: "string" }, url: { type: "string" }, site: { type: "string" } },
          required: ["title", "url"],
          additionalProperties: false,
        },
      },
      sentiment: { type: "string", enum: ["positive", "negative"] },
    },
    required: ["answer", "sources"],
    additionalProperties: false,
  };
  const q = "bus fares";
  const payload = buildPayload(extract(q, await passagesFor(q), NOW), schema) as Record<string, unknown>;
  assert.deepEqual(compileSchema(schema).validate(payload), []);
  assert.match(payload.answer as string, /raise bus fares by 25 cents/);
  assert.equal(payload.found, true);
  assert.deepEqual(payload.sources, [{
    title: "Bus fares to rise in January",
    url: "https://metrowire.example/news/ar_transit",
    site: "Metro Wire",
  }]);
  assert.equal("sentiment" in payload, false, "an open enum is never guessed");
});

Deno.test("ExtractiveProvider.structured() fails clearly when a required field has no meaning it can fill", async () => {
  const provider = new ExtractiveProvider();
  const schema = { type: "object", properties: { sentiment: { type: "string" } }, required: ["sentiment"] };
  await assert.rejects(
    provider.structured(
      { model, query: "bus fares", passages: await passagesFor("bus fares"), now: NOW },
      schema,
      compileSchema(schema),
    ),
    (err: AppError) => {
      assert.equal(httpStatus(err), 502);
      assert.equal(
        err.message,
        "model output did not match the schema: the extractive provider cannot fill the required field(s) sentiment",
      );
      return true;
    },
  );
});

Deno.test("ExtractiveProvider.streamText() streams sentence by sentence, ending with the sources", async () => {
  const provider = new ExtractiveProvider();
  const q = "Tell me about the new AI chip";
  const request = { model, query: q, passages: await passagesFor(q), now: NOW };
  const chunks: string[] = [];
  for await (const c of provider.streamText(request)) chunks.push(c);
  assert.ok(chunks.length >= 3);
  assert.equal(chunks.join(""), await provider.text(request));
  assert.match(chunks.at(-1)!, /^\n\nSources:/);
});

Deno.test("extract() reads a sentence in its headline's context and skips the publisher's own promotion", () => {
  const a: RetrievedArticle = {
    ...articles[3]!,
    title: "How close are we to fusion energy on the grid?",
    summary: "",
    body: "Engineers say commercial fusion power plants are still decades away. " +
      "More coverage of fusion is available on Circuit Review. The weather was mild.",
  };
  const text = composeText(extract("Is fusion energy any closer?", [a], NOW));
  assert.match(text, /^Circuit Review \(20 Nov 2026\) reports: Engineers say commercial fusion power plants are still/);
  assert.doesNotMatch(text, /More coverage/);
});
