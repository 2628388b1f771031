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
import { healthzProber } from "./_healthz.ts";

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
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, w.app.fetch);
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await using prober = await healthzProber(base);
    const ingest = await prober.measure(async () => {
      const res = await fetch(`${base}/v1/data-models/${w.dm.id}/articles`, {
        method: "POST",
        headers: { ...bearer(w.key), "content-type": "application/json" },
        body: JSON.stringify([
          { url: "https://alpha.example/marks", title: "Harbour marks", body: `Harbour news ${"!".repeat(20_000)}` },
        ]),
      });
      return { status: res.status, json: await res.json() };
    });
    assert.equal(ingest.out.status, 200);
    assert.equal(ingest.out.json.created, 1);
    assert.equal(ingest.window.failures, 0);
    assert.ok(ingest.window.worstMs < 1000, `ingest: worst /healthz latency ${ingest.window.worstMs} ms`);

    const found = await prober.measure(async () => {
      const res = await fetch(`${base}/app/v2/search?data_model_id=${w.dm.id}`, {
        method: "POST",
        headers: { ...bearer(w.key), "content-type": "application/json" },
        body: JSON.stringify({ query: "harbour news", highlights: { max_characters: 500 } }),
      });
      return { status: res.status, json: await res.json() };
    });
    assert.equal(found.out.status, 200);
    assert.equal(found.out.json.response.results[0].url, "https://alpha.example/marks");
    assert.equal(found.window.failures, 0);
    assert.ok(found.window.worstMs < 1000, `search: worst /healthz latency ${found.window.worstMs} ms`);
  } finally {
    await server.shutdown();
  }
});
