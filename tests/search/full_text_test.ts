/**
 * Licensed full text: HTML kept as clean Markdown at ingest; `contents: {text: true}` on search
 * for the owning tenant always and for payproxy callers only where the data model licenses
 * `full_text` (a `full_text` usage line per text); the REST article route.
 */
import assert from "node:assert/strict";
import { htmlToMarkdown } from "../../core/text/markdown.ts";
import { clipMarkdown } from "../../core/text/markdown_text.ts";
import { bearer } from "../_helpers.ts";
import { signedInit, startAllowancePeer } from "../payproxy/_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

const HTML = `
<nav><a href="/">Home</a> | <a href="/news">News</a></nav>
<h1>Bridge reopens</h1>
<p>The <strong>river bridge</strong> reopened on <em>Friday</em>, says the <a href="/council">city council</a>.</p>
<div class="share-buttons"><a href="https://social.example/share">Share on Social</a></div>
<h2>What changed</h2>
<ul><li>Two new lanes</li><li>A cycle path<ul><li>lit at night</li></ul></li></ul>
<ol><li>Inspect</li><li>Reopen</li></ol>
<p>Read <a href="javascript:alert(1)">this</a> and <a href="data:text/html,x">that</a>.</p>
<script>alert("x")</script><aside>Related: other stories</aside>
<div id="newsletter-signup">Subscribe to our newsletter</div>
<footer>© Example</footer>`;

Deno.test("htmlToMarkdown() keeps headings, emphasis, lists and http links; drops furniture and unsafe links", () => {
  const md = htmlToMarkdown(HTML, "https://alpha.example/bridge");
  assert.match(md, /^# Bridge reopens$/m);
  assert.match(md, /^## What changed$/m);
  assert.match(md, /\*\*river bridge\*\*/);
  assert.match(md, /_Friday_/);
  assert.match(md, /\[city council\]\(https:\/\/alpha\.example\/council\)/);
  assert.match(md, /^- Two new lanes$/m);
  assert.match(md, /^- A cycle path$/m);
  assert.match(md, /^ {3}- lit at night$/m);
  assert.match(md, /^1\. Inspect$/m);
  assert.match(md, /^2\. Reopen$/m);
  for (const gone of ["Home", "Share on Social", "alert", "Related", "newsletter", "©", "javascript:", "data:"]) {
    assert.ok(!md.includes(gone), `${gone} left in:\n${md}`);
  }
  assert.match(md, /Read this and that\./);
});

Deno.test("clipMarkdown() cuts at a block, sentence or word end and never passes the limit", () => {
  const md = "# Title\n\nFirst paragraph here. Second sentence follows.\n\n- item one\n- item two";
  for (let max = 1; max <= md.length + 5; max++) {
    const cut = clipMarkdown(md, max);
    assert.ok(cut.length <= max, `${max}: ${cut.length}`);
    assert.ok(cut === "" || md.startsWith(cut), `${max}: not a prefix`);
    const next = md[cut.length];
    assert.ok(cut === "" || next === undefined || /\s/.test(next), `${max}: cut inside a word`);
  }
});

type W = Awaited<ReturnType<typeof searchWorld>>;
async function seed(w: W) {
  const r = await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/bridge", title: "Bridge reopens", body_html: HTML, pubdate: hoursAgo(w, 1) },
    {
      url: "https://beta.example/plain",
      title: "Bridge tolls",
      body: "Tolls on the bridge stay at two dollars.\n\nThe *council* votes next week.",
      pubdate: hoursAgo(w, 2),
    },
  ]);
  assert.equal(r.failed, 0, JSON.stringify(r.results));
}

