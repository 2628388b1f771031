import assert from "node:assert/strict";
import { safeMarkdown } from "../../core/text/mod.ts";
import { splitCodeSpans } from "../../core/text/markdown_text.ts";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

Deno.test("article ingest keeps body_markdown without raw HTML or script links, as Markdown converted from HTML is", async () => {
  await using w = await searchWorld();
  const url = "https://alpha.example/md";
  const res = await w.app.request(`/v1/data-models/${w.dm.id}/articles`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify([{
      url,
      title: "Harbour report",
      body: "The harbour reopened.",
      body_markdown: [
        "The harbour <img src=x onerror=alert(1)> reopened <script>steal()</script>.",
        "",
        "[Read more](javascript:alert(1)) [Escaped](java&#115;cript:alert(1)) [Split](",
        "  javascript:alert(2)) <javascript:alert(3)> ![pixel](data:image/svg+xml,x)",
        "",
        "[ref]: vbscript:msgbox",
        "",
        "[Source](https://alpha.example/source) and [More](/more) with `a <b> c` as code.",
      ].join("\n"),
    }]),
  });
  assert.equal((await res.json()).created, 1);
  const article = await (await w.app.request(
    `/v1/data-models/${w.dm.id}/article?url=${encodeURIComponent(url)}`,
    { headers: bearer(w.key) },
  )).json();
  const text: string = article.text;
  assert.doesNotMatch(text, /(?<!\\)<(?:img|script|javascript)/i, "raw HTML and autolinks are shown as text");
  assert.doesNotMatch(text, /\]\(\s*(?:java|data|vb)/i);
  assert.doesNotMatch(text, /\]:\s*vbscript/i);
  assert.match(text, /\[Source\]\(https:\/\/alpha\.example\/source\)/);
  assert.match(text, /\[More\]\(\/more\)/);
  assert.match(text, /`a <b> c`/, "code spans stay as written");
});

Deno.test("safeMarkdown(): uneven backtick runs and reference definitions in a quote or a list are no way past it", () => {
  const cases: [string, string][] = [
    // A run of two backticks is not closed by one (CommonMark 6.1): the rest is text, not code.
    ["``<img src=x onerror=alert(1)>`", "``\\<img src=x onerror=alert(1)>`"],
    ["``[x](javascript:alert(1))`", "``[x](#)`"],
    // A reference definition applies wherever it stands: in a block quote, a list item, with an escaped bracket.
    ["> [x]: javascript:alert(1)", "> [x]: #"],
    ["- [y]: javascript:alert(2)", "- [y]: #"],
    ["1. [z]: data:text/html,x", "1. [z]: #"],
    ["[a\\]b]: javascript:alert(3)", "[a\\]b]: #"],
    ["> [q]:\n> javascript:alert(4)", "> [q]: #"],
    // What was kept stays kept.
    ["`a <b> c` and ``d ` e``", "`a <b> c` and ``d ` e``"],
    ["> [ok]: https://alpha.example/ok", "> [ok]: https://alpha.example/ok"],
  ];
  for (const [md, safe] of cases) assert.equal(safeMarkdown(md), safe, md);
  assert.deepEqual(splitCodeSpans("a ``b`` `c"), ["a ", "``b``", " `c"]);
  // Linear in the number of backtick runs, whatever their lengths.
  const runs = Array.from({ length: 20_000 }, (_, i) => "`".repeat(i % 200 + 1) + "x").join("");
  const started = performance.now();
  safeMarkdown(runs);
  assert.ok(performance.now() - started < 1000);
});
