import assert from "node:assert/strict";
import { engineOf } from "../_helpers.ts";
import { inlineSourceParser } from "../../core/sources/parser.ts";
import { search } from "../search/_world.ts";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";
import { SourceRepo } from "../../core/sources/source.ts";

const titles = (r: { json: { response: { results: { title: string }[] } } }) =>
  r.json.response.results.map((x) => x.title);

Deno.test("poller: a new feed item is searchable within one interval, unchanged items cost no update", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  let items = [{ link: feed.url("/a/1"), title: "Harbour bridge reopens", content: LONG("bridge") }];
  feed.route("/feed.xml", () => xml(rss(items)));
  const added = await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  assert.equal(added.status, 201, JSON.stringify(added.json));
  const p = w.poller();

  const first = await p.tick();
  assert.equal(first.length, 1);
  assert.equal(first[0]!.status, "ok");
  assert.equal(first[0]!.itemsNew, 1);
  assert.deepEqual(titles(await search(w, { query: "harbour bridge" })).slice(0, 1), ["Harbour bridge reopens"]);

  // Not due yet: nothing fetched.
  w.clock.advance(299_000);
  assert.deepEqual(await p.tick(), []);

  items = [...items, {
    link: feed.url("/a/2?utm_source=rss"),
    title: "Glacier retreat measured",
    content: LONG("ice"),
  }];
  w.clock.advance(1_000);
  const second = await p.tick();
  assert.equal(second[0]!.itemsNew, 1);
  assert.equal(second[0]!.itemsUpdated, 0, "the unchanged item is not rewritten");
  const found = await search(w, { query: "glacier retreat" });
  assert.equal(titles(found)[0], "Glacier retreat measured");
  assert.equal(found.json.response.results[0].url, feed.url("/a/2"), "tracking parameters are dropped");

  const listed = (await (await w.api("/sources")).json()).data[0];
  assert.equal(listed.items_added, 2);
  assert.equal(listed.last_status, "ok");
  assert.equal(listed.last_polled_at, w.clock.now().toISOString());
  assert.equal(listed.next_poll_at, new Date(w.clock.now().getTime() + 300_000).toISOString());
  // One log line per poll with status, counts and duration.
  const lines = w.log.lines.filter((l) => l.msg === "source polled");
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.items_new, 1);
  assert.equal(typeof lines[1]!.ms, "number");
});

Deno.test("poller: a 304 sends the validators back and costs no parse", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/feed.xml", (req) => {
    if (req.headers.get("if-none-match") === '"v1"') {
      return new Response(null, { status: 304, headers: { etag: '"v1"' } });
    }
    return xml(rss([{ link: feed.url("/a/1"), title: "Tram line extended", content: LONG("tram") }]), {
      etag: '"v1"',
      "last-modified": "Sat, 21 Nov 2026 10:00:00 GMT",
    });
  });
  await w.addSource({ type: "rss", url: feed.url("/feed.xml") });
  let parses = 0;
  const p = w.poller({
    parser: {
      ...inlineSourceParser,
      document: (...args: Parameters<typeof inlineSourceParser.document>) => {
        parses++;
        return inlineSourceParser.document(...args);
      },
    },
  });
  assert.equal((await p.tick())[0]!.status, "ok");
  assert.equal(parses, 1);
  w.clock.advance(300_000);
  const second = await p.tick();
  assert.equal(second[0]!.status, "not_modified");
  assert.equal(second[0]!.httpStatus, 304);
  assert.equal(parses, 1, "a 304 is not parsed");
  const last = feed.seen.filter((s) => s.path === "/feed.xml").at(-1)!;
  assert.equal(last.headers.get("if-none-match"), '"v1"');
  assert.equal(last.headers.get("if-modified-since"), "Sat, 21 Nov 2026 10:00:00 GMT");
  const src = (await (await w.api("/sources")).json()).data[0];
  assert.equal(src.etag, '"v1"');
  assert.equal(src.last_modified, "Sat, 21 Nov 2026 10:00:00 GMT");
  assert.equal(src.last_status, "not_modified");
});

Deno.test("poller: an ETag a hostile server makes huge is dropped, so the state saves and the interval holds", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  let hostile = false;
  // An ETag just under the response-header cap: stored, it would take the source's state past KV's
  // 64 KiB value limit, the state would never save, and the source would stay due at every tick.
  feed.route(
    "/feed.xml",
    () =>
      xml(rss([{ link: feed.url("/a/1"), title: "Ferry timetable changes", content: LONG("ferry") }]), {
        ...(hostile ? { etag: `"${"e".repeat(65_350)}"` } : {}),
        "last-modified": "Sat, 21 Nov 2026 10:00:00 GMT",
      }),
  );
  const added = await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  assert.equal(added.status, 201, JSON.stringify(added.json));
  hostile = true;
  const p = w.poller();
  assert.equal((await p.tick())[0]?.status, "ok");
  const src = (await (await w.api("/sources")).json()).data[0];
  assert.equal(src.last_status, "ok");
  assert.equal(src.next_poll_at, new Date(w.clock.now().getTime() + 300_000).toISOString());
  assert.equal(src.etag, null);
  assert.equal(src.last_modified, "Sat, 21 Nov 2026 10:00:00 GMT");
  assert.deepEqual(await p.tick(), [], "not due again before its interval");
  w.clock.advance(300_000);
  await p.tick();
  const last = feed.seen.filter((s) => s.path === "/feed.xml").at(-1)!;
  assert.equal(last.headers.get("if-none-match"), null);
  assert.equal(last.headers.get("if-modified-since"), "Sat, 21 Nov 2026 10:00:00 GMT");
});

