/**
 * Highlights: sentence windows of a result's body that answer the query, within a character
 * budget that is never passed and never cut inside a word; in document order; absent option,
 * the response is byte-identical to one without it.
 */
import assert from "node:assert/strict";
import {
  cutAtWord,
  highlightPage,
  highlightQueryOfText,
  MAX_EMBEDDED_WINDOWS,
  pickHighlights,
  shortlistWindows,
} from "../../core/search/rank/highlights.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

const BODY = [
  "The city opened its new library on Monday.",
  "Architects designed the building around a central reading room.",
  "The mayor said the library would stay open until midnight on weekdays.",
  "Funding came from a bond approved by voters in 2024.",
  "Critics questioned the cost of the project, which rose by a third.",
  "The library lends laptops and tools as well as books.",
  "Officials expect a hundred thousand visitors in the first year.",
].join(" ");
const flatIdf = () => 1;

Deno.test("shortlistWindows() ranks the window holding the query's terms first", () => {
  const q = highlightQueryOfText("what did the mayor say about opening hours", flatIdf);
  const list = shortlistWindows(BODY, q, { maxCharacters: 80, perResult: 1 });
  assert.match(list[0]!.text, /mayor said/);
  assert.ok(list[0]!.lexical > 0);
});

Deno.test("pickHighlights() never passes max_characters and returns whole words, for every budget", () => {
  const q = highlightQueryOfText("library cost funding mayor", flatIdf);
  const words = new Set(BODY.split(/\s+/).map((w) => w.replace(/[.,]$/, "")));
  for (let max = 1; max <= 400; max += 7) {
    for (const per of [1, 2, 3, 5]) {
      const options = { maxCharacters: max, perResult: per };
      const got = pickHighlights(shortlistWindows(BODY, q, options), options);
      const total = got.reduce((n, h) => n + h.text.length, 0);
      assert.ok(total <= max, `max ${max} per ${per}: ${total}`);
      assert.ok(got.length <= per);
      for (const h of got) {
        for (const w of h.text.replace(/…$/, "").split(/\s+/)) {
          assert.ok(words.has(w.replace(/[.,]$/, "")), `max ${max}: "${w}" is not a whole word`);
        }
      }
    }
  }
});

Deno.test("pickHighlights() returns non-overlapping passages in document order", () => {
  const q = highlightQueryOfText("laptops visitors mayor", flatIdf);
  const options = { maxCharacters: 300, perResult: 3 };
  const got = pickHighlights(shortlistWindows(BODY, q, options), options);
  assert.ok(got.length >= 2);
  const at = got.map((h) => BODY.indexOf(h.text.replace(/…$/, "")));
  assert.ok(at.every((x) => x >= 0));
  assert.deepEqual([...at].sort((a, b) => a - b), at);
  for (let i = 1; i < got.length; i++) assert.ok(at[i]! >= at[i - 1]! + got[i - 1]!.text.length);
  assert.ok(got.every((h) => h.score >= 0 && h.score <= 1));
});

Deno.test("cutAtWord() cuts at a space and counts the ellipsis; one long word gives nothing", () => {
  assert.equal(cutAtWord("alpha beta gamma", 100), "alpha beta gamma");
  assert.equal(cutAtWord("alpha beta gamma", 12), "alpha beta…");
  assert.ok(cutAtWord("alpha beta gamma", 12).length <= 12);
  assert.equal(cutAtWord("supercalifragilistic", 10), "");
});

Deno.test("highlightPage() blends the window's cosine with the query vector", async () => {
  // Two windows tie by terms (one term each); the vector side prefers the laptops sentence.
  const q = highlightQueryOfText("mayor laptops", flatIdf);
  const options = { maxCharacters: 70, perResult: 1 };
  const unit = (i: number) => Float32Array.from({ length: 4 }, (_, j) => (j === i ? 1 : 0));
  const embed = (texts: string[]) => Promise.resolve(texts.map((t) => (/laptops/.test(t) ? unit(0) : unit(1))));
  const [withVector] = await highlightPage([BODY], q, options, { queryVector: unit(0), embed });
  assert.match(withVector![0]!.text, /laptops/);
  // By terms alone the tie goes to the earlier passage.
  const [lexicalOnly] = await highlightPage([BODY], q, options);
  assert.match(lexicalOnly![0]!.text, /mayor/);
});

