/**
 * Sentence splitting runs on the event loop for ingest summaries, highlights and extractive answers.
 * A body of 20,000 "!" (or "J. J. J. ...") cost seconds: each start inside a run of marks rescanned
 * the rest of it, and the word before each mark was found by a `$`-anchored pattern retried at every
 * start. One such article held every tenant's requests while it was summarised, and again for each
 * search that asked highlights of it.
 */
import assert from "node:assert/strict";
import { splitSentences } from "../../core/text/mod.ts";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "../search/_world.ts";
import { assertNoStall, postJson, servedAndProbed } from "./_healthz.ts";

Deno.test("splitSentences() of 100,000 characters of runs of marks, initials or a word before a comma returns within 1 s", () => {
  for (
    const text of [
      "!".repeat(100_000),
      "J. ".repeat(33_000),
      `${"a".repeat(100_000)},! A`,
      `${".".repeat(99_990)} Next one`,
    ]
  ) {
    const started = performance.now();
    splitSentences(text);
    const ms = performance.now() - started;
    assert.ok(ms < 1000, `${text.slice(0, 8)}...: ${Math.round(ms)} ms`);
  }
});

Deno.test("POST articles whose body is 20,000 '!' and a search with highlights of it: /healthz answers within 1 s throughout", async () => {
  await using w = await searchWorld();
  await using served = await servedAndProbed(w.app);
  const ingest = await served.measure(() =>
    postJson(
      `${served.base}/v1/data-models/${w.dm.id}/articles`,
      JSON.stringify([
        { url: "https://alpha.example/marks", title: "Harbour marks", body: `Harbour news ${"!".repeat(20_000)}` },
      ]),
      bearer(w.key),
    )
  );
  assert.equal(ingest.out.status, 200);
  assert.equal(ingest.out.json.created, 1);
  assertNoStall(ingest.window, "ingest");

  const found = await served.measure(() =>
    postJson(
      `${served.base}/app/v2/search?data_model_id=${w.dm.id}`,
      JSON.stringify({ query: "harbour news", highlights: { max_characters: 500 } }),
      bearer(w.key),
    )
  );
  assert.equal(found.out.status, 200);
  assert.equal(found.out.json.response.results[0].url, "https://alpha.example/marks");
  assertNoStall(found.window, "search");
});