Deno.test("POST /app/v2/search contents.text: the owning tenant gets Markdown text, also under a summary licence", async () => {
  await using w = await searchWorld();
  await seed(w);
  const r = await search(w, { query: "bridge", contents: { text: true } });
  assert.equal(r.status, 200, r.text);
  const byUrl = new Map(r.json.response.results.map((x: { url: string }) => [x.url, x]));
  const html = byUrl.get("https://alpha.example/bridge") as { text: string };
  assert.match(html.text, /^# Bridge reopens/);
  assert.match(html.text, /\[city council\]\(https:\/\/alpha\.example\/council\)/);
  // A plain body reads as written: Markdown characters escaped.
  const plain = byUrl.get("https://beta.example/plain") as { text: string };
  assert.equal(plain.text, "Tolls on the bridge stay at two dollars.\n\nThe \\*council\\* votes next week.");
  const short = await search(w, { query: "bridge", contents: { text: true, max_characters: 30 } });
  for (const x of short.json.response.results) assert.ok(x.text.length <= 30, x.text);
  const none = await search(w, { query: "bridge" });
  assert.ok(!none.text.includes('"text"'));
});

Deno.test("GET /v1/data-models/{id}/article returns the article with its text; unknown URLs are 404", async () => {
  await using w = await searchWorld();
  await seed(w);
  const url = encodeURIComponent("https://alpha.example/bridge");
  const res = await w.app.request(`/v1/data-models/${w.dm.id}/article?url=${url}&max_characters=200`, {
    headers: bearer(w.key),
  });
  assert.equal(res.status, 200);
  const a = await res.json();
  assert.equal(a.title, "Bridge reopens");
  assert.ok(a.text.length <= 200 && a.text.startsWith("# Bridge reopens"));
  const missing = await w.app.request(
    `/v1/data-models/${w.dm.id}/article?url=${encodeURIComponent("https://alpha.example/nope")}`,
    { headers: bearer(w.key) },
  );
  assert.equal(missing.status, 404);
  assert.ok(!(await missing.text()).includes("nope"));
});

Deno.test("POST /payproxy/v2/search contents.text: 403 under a summary licence, text and a full_text usage line under full_text", async () => {
  const peer = startAllowancePeer("allow");
  await using w = await searchWorld({ env: { AGENT_AUTH_URL: peer.url } });
  try {
    await w.deps.repos.dataModels.update({ ...w.dm, marketplace: true });
    await seed(w);
    const secret = await w.deps.payproxy.secrets.create("seller-a");
    const url = `/payproxy/v2/search?data_model_id=${w.dm.id}`;
    const call = async (body: unknown) => {
      const res = await w.app.request(
        url,
        await signedInit({ ...secret, clock: w.clock, url, body: JSON.stringify(body), agentId: "agent-t" }),
      );
      return { status: res.status, text: await res.text(), usage: res.headers.get("zc-usage") };
    };
    const denied = await call({ query: "bridge", contents: { text: true } });
    // Payproxy's 403 carries no body (spec 7.1 family), and no allowance was asked for it.
    assert.equal(denied.status, 403, denied.text);
    assert.equal(denied.text, "");
    assert.equal(peer.calls.length, 0);
    const plain = await call({ query: "bridge" });
    assert.equal(plain.status, 200);
    assert.deepEqual(JSON.parse(plain.usage!).map((u: { meterSlug: string }) => u.meterSlug), ["query"]);

    await w.deps.repos.dataModels.update({ ...w.dm, marketplace: true, license: "full_text" });
    const ok = await call({ query: "bridge", contents: { text: true } });
    assert.equal(ok.status, 200, ok.text);
    const results = JSON.parse(ok.text).response.results;
    assert.equal(results.length, 2);
    assert.ok(results.every((x: { text?: string }) => typeof x.text === "string" && x.text.length > 0));
    const usage = JSON.parse(ok.usage!);
    assert.deepEqual(usage.map((u: { meterSlug: string; quantity: number }) => [u.meterSlug, u.quantity]), [
      ["query", 1],
      ["full_text", 2],
    ]);
  } finally {
    await peer.close();
  }
});

Deno.test("ingest: hostile body_html (15,000 nested divs, 40,000 paragraphs) is not parsed on the ingest path", async () => {
  await using w = await searchWorld();
  const started = performance.now();
  const r = await w.deps.search.ingest(w.dm, [
    { url: "https://alpha.example/deep", title: "Deep", body_html: "<div>".repeat(15_000) + "deep text" },
    { url: "https://alpha.example/wide", title: "Wide", body_html: "<p>wide text</p>".repeat(40_000) },
  ]);
  const ms = performance.now() - started;
  assert.equal(r.failed, 0);
  assert.ok(ms < 2000, `${ms} ms`);
  const deep = await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/deep");
  assert.equal(deep!.markdown, undefined);
  assert.equal(deep!.body, "deep text");
  const wide = await w.deps.search.articleByUrl(w.dm.id, "https://alpha.example/wide");
  assert.equal(wide!.markdown, undefined);
  assert.ok(wide!.body.startsWith("wide text"));
});

Deno.test("POST /app/v2/search contents.text and highlights serve an updated article's new body, never a cached old one", async () => {
  await using w = await searchWorld();
  const put = (body: string) =>
    w.deps.search.ingest(w.dm, [{ url: "https://alpha.example/tolls", title: "Bridge tolls", body }]);
  await put("Tolls stay at two dollars.");
  const first = await search(w, { query: "bridge tolls", contents: { text: true }, highlights: {} });
  assert.equal(first.json.response.results[0].text, "Tolls stay at two dollars.");
  await put("Tolls rise to three dollars.");
  const second = await search(w, { query: "bridge tolls", contents: { text: true }, highlights: {} });
  assert.equal(second.json.response.results[0].text, "Tolls rise to three dollars.");
  assert.equal(second.json.response.results[0].highlights[0].text, "Tolls rise to three dollars.");
});

Deno.test("POST /payproxy/v2/search highlights under a summary licence: at most the default budget of passages, never the body", async () => {
  const peer = startAllowancePeer("allow");
  await using w = await searchWorld({ env: { AGENT_AUTH_URL: peer.url } });
  try {
    await w.deps.repos.dataModels.update({ ...w.dm, marketplace: true });
    // A 5,000-character body: a highlights budget of 10,000 in one passage would be the whole article.
    const sentences = Array.from({ length: 100 }, (_, i) => `Paragraph ${i} of the bridge works report is here.`);
    const body = sentences.join(" ");
    const r = await w.deps.search.ingest(w.dm, [
      { url: "https://alpha.example/works", title: "Bridge works", body, pubdate: hoursAgo(w, 1) },
    ]);
    assert.equal(r.failed, 0);
    const secret = await w.deps.payproxy.secrets.create("seller-a");
    const url = `/payproxy/v2/search?data_model_id=${w.dm.id}`;
    const call = async (request: unknown) => {
      const res = await w.app.request(
        url,
        await signedInit({ ...secret, clock: w.clock, url, body: JSON.stringify(request), agentId: "agent-h" }),
      );
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const [first] = JSON.parse(text).response.results;
      return (first.highlights as { text: string }[]).map((h) => h.text).join(" ");
    };
    for (const highlights of [{ max_characters: 10_000, per_result: 1 }, { max_characters: 10_000, per_result: 10 }]) {
      const shown = await call({ query: "bridge works report", highlights });
      assert.ok(shown.length > 0);
      assert.ok(shown.length <= 1000, `${shown.length} characters of a summary-licensed body`);
      assert.ok(!shown.includes(sentences.at(-1)!));
    }

    // Under a full_text licence the asked budget holds.
    await w.deps.repos.dataModels.update({ ...w.dm, marketplace: true, license: "full_text" });
    const licensed = await call({
      query: "bridge works report",
      highlights: { max_characters: 10_000, per_result: 1 },
    });
    assert.ok(licensed.length > 4000, `${licensed.length}`);
  } finally {
    await peer.close();
  }
});