Deno.test("highlightPage() embeds only close contenders (at most per_result + 1), none when one window leads alone", async () => {
  const embedded: string[] = [];
  const embed = (texts: string[]) => {
    embedded.push(...texts);
    return Promise.resolve(texts.map(() => Float32Array.of(1, 0)));
  };
  const options = { maxCharacters: 80, perResult: 1 };
  const vector = { queryVector: Float32Array.of(1, 0), embed };
  // One window holds all three terms; every other is far below it: nothing to decide.
  await highlightPage([BODY, BODY], highlightQueryOfText("mayor midnight weekdays", flatIdf), options, vector);
  assert.equal(embedded.length, 0);
  // Two windows tie by terms: both are embedded, per body.
  await highlightPage([BODY, BODY], highlightQueryOfText("mayor laptops", flatIdf), options, vector);
  assert.equal(embedded.length, 4);
  assert.ok(embedded.every((t) => /mayor said|laptops/.test(t)));
});

type W = Awaited<ReturnType<typeof searchWorld>>;
async function seed(w: W) {
  const r = await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/library", title: "New library opens", body: BODY, pubdate: hoursAgo(w, 2) },
    {
      url: "https://beta.example/storm",
      title: "Storm closes the coast road",
      body: "A storm closed the coast road. Crews cleared fallen trees. The mayor said the road reopens Friday.",
      pubdate: hoursAgo(w, 3),
    },
  ]);
  assert.equal(r.failed, 0);
}

Deno.test("highlightPage() embeds at most one provider batch of windows per page, the top results first", async () => {
  const calls: string[][] = [];
  const embed = (texts: string[]) => {
    calls.push(texts);
    return Promise.resolve(texts.map(() => Float32Array.of(1, 0)));
  };
  // 500 results whose windows tie by terms: unbounded, one search would embed 1,000 windows (with
  // a remote provider, 16 outbound calls of 64 texts each).
  const bodies = Array.from({ length: 500 }, () => BODY);
  const q = highlightQueryOfText("mayor laptops", flatIdf);
  const lists = await highlightPage(bodies, q, { maxCharacters: 80, perResult: 1 }, {
    queryVector: Float32Array.of(1, 0),
    embed,
  });
  assert.equal(calls.length, 1);
  assert.ok(calls[0]!.length <= MAX_EMBEDDED_WINDOWS, `${calls[0]!.length} windows embedded`);
  // Every result still gets its highlight (by terms where its windows were not embedded).
  assert.equal(lists.length, 500);
  assert.ok(lists.every((l) => l.length === 1));
});

Deno.test("highlightPage() over a long page lets other work run between bodies (no event-loop stall)", async () => {
  // 300 bodies of ~20,000 characters: hundreds of milliseconds of scanning in one request.
  const long = Array.from({ length: 400 }, (_, i) => `Report ${i} on the mayor and the library budget.`).join(" ");
  const bodies = Array.from({ length: 300 }, (_, i) => `${long} Body ${i}.`);
  let timerRan = false;
  const timer = setTimeout(() => timerRan = true, 0);
  let ranBeforeDone: boolean | undefined;
  await highlightPage(bodies, highlightQueryOfText("mayor library budget", flatIdf), {
    maxCharacters: 10_000,
    perResult: 10,
  }).then(() => ranBeforeDone = timerRan);
  clearTimeout(timer);
  assert.equal(ranBeforeDone, true);
});

Deno.test("POST /app/v2/search with highlights: each result carries highlights within the budget", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, { query: "what did the mayor say", highlights: { max_characters: 120, per_result: 2 } });
  assert.equal(r.status, 200, r.text);
  const results = r.json.response.results;
  assert.ok(results.length === 2);
  for (const x of results) {
    assert.ok(Array.isArray(x.highlights) && x.highlights.length >= 1);
    assert.ok(x.highlights.reduce((n: number, h: { text: string }) => n + h.text.length, 0) <= 120);
    assert.ok(x.highlights.some((h: { text: string }) => /mayor said/.test(h.text)), JSON.stringify(x.highlights));
  }
});

Deno.test("POST /app/v2/search without highlights keeps the spec 2.2 result shape (no highlights key)", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, { query: "library" });
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.text.includes("highlights"));
  const spec = new Set([
    "author",
    "image_url",
    "preview_content",
    "pubdate",
    "pubdate_unix",
    "score",
    "site",
    "site_domain",
    "source_url",
    "summary",
    "title",
    "url",
  ]);
  for (const x of r.json.response.results) assert.ok(Object.keys(x).every((k) => spec.has(k)), Object.keys(x).join());
});

Deno.test("POST /app/v2/search rejects a bad highlights budget with 422 naming the field", async () => {
  await using w = await searchWorld();
  for (const highlights of [{ max_characters: 0 }, { per_result: 11 }, { max_characters: 1.5 }, "yes"]) {
    const r = await search(w, { query: "library", highlights });
    assert.equal(r.status, 422, r.text);
    assert.match(r.json.message, /^highlights/);
  }
});