Deno.test("poller: 500s back off exponentially with jitter, Retry-After is honoured, a 200 recovers", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  let mode: "ok" | "fail" | "busy" = "ok";
  feed.route(
    "/feed.xml",
    () =>
      mode === "fail"
        ? new Response("boom", { status: 500 })
        : mode === "busy"
        ? new Response("later", { status: 503, headers: { "retry-after": "7200" } })
        : xml(rss([{ link: feed.url("/a/1"), title: "Ferry timetable", content: LONG("ferry") }])),
  );
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 600 });
  mode = "fail";
  const p = w.poller({ random: () => 0.5 });
  const waits: number[] = [];
  for (let i = 0; i < 3; i++) {
    const [o] = await p.tick();
    assert.equal(o!.status, "error");
    assert.equal(o!.httpStatus, 500);
    const st = (await w.repo.state((await w.repo.list(w.dm.id))[0]!.id)).value!;
    assert.equal(st.failures, i + 1);
    assert.equal(st.lastError, "URL answered with status 500");
    const wait = Date.parse(st.nextPollAt) - w.clock.now().getTime();
    waits.push(wait);
    w.clock.advance(wait);
  }
  // interval x 2^(n-1), equal jitter at 0.5: 0.75 x 600 s, 0.75 x 1200 s, 0.75 x 2400 s.
  assert.deepEqual(waits, [450_000, 900_000, 1_800_000]);
  // /readyz stays ready while a source fails.
  assert.equal((await w.app.request("/readyz")).status, 200);

  mode = "busy";
  await p.tick();
  const busy = (await w.repo.state((await w.repo.list(w.dm.id))[0]!.id)).value!;
  assert.equal(Date.parse(busy.nextPollAt) - w.clock.now().getTime(), 3600_000, "Retry-After wins, up to the cap");
  w.clock.advance(3600_000);

  mode = "ok";
  const [ok] = await p.tick();
  assert.equal(ok!.status, "ok");
  const src = (await (await w.api("/sources")).json()).data[0];
  assert.equal(src.consecutive_failures, 0);
  assert.equal(src.last_ok_at, w.clock.now().toISOString());
  assert.equal(src.next_poll_at, new Date(w.clock.now().getTime() + 600_000).toISOString());
  assert.equal(src.items_added, 1);
});

Deno.test("poller: two processes on one KV poll a source once per interval, and a dead holder is taken over", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/feed.xml", () => xml(rss([{ link: feed.url("/a/1"), title: "Budget vote", content: LONG("budget") }])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), interval_s: 300 });
  const a = w.poller({ owner: "process-a" });
  const b = w.poller({ owner: "process-b" });
  for (let round = 0; round < 4; round++) {
    const [ra, rb] = await Promise.all([a.tick(), b.tick()]);
    assert.equal(ra.length + rb.length, 1, `round ${round}: exactly one poll`);
    // Twice more inside the interval: nobody polls.
    assert.equal((await Promise.all([a.tick(), b.tick()])).flat().length, 0);
    w.clock.advance(300_000);
  }
  assert.equal(feed.hits("/feed.xml"), 4 + 1, "four polls plus the registration check");

  // Process A dies holding the lease (mid-poll): B waits for at most one lease, then polls.
  const source = (await w.repo.list(w.dm.id))[0]!;
  await w.deps.kv.set(["source_lease", source.id], { owner: "process-a", until: w.clock.now().getTime() + 30_000 });
  assert.equal((await b.tick()).length, 0);
  w.clock.advance(30_000);
  assert.equal((await b.tick()).length, 1);
});

