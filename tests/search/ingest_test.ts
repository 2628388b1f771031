import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import { runAdmin } from "../../cli/commands.ts";
import { bearer, engineOf } from "../_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

const upsert = (w: W, body: unknown, { dmId = w.dm.id, key = w.key } = {}) =>
  w.app.request(`/v1/data-models/${dmId}/articles`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify(body),
  });

Deno.test("POST /v1/data-models/{dm}/articles stores valid items and reports each invalid one", async () => {
  await using w = await searchWorld();
  const res = await upsert(w, {
    articles: [
      { url: "https://alpha.example/a", title: "Solar farm opens", body: "A new solar farm started supplying power." },
      { url: "ftp://alpha.example/b", title: "Bad scheme" },
      { title: "No url" },
      { url: "https://alpha.example/c", title: "" },
      { url: "https://alpha.example/d", title: "Bad date", pubdate: "not a date" },
      "not an object",
    ],
  });
  assert.equal(res.status, 200);
  const report = await res.json();
  assert.equal(report.received, 6);
  assert.equal(report.created, 1);
  assert.equal(report.failed, 5);
  assert.equal(report.results[0].status, "created");
  assert.match(report.results[0].id, /^ar_/);
  assert.match(report.results[1].error, /^url: must be an absolute http\(s\) URL/);
  assert.match(report.results[2].error, /^url is required/);
  assert.match(report.results[3].error, /^title: must not be empty/);
  assert.match(report.results[4].error, /^pubdate: unreadable date/);
  assert.equal(report.results[5].status, "error");
  // A bare array is accepted too.
  const res2 = await upsert(w, [{ url: "https://beta.example/e", title: "Wind farm" }]);
  assert.equal((await res2.json()).created, 1);
});

