/**
 * Articles sent as `body_html` are converted on the ingest path. Markup past the converter's limits
 * was stripped by patterns that rescan to the end for each unclosed tag (150 ms per 100 KB item),
 * and the items were converted back to back: 200 such items held the event loop for half a minute.
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "../search/_world.ts";
import { assertNoStall, postJson, servedAndProbed } from "./_healthz.ts";

type World = Awaited<ReturnType<typeof searchWorld>>;

/**
 * POSTs `items` as the world's articles while `/healthz` is probed, after one plain article when
 * `warm` (start-up work done before the measurement, as a running server has); asserts all were
 * created and no probe stalled.
 */
async function ingestWithoutStall(w: World, items: unknown[], { warm = true } = {}): Promise<void> {
  if (warm) {
    await w.deps.search.ingest(w.dm, [{ url: "https://alpha.example/first", title: "First", body: "First words." }]);
  }
  await using served = await servedAndProbed(w.app);
  const { out, window } = await served.measure(() =>
    postJson(`${served.base}/v1/data-models/${w.dm.id}/articles`, JSON.stringify(items), bearer(w.key))
  );
  assert.equal(out.status, 200);
  assert.equal(out.json.created, items.length);
  assertNoStall(window);
}

Deno.test("POST articles with body_html of thousands of unclosed tags: /healthz answers within 1 s throughout", async () => {
  await using w = await searchWorld();
  const html = `<p>Harbour news</p>${"<script>".repeat(12_500)}`;
  await ingestWithoutStall(
    w,
    Array.from(
      { length: 60 },
      (_, i) => ({ url: `https://alpha.example/h/${i}`, title: `Item ${i}`, body_html: html }),
    ),
  );
  const stored = await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/h/0");
  assert.equal(stored!.body, "Harbour news");
});

Deno.test("POST articles with body_html of 100,000 characters of '<a' and no '>': /healthz answers within 1 s throughout", async () => {
  // The tag-count guard ran before any conversion: each `<a` scanned to the end for a `>` (2.5 s an item).
  await using w = await searchWorld();
  const html = `Harbour news ${"<a".repeat(50_000)}`;
  await ingestWithoutStall(
    w,
    Array.from({ length: 3 }, (_, i) => ({ url: `https://alpha.example/t/${i}`, title: `Item ${i}`, body_html: html })),
    { warm: false },
  );
});

Deno.test("POST articles with body_html of bold text around 90,000 spaces: /healthz answers within 1 s throughout", async () => {
  // The converter kept the white space around bold text with `/\s*$/`, retried at every space (2.5 s an item).
  await using w = await searchWorld();
  const html = `<p><b>Harbour${" ".repeat(90_000)}news</b></p>`;
  await ingestWithoutStall(w, [{ url: "https://alpha.example/bold", title: "Bold", body_html: html }]);
  const stored = await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/bold");
  assert.equal(stored!.markdown, "**Harbour news**");
});

Deno.test("POST articles with body_html of a code block of 90,000 newlines: /healthz answers within 1 s throughout", async () => {
  // A code block lost its trailing newlines through `/\n+$/`, retried at every newline inside it (2.6 s an item).
  await using w = await searchWorld();
  const html = `<p>Harbour news</p><pre><code>x${"\n".repeat(90_000)}y\n\n</code></pre>`;
  await ingestWithoutStall(w, [{ url: "https://alpha.example/code", title: "Code", body_html: html }]);
  const stored = await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/code");
  assert.ok(stored!.markdown!.endsWith("y\n```"), JSON.stringify(stored!.markdown!.slice(-12)));
});

Deno.test("POST articles with body_html of a code block of 90,000 spaces: /healthz answers within 1 s throughout", async () => {
  // White space before line ends was removed by `/[ \t]+\n/g`, retried at every space of the run (4 s an item).
  await using w = await searchWorld();
  const html = `<p>Harbour news</p><pre><code>x${" ".repeat(90_000)}y  \nz</code></pre>`;
  await ingestWithoutStall(w, [{ url: "https://alpha.example/spaces", title: "Spaces", body_html: html }]);
});