Deno.test("poller: an item edited in the feed updates its article", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  let title = "Council approves stadium plan";
  feed.route("/feed.xml", () => xml(rss([{ link: feed.url("/a/9"), title, content: LONG("stadium") }])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml") });
  const p = w.poller();
  await p.tick();
  const before = await w.deps.search.articleByUrl(w.dm.id, feed.url("/a/9"));
  title = "Council rejects stadium plan after recount";
  w.clock.advance(300_000);
  const [o] = await p.tick();
  assert.equal(o!.itemsUpdated, 1);
  assert.equal(o!.itemsNew, 0);
  const after = await w.deps.search.articleByUrl(w.dm.id, feed.url("/a/9"));
  assert.equal(after!.id, before!.id);
  assert.equal(after!.title, title);
  assert.equal(titles(await search(w, { query: "stadium recount" }))[0], title);
  assert.equal(await w.deps.search.count(w.dm.id), 1);
});

Deno.test("poller: summary-only items fetch their page (bounded) and dedupe by <link rel=canonical>", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const page = (canonical: string) =>
    new Response(
      `<!doctype html><html><head><title>Lighthouse restored</title><link rel="canonical" href="${canonical}"></head>
       <body><article><h1>Lighthouse restored</h1><p>${LONG("lighthouse")}</p><p>${
        LONG("keeper")
      }</p></article></body></html>`,
      { headers: { "content-type": "text/html; charset=utf-8" } },
    );
  feed.route("/story", () => page(feed.url("/story")));
  feed.route("/amp/story", () => page(feed.url("/story")));
  feed.route("/feed.xml", () =>
    xml(rss([
      { link: feed.url("/story?fbclid=abc"), title: "Lighthouse restored", description: "Short teaser." },
      { link: feed.url("/amp/story"), title: "Lighthouse restored", description: "Short teaser." },
      ...Array.from(
        { length: 8 },
        (_, i) => ({ link: feed.url(`/missing/${i}`), title: `Teaser ${i}`, description: "x" }),
      ),
    ])));
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), fetch_pages: true });
  const [o] = await w.poller().tick();
  assert.equal(o!.pagesFetched, 5, "page fetches are bounded per poll");
  const story = await w.deps.search.articleByUrl(w.dm.id, feed.url("/story"));
  assert.ok(story, "stored under its canonical URL");
  assert.match(story!.body, /lighthouse report, part 1/);
  assert.equal(await w.deps.search.articleByUrl(w.dm.id, feed.url("/amp/story")), null);
  // The AMP copy and the tagged link are one article.
  const stored = [];
  for await (const a of engineOf(w.deps).articles.list(w.dm.id)) stored.push(a.url);
  assert.equal(stored.filter((u) => u.includes("story")).length, 1);
});

Deno.test("poller: a poll that loses its lease to another process stops: no more page fetches, no state, no ingest", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const page = (n: number) =>
    new Response(
      `<!doctype html><html><head><title>Story ${n}</title></head><body><article><h1>Story ${n}</h1><p>${
        LONG(`story ${n}`)
      }</p></article></body></html>`,
      { headers: { "content-type": "text/html; charset=utf-8" } },
    );
  feed.route(
    "/feed.xml",
    () => xml(rss([1, 2, 3].map((n) => ({ link: feed.url(`/p/${n}`), title: `Story ${n}`, description: "Teaser." })))),
  );
  const added = await w.addSource({ type: "rss", url: feed.url("/feed.xml"), fetch_pages: true });
  const sourceId = added.json.id as string;
  const before = await (await w.api(`/sources/${sourceId}`)).json();
  // While the first page is read, another process takes the source's lease over (this poll has
  // outlived it, as a poll stalled past its lease would).
  feed.route("/p/1", async () => {
    await w.deps.kv.set(["source_lease", sourceId], {
      owner: "another-process",
      until: w.clock.now().getTime() + 60_000,
    });
    return page(1);
  });
  feed.route("/p/2", () => page(2));
  feed.route("/p/3", () => page(3));
  assert.deepEqual(await w.poller().tick(), []);
  assert.deepEqual([feed.hits("/p/1"), feed.hits("/p/2"), feed.hits("/p/3")], [1, 0, 0]);
  const after = await (await w.api(`/sources/${sourceId}`)).json();
  assert.deepEqual(
    [after.last_polled_at, after.next_poll_at, after.last_status],
    [before.last_polled_at, before.next_poll_at, before.last_status],
  );
  assert.equal(await w.deps.search.count(w.dm.id), 0);
  assert.deepEqual(
    w.log.lines.filter((l) => String(l.msg).startsWith("source poll stopped")).map((l) => l.source_id),
    [sourceId],
  );
});

Deno.test("poller: a source another process removed during a round is not fetched, ingested or given a state", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  const other = new SourceRepo(w.deps.kv, w.clock); // another process over the same KV
  let polling = false;
  feed.route("/first.xml", async () => {
    // While this process polls the first source, another process removes the second one.
    const second = (await w.repo.list(w.dm.id)).find((s) => s.url.endsWith("/second.xml"));
    if (polling && second) assert.equal(await other.remove(second), true);
    return xml(rss([{ link: feed.url("/a/1"), title: "Harbour bridge reopens", content: LONG("bridge") }]));
  });
  feed.route(
    "/second.xml",
    () => xml(rss([{ link: feed.url("/b/1"), title: "Removed feed item", content: LONG("x") }])),
  );
  assert.equal((await w.addSource({ type: "rss", url: feed.url("/first.xml") })).status, 201);
  w.clock.advance(1);
  assert.equal((await w.addSource({ type: "rss", url: feed.url("/second.xml") })).status, 201);

  const fetchedAtAdd = feed.hits("/second.xml");
  polling = true;
  const outcomes = await w.poller().tick();
  assert.deepEqual(outcomes.map((o) => o.status), ["ok"], "only the first source is polled");
  assert.equal(feed.hits("/second.xml"), fetchedAtAdd, "the removed source is not fetched");
  assert.deepEqual(
    titles(await search(w, { query: "removed feed item" })).filter((t) => t === "Removed feed item"),
    [],
  );
  assert.equal((await w.repo.listAll()).length, 1);
});