Deno.test("article ingest is idempotent on url: same id, updated fields, no duplicate", async () => {
  await using w = await searchWorld();
  const first = await (await upsert(w, [{ url: "https://alpha.example/x#top", title: "Old title about bridges" }]))
    .json();
  const again = await (await upsert(w, [{ url: "https://ALPHA.example:443/x", title: "New title about tunnels" }]))
    .json();
  assert.equal(again.updated, 1);
  assert.equal(again.created, 0);
  assert.equal(again.results[0].id, first.results[0].id);
  assert.equal(await w.deps.search.count(w.dm.id), 1);
  const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/x");
  assert.equal(stored!.title, "New title about tunnels");
  // The index forgot the old words and learned the new ones.
  assert.equal((await search(w, { query: "tunnels" })).json.response.results.length, 1);
  const old = await search(w, { query: "bridges" });
  assert.ok(old.json.response.results.every((r: { title: string }) => r.title !== "Old title about bridges"));
  // The same URL twice in one call: both applied in order.
  const twice = await (await upsert(w, [
    { url: "https://alpha.example/y", title: "First" },
    { url: "https://alpha.example/y", title: "Second" },
  ])).json();
  assert.deepEqual(twice.results.map((r: { status: string }) => r.status), ["created", "updated"]);
  assert.equal((await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/y"))!.title, "Second");
});

Deno.test("ingested articles are searchable at once, without a restart", async () => {
  await using w = await searchWorld();
  assert.equal((await search(w, { query: "volcano eruption" })).json.response.results.length, 0);
  await upsert(w, [{
    url: "https://gamma.example/volcano",
    title: "Volcano eruption closes airport",
    body: "Ash from the volcano eruption grounded flights across the island.",
    pubdate: hoursAgo(w, 1),
  }]);
  const r = await search(w, { query: "volcano eruption" });
  assert.equal(r.json.response.results[0].url, "https://gamma.example/volcano");
  assert.equal(r.json.response.results[0].site, "Gamma Post");
});

Deno.test("indexes are rebuilt from KV by a fresh engine (restart)", async () => {
  await using w = await searchWorld();
  await upsert(w, [{ url: "https://alpha.example/r", title: "Rail strike halts trains", body: "Trains stopped." }]);
  const second = await w.deps.repos.dataModels.create({ ...w.dm, id: newId("dm", w.clock), name: "Second" });
  await w.deps.search.ingest(second, [
    { url: "https://beta.example/s1", title: "Bus fares rise" },
    { url: "https://beta.example/s2", title: "Tram fares fall" },
  ]);
  assert.deepEqual(
    new Set(await engineOf(w.deps).articles.dataModelIds()),
    new Set([w.dm.id, second.id]),
  );
  const { SearchEngine } = await import("../../core/search/engine.ts");
  const fresh = new SearchEngine({
    kv: w.deps.kv,
    clock: w.clock,
    log: w.log,
    embeddings: engineOf(w.deps).embeddings,
  });
  await fresh.start();
  assert.equal(await fresh.count(w.dm.id), 1);
  assert.equal(await fresh.count(second.id), 2);
  const out = await fresh.recommend(w.dm, { query: "rail strike" }, {});
  assert.equal(out.response.results[0]!.url, "https://alpha.example/r");
});

Deno.test("a huge body is cut so the stored value stays under 64 KiB, with a summary and preview", async () => {
  await using w = await searchWorld();
  const sentence = "Ünïcödé reporters described the long investigation into the harbour contracts in detail. ";
  const res = await upsert(w, [{ url: "https://alpha.example/long", title: "Long read", body: sentence.repeat(5000) }]);
  assert.equal((await res.json()).created, 1);
  const a = (await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/long"))!;
  assert.ok(a.body.length <= 20_000);
  assert.ok(a.body.endsWith("."));
  assert.ok(a.summary.length > 0 && a.summary.length <= 600);
  assert.ok(a.previewContent.length <= 320);
  assert.equal(a.embedding!.dims, 100);
  assert.equal(a.embedding!.q.byteLength, 100);
});

Deno.test("POST /v1/data-models/{dm}/articles: 401, 403, other tenant 404, over 1,000 items 422", async () => {
  await using w = await searchWorld();
  const anon = await w.app.request(`/v1/data-models/${w.dm.id}/articles`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "[]",
  });
  assert.equal(anon.status, 401);
  assert.equal((await upsert(w, [], { key: "ak_nopenopenopenopenopenopenopenopenopenope000" })).status, 403);
  const other = await w.tenantWithKey("Other");
  assert.equal((await upsert(w, [], { key: other.key })).status, 404);
  const theirs = await w.deps.repos.dataModels.create({
    id: newId("dm", w.clock),
    tenantId: other.tenantId,
    name: "T",
    sites: [],
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  assert.equal((await upsert(w, [], { dmId: theirs.id })).status, 404);
  const tooMany = await upsert(
    w,
    Array.from({ length: 1001 }, (_, i) => ({ url: `https://a.example/${i}`, title: "t" })),
  );
  assert.equal(tooMany.status, 422);
  assert.match((await tooMany.json()).message, /1000/);
  const notList = await upsert(w, { articles: "nope" });
  assert.equal(notList.status, 422);
});

const RSS = `<?xml version="1.0"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>Beta Times</title>
<item><title>Harbour &amp; port strike ends</title><link>https://beta.example/port</link>
<dc:creator>Ann Lee</dc:creator><pubDate>Sat, 21 Nov 2026 10:00:00 GMT</pubDate>
<content:encoded><![CDATA[<p>Dock workers accepted a pay deal.</p><p>Ships are moving again.</p>]]></content:encoded>
<enclosure url="/port.jpg" type="image/jpeg" length="1"/></item>
<item><title>No link here</title></item>
</channel></rss>`;

const ATOM = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Gamma</title>
<entry><title>Museum reopens</title><link rel="alternate" href="https://gamma.example/museum"/>
<author><name>Bo Chen</name></author><published>2026-11-20T09:00:00Z</published>
<content type="html">&lt;p&gt;The art gallery reopened after renovation.&lt;/p&gt;</content></entry>
</feed>`;

Deno.test("admin `articles import` reads JSONL, RSS and Atom files and reports bad entries", async () => {
  await using w = await searchWorld();
  const dir = w.dataDir;
  await Deno.writeTextFile(
    `${dir}/a.jsonl`,
    [
      JSON.stringify({ url: "https://alpha.example/j1", title: "Jobs report", body: "Unemployment fell." }),
      "",
      "{broken",
      JSON.stringify({ url: "https://alpha.example/j2", title: "Wages rise" }),
    ].join("\n"),
  );
  await Deno.writeTextFile(`${dir}/feed.xml`, RSS);
  await Deno.writeTextFile(`${dir}/atom.xml`, ATOM);
  const jsonl = await runAdmin(w.deps, ["articles", "import", "--data-model", w.dm.id, "--file", `${dir}/a.jsonl`]) as {
    created: number;
    failed: number;
    errors: { at: string }[];
  };
  assert.equal(jsonl.created, 2);
  assert.equal(jsonl.failed, 1);
  assert.equal(jsonl.errors[0]!.at, "entry 3");
  const rss = await runAdmin(w.deps, ["articles", "import", "--data-model", w.dm.id, "--file", `${dir}/feed.xml`]) as {
    created: number;
    failed: number;
  };
  assert.equal(rss.created, 1);
  assert.equal(rss.failed, 1);
  const port = (await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://beta.example/port"))!;
  assert.equal(port.title, "Harbour & port strike ends");
  assert.equal(port.author, "Ann Lee");
  assert.equal(port.pubdate, "2026-11-21T10:00:00.000Z");
  assert.equal(port.image, "https://beta.example/port.jpg");
  assert.match(port.body, /pay deal\.\n\nShips are moving again\./);
  const atom = await runAdmin(w.deps, ["articles", "import", "--data-model", w.dm.id, "--file", `${dir}/atom.xml`]) as {
    created: number;
  };
  assert.equal(atom.created, 1);
  assert.equal(
    (await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://gamma.example/museum"))!.author,
    "Bo Chen",
  );
  const count = await runAdmin(w.deps, ["articles", "count", "--data-model", w.dm.id]);
  assert.deepEqual(count, { dataModelId: w.dm.id, articles: 4 });
});

Deno.test("admin `articles import --url` fetches a feed, refusing loopback unless --allow-private", async () => {
  await using w = await searchWorld();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) =>
      new URL(req.url).pathname === "/old"
        ? Response.redirect(new URL("/feed.xml", req.url), 302)
        : new Response(RSS, { headers: { "content-type": "application/rss+xml" } }),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}/old`;
    await assert.rejects(
      runAdmin(w.deps, ["articles", "import", "--data-model", w.dm.id, "--url", url]),
      /cannot read .*blocked address/,
    );
    const ok = await runAdmin(w.deps, [
      "articles",
      "import",
      "--data-model",
      w.dm.id,
      "--url",
      url,
      "--allow-private",
    ]) as { created: number };
    assert.equal(ok.created, 1);
  } finally {
    await server.shutdown();
  }
});
